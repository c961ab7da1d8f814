"""The Reviewer and Deployer services: Starlette apps under uvicorn, one process each.

``python services.py reviewer|deployer --logs DIR`` binds 127.0.0.1 on a free port, prints
``PORT <n>`` and serves until its standard input closes (so it never outlives its parent),
or prints why it cannot start instead; :func:`start_services` is the parent's side of that.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import threading
from contextlib import ExitStack

import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from causal_guards.http import CausalMiddleware, GuardedRoute
from cpl.live import Agent, LogExists, LogFailed
from release import release_system


def reviewer_app(agent: Agent) -> Starlette:
    """``POST /review?version=V`` approves V: an act on the Reviewer that adds V to the
    versions it approved (a new list each time: a value once recorded never changes)."""
    approved: list[str] = []

    async def review(request: Request) -> JSONResponse:
        version = request.query_params.get("version", "")
        if version not in approved:
            approved.append(version)
        agent.act("approve", approved=list(approved))
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


def serve_until_input_closes(app) -> None:
    """Serve ``app`` on 127.0.0.1, a free port, printed as ``PORT <n>`` once it listens."""
    # proto given: asyncio sets TCP_NODELAY on accepted sockets only when it is IPPROTO_TCP
    # (without it every response waits ~40 ms for the client's delayed ACK)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen()  # before the port is printed: a client may connect at once
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                           access_log=False))

    def stop_at_end_of_input() -> None:
        sys.stdin.read()
        server.should_exit = True

    threading.Thread(target=stop_at_end_of_input, daemon=True).start()
    print(f"PORT {listener.getsockname()[1]}", flush=True)
    asyncio.run(server.serve(sockets=[listener]))


def start_services(commands: list[list[str]], stack: ExitStack
                   ) -> list[tuple[subprocess.Popen, str]]:
    """Start a process per command together; each with its base URL once it listens.
    ``stack`` stops them: their input closes, so each shuts down and closes its log."""
    processes = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True) for command in commands]
    stack.callback(stop_services, processes)
    lines = [process.stdout.readline() for process in processes]
    for line in lines:
        if not line.startswith("PORT "):  # the service's reason, or nothing if it crashed
            print(line.strip() or "a service did not start", file=sys.stderr)
            raise SystemExit(2)
    return [(process, f"http://127.0.0.1:{int(line.split()[1])}")
            for process, line in zip(processes, lines)]


def stop_services(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        process.stdin.close()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


APPS = {"reviewer": ("Reviewer", reviewer_app), "deployer": ("Deployer", deployer_app)}

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=sorted(APPS))
    parser.add_argument("--logs", required=True, help="folder of the agents' logs")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's log")
    arguments = parser.parse_args()
    lifeline, make_app = APPS[arguments.role]
    try:
        agent = release_system().agent(lifeline, log=arguments.logs,
                                       overwrite=arguments.overwrite)
    except LogExists as error:  # said on the line the parent reads for the port
        print(f"{parser.prog}: {error.path} exists already: give --overwrite to replace it")
        sys.exit(2)
    try:
        with agent:
            serve_until_input_closes(make_app(agent))
    except LogFailed as error:  # no room for the end line: cpl merge reads the log as cut
        print(f"{parser.prog}: {error}", file=sys.stderr)
        sys.exit(1)
