"""Per tool call cost of the MCP adapter, against the same tool unguarded in the same run.

One MCP server holds two tools with the same body: ``plain_send`` (a bare tool, called
with ``client.call_tool``) and ``guarded_send`` (``CausalTools`` with the send guard,
called with ``causal_guards.mcp.call_tool``: the client sends a token, the server
receives it, decides the guard, runs the tool and replies with a token the client
receives).  The approval is given once up front, so the guard holds on every call.
A third candidate takes the same five cpl.live events with no MCP at all: the part of
the cost the adapter cannot save.  Candidates alternate in rounds (a burst of noise
hits all); each round times a batch of calls per candidate; the medians over rounds
and the ratio guarded / unguarded are printed.  In-process (``Client(server)``) times
are CPU seconds of this process, which runs client and server; over stdio (the server
in its own process) they are wall-clock seconds.

    PYTHONPATH=. python bench/embed_mcp.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time

from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer

from causal_guards.mcp import CausalTools, call_tool
from cpl.live import System

SECRET = b"the bench's secret, 32 bytes...."
ARGS = {"to": "board@example.org", "draft": "d1"}


def mail_system(secret: bytes | None) -> System:
    return System(["Drafter", "Approver", "Mailer"],
                  {"send": ("Mailer", "@Approver(approved == true) && @Approver.draft == draft")},
                  variables=["approved", "draft"], secret=secret)


def bench_server(mailer) -> MCPServer:
    server = MCPServer("bench")

    async def send(to: str, draft: str) -> str:  # async: no worker thread's noise in either
        return f"sent {draft} to {to}"

    server.tool(name="plain_send")(send)
    guarded = CausalTools(mailer).tool(guard="send", assign=("draft",))(send)
    server.tool(name="guarded_send")(guarded)
    return server


def approved_drafter(system: System, logs: str | None):
    drafter = system.agent("Drafter", log=logs)
    with system.agent("Approver", log=logs) as approver:
        approver.receive(drafter.send("Approver", "review"), draft="d1")
        approver.act("approve", approved=True)
        drafter.receive(approver.send("Drafter", "approved"))
    return drafter


def events_alone(system: System, logs: str | None):
    """The guarded call's cpl.live events, taken with no MCP in between."""
    drafter = approved_drafter(system, logs)
    mailer = system.agent("Mailer", log=logs)

    async def cycle():
        mailer.receive(drafter.send("Mailer", "guarded_send").text, draft="d1")
        assert mailer.decide("send")
        drafter.receive(mailer.send("Drafter", "guarded_send result").text)

    return cycle, (drafter, mailer)


async def rounds(client, drafter, cycle, calls: int, repeats: int, clock) -> dict[str, list[float]]:
    """Seconds per call of each candidate, one batch of ``calls`` per candidate per round."""
    candidates = {
        "unguarded": lambda: client.call_tool("plain_send", ARGS),
        "guarded": lambda: call_tool(client, drafter, "Mailer", "guarded_send", ARGS),
        "events alone": cycle,
    }

    async def batch(call):
        for _ in range(calls):
            result = await call()
            assert result is None or not result.is_error

    for call in candidates.values():
        await batch(call)  # warm every path
    runs: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, call in candidates.items():
            start = clock()
            await batch(call)
            runs[name].append((clock() - start) / calls)
    return runs


async def measure(calls: int, repeats: int, secret: bytes | None, logs: str | None,
                  stdio: bool) -> dict[str, list[float]]:
    system = mail_system(secret)

    def log(where):
        return None if logs is None else os.path.join(logs, where, "")

    cycle, agents = events_alone(system, log("alone"))
    with approved_drafter(system, log("client")) as drafter:
        if stdio:
            server = StdioServerParameters(command=sys.executable,
                                           args=[os.path.abspath(__file__), "--serve",
                                                 log("server")],
                                           env=dict(os.environ))
            async with Client(server) as client:
                runs = await rounds(client, drafter, cycle, calls, repeats, time.perf_counter)
        else:
            with system.agent("Mailer", log=log("server")) as mailer:
                async with Client(bench_server(mailer)) as client:
                    runs = await rounds(client, drafter, cycle, calls, repeats, time.process_time)
    for agent in agents:
        agent.close()
    return runs


def report(where: str, runs: dict[str, list[float]]) -> None:
    base, guarded, alone = (statistics.median(runs[k]) * 1e6
                            for k in ("unguarded", "guarded", "events alone"))
    print(f"{where:<30} unguarded {base:7.1f} µs   guarded {guarded:7.1f} µs   "
          f"+{guarded - base:6.1f} µs   ratio {guarded / base:.3f}   "
          f"cpl.live events alone {alone:5.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="few calls: a smoke run")
    parser.add_argument("--serve", metavar="LOGS", help=argparse.SUPPRESS)  # the stdio server
    args = parser.parse_args()
    if args.serve:
        with mail_system(SECRET).agent("Mailer", log=args.serve) as mailer:
            bench_server(mailer).run("stdio")
        return
    calls, repeats = (20, 3) if args.quick else (300, 9)
    print(f"MCP tool call: median per call of {repeats} rounds of {calls} calls per candidate")
    with tempfile.TemporaryDirectory() as logs:
        report("in-process, unsigned, no logs",
               asyncio.run(measure(calls, repeats, None, None, False)))
        report("in-process, signed, logged",
               asyncio.run(measure(calls, repeats, SECRET, logs, False)))
        report("stdio, signed, logged", asyncio.run(measure(calls, repeats, SECRET, logs, True)))


if __name__ == "__main__":
    main()
