"""What tests/test_live_log_full.py runs in a process of its own, under a real file size
limit (RLIMIT_FSIZE, SIGXFSZ ignored): an agent driven by hand, an HTTP service, an MCP
server, each logging the Deployer's events into a log that fills up.

    python tests/log_full_child.py agent LOGS   # prints a JSON summary
    python tests/log_full_child.py http LOGS    # prints PORT <n>, serves until stdin closes
    python tests/log_full_child.py mcp LOGS     # an MCP server over stdio (sets its limit)
"""

from __future__ import annotations

import json
import resource
import signal
import sys
from pathlib import Path

from cpl.live import LiveError, System

GUARD = "@Reviewer(approved == true) && @Reviewer.version == version && Y(true)"
MCP_LIMIT = 4 * 1024  # bytes of the MCP server's log


def release_system() -> System:
    return System(["Author", "Reviewer", "Deployer"], {"deploy": ("Deployer", GUARD)},
                  variables=["approved", "version", "deployed"])


def limit(size: int) -> None:
    """The file size limit of this process (its soft part: it may be raised again)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))


def room() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


# -- an agent by hand ------------------------------------------------------------------------

def state(agent) -> str:
    """Everything an event may change, as text to compare."""
    monitor = agent.monitor
    return repr((agent.taken, agent.sent, agent.last, sorted(agent.seen.items()),
                 sorted((k, f, sorted(a)) for k, (f, a) in agent._received.items()),
                 sorted(monitor.values.items()), sorted(monitor.store.items()),
                 list(monitor.views), list(monitor.varviews)))


def drive(deployer, author, reviewer, rounds, failed: list, tokens: list) -> list:
    """Each round: a review reaches the Author, whose token the Deployer receives, decides
    on, acts on and answers; what failed is noted with the state before and after."""
    done = []
    for k in rounds:
        if len(tokens) <= k:
            reviewer.act("approve", approved=True, version=f"v{k}")
            author.receive(reviewer.send("Author", "approved"))
            tokens.append(author.send("Deployer", "deploy"))
        # (B023: each step is called in this round, with this round's k)
        steps = [("recv", lambda: deployer.receive(tokens[k], version=f"v{k}")),  # noqa: B023
                 ("choice", lambda: deployer.decide("deploy")),
                 ("act", lambda: deployer.act("deploy", deployed=f"v{k}")),  # noqa: B023
                 ("send", lambda: deployer.send("Author", "deployed"))]
        for kind, step in steps:
            before = state(deployer)
            try:
                value = step()
            except Exception as error:  # noqa: BLE001 -- what main raised is the finding
                failed.append({"kind": kind, "round": k, "type": type(error).__name__,
                               "message": str(error), "unchanged": state(deployer) == before})
                continue
            done.append((kind, k, value if kind == "choice" else None))
    return done


def agent_run(logs: str) -> dict:
    system = release_system()
    author, reviewer = system.agent("Author"), system.agent("Reviewer")
    deployer = system.agent("Deployer", log=logs)
    failed: list = []
    tokens: list = []
    done = drive(deployer, author, reviewer, range(30), failed, tokens)
    room()
    retried = [f for f in failed if f["kind"] == "recv"][:1]
    retried_ok = None
    if retried:  # the token of a refused receive is not spent: it is received now
        try:
            deployer.receive(tokens[retried[0]["round"]], version=f"v{retried[0]['round']}")
            done.append(("recv", retried[0]["round"], None))
            retried_ok = True
        except Exception as error:  # noqa: BLE001
            retried_ok = f"{type(error).__name__}: {error}"
    after: list = []  # with room again, the agent goes on
    done += drive(deployer, author, reviewer, range(30, 33), after, tokens)
    deployer.close()
    # The same successful steps on a fresh agent with no log: the same state and decisions.
    fresh = system.agent("Deployer")
    replayed = []
    for kind, k, _ in done:
        if kind == "recv":
            fresh.receive(tokens[k], version=f"v{k}")
        elif kind == "choice":
            replayed.append(fresh.decide("deploy"))
        elif kind == "act":
            fresh.act("deploy", deployed=f"v{k}")
        else:
            fresh.send("Author", "deployed")
    return {"failed": failed, "retried": retried_ok, "failed_after": after, "taken": deployer.taken,
            "decisions": [value for kind, _, value in done if kind == "choice"],
            "replayed": replayed, "same_state": state(fresh) == state(deployer)}


# -- an HTTP service ---------------------------------------------------------------------------

def http_app(deployer):
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from causal_guards.http import CausalMiddleware, GuardedRoute

    async def deploy(request):
        deployer.act("deploy", deployed=request.query_params["version"])
        return JSONResponse({"deployed": request.query_params["version"]})

    guards = {"/deploy": GuardedRoute("deploy", query=["version"])}
    return Starlette(routes=[Route("/deploy", deploy, methods=["POST"])],
                     middleware=[Middleware(CausalMiddleware, agent=deployer, guards=guards)])


def serve_http(logs: str) -> int:
    """The Deployer served as the HTTP example serves it, until this process's input ends."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples/embedding/http"))
    from services import serve_until_input_closes

    deployer = release_system().agent("Deployer", log=logs)
    serve_until_input_closes(http_app(deployer))
    return closed(deployer)


def closed(deployer) -> int:
    try:
        deployer.close()
    except LiveError as error:  # LogFailed: no room for the end line (the log reads as cut)
        print(f"log_full_child.py: {error}", file=sys.stderr)
        return 1
    return 0


# -- an MCP server -----------------------------------------------------------------------------

def serve_mcp(logs: str) -> int:
    from mcp.server.mcpserver import MCPServer

    from causal_guards.mcp import CausalTools

    deployer = release_system().agent("Deployer", log=logs)
    limit(MCP_LIMIT)
    server = MCPServer("deployer")
    tools = CausalTools(deployer)

    @server.tool()
    @tools.tool(guard="deploy", assign=("version",))
    def deploy(version: str) -> str:
        """Deploy ``version``; runs only once that version is approved."""
        deployer.act("deploy", deployed=version)
        return f"deployed {version}"

    @server.tool()
    def make_room() -> str:
        """Lift this process's file size limit (the test's way to free the disk)."""
        room()
        return "room"

    server.run("stdio")
    return closed(deployer)


if __name__ == "__main__":
    role, logs = sys.argv[1], sys.argv[2]
    if role == "agent":
        print(json.dumps(agent_run(logs)))
    else:
        sys.exit({"http": serve_http, "mcp": serve_mcp}[role](logs))
