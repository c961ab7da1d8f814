"""The Reviewer and Deployer services: Starlette apps under uvicorn, one per process.

``python services.py reviewer|deployer --logs DIR`` binds 127.0.0.1 on a free port, prints
``PORT <n>`` and serves until its standard input closes (so it never outlives the run).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import threading

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from causal_guards.http import CausalMiddleware, GuardedRoute
from cpl.live import Agent
from release import release_system


def reviewer_app(agent: Agent) -> Starlette:
    """``POST /review?version=V`` approves V: the approval is an act on the Reviewer."""
    async def review(request: Request) -> JSONResponse:
        version = request.query_params.get("version", "")
        agent.act("approve", approved=True, version=version)
        return JSONResponse({"approved": version})

    return Starlette(routes=[Route("/review", review, methods=["POST"])],
                     middleware=[Middleware(CausalMiddleware, agent=agent)])


def deployer_app(agent: Agent) -> Starlette:
    """``POST /deploy?version=V`` runs only when the guard ``deploy`` holds for V."""
    async def deploy(request: Request) -> JSONResponse:
        version = request.query_params["version"]  # the middleware checked it is there
        agent.act("deploy", deployed=version)
        return JSONResponse({"deployed": version})

    guards = {"/deploy": GuardedRoute("deploy", query=["version"])}
    return Starlette(routes=[Route("/deploy", deploy, methods=["POST"])],
                     middleware=[Middleware(CausalMiddleware, agent=agent, guards=guards)])


APPS = {"reviewer": ("Reviewer", reviewer_app), "deployer": ("Deployer", deployer_app)}


def serve(role: str, logs: str) -> None:
    lifeline, make_app = APPS[role]
    # proto given: asyncio sets TCP_NODELAY on accepted sockets only when it is IPPROTO_TCP
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # before the port is printed: a client may connect at once
    with release_system().agent(lifeline, log=logs) as agent:
        server = uvicorn.Server(uvicorn.Config(make_app(agent), log_level="warning",
                                               lifespan="off"))

        def stop_at_end_of_input() -> None:
            sys.stdin.read()
            server.should_exit = True

        threading.Thread(target=stop_at_end_of_input, daemon=True).start()
        print(f"PORT {listener.getsockname()[1]}", flush=True)
        asyncio.run(server.serve(sockets=[listener]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=sorted(APPS))
    parser.add_argument("--logs", required=True, help="folder of the agents' logs")
    arguments = parser.parse_args()
    serve(arguments.role, arguments.logs)
