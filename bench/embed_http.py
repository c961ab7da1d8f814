"""Per-request overhead of the HTTP adapter, against the same app unguarded in the same run.

Three uvicorn servers on 127.0.0.1 (one process each) serve the same Starlette route
``POST /deploy?version=v2``: *plain* (no middleware, a plain httpx client), *guarded* (the
middleware decides the deploy guard, which holds, and the client's hooks carry tokens both
ways; no logs) and *guarded+logs* (the same, both agents recording). One keep-alive client
per server; rounds interleave the servers; each round times N requests one by one. Prints
the median over rounds of each round's p50 and p90 latency and of the CPU per request
(client and server process together: what load on a shared machine cannot inflate as
much), and each one's ratio to *plain*.

    python bench/embed_http.py [--requests N] [--rounds R] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from causal_guards.http import CausalMiddleware, GuardedRoute, causal_hooks
from cpl.live import System

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "embedding" / "http"))
from services import serve_until_input_closes, start_services  # noqa: E402  (the example's)

SECRET_VARIABLE = "CPL_BENCH_SECRET"
KINDS = ("plain", "guarded", "guarded+logs")


def bench_system() -> System:
    return System(["Author", "Reviewer", "Deployer"],
                  {"deploy": ("Deployer",
                              "@Reviewer(approved == true) && @Reviewer.version == version")},
                  variables=["approved", "version"],
                  secret=bytes.fromhex(os.environ[SECRET_VARIABLE]))


def app(kind: str, logs: str) -> Starlette:
    async def deploy(request: Request) -> JSONResponse:
        return JSONResponse({"deployed": request.query_params["version"]})

    routes = [Route("/deploy", deploy, methods=["POST"])]
    if kind == "plain":
        return Starlette(routes=routes)
    agent = bench_system().agent("Deployer", log=logs if kind == "guarded+logs" else None)
    guards = {"/deploy": GuardedRoute("deploy", query=["version"])}
    middleware = [Middleware(CausalMiddleware, agent=agent, guards=guards)]
    return Starlette(routes=routes, middleware=middleware)


def client(kind: str, base: str, logs: str) -> httpx.Client:
    if kind == "plain":
        return httpx.Client()
    system = bench_system()
    author = system.agent("Author", log=logs if kind == "guarded+logs" else None)
    reviewer = system.agent("Reviewer")  # in this process: its approval reaches the Author
    reviewer.act(approved=True, version="v2")
    author.receive(reviewer.send("Author", "approved"))
    return httpx.Client(event_hooks=causal_hooks(author, {base: "Deployer"}))


def latencies(session: httpx.Client, url: str, count: int) -> list[float]:
    """Seconds per request, each timed alone (the 200 is checked, outside the timing)."""
    seconds = []
    for _ in range(count):
        started = time.perf_counter()
        response = session.post(url)
        seconds.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"{url}: {response.status_code} {response.text}")
    return seconds


def cpu_seconds(process: subprocess.Popen) -> float:
    """User + system CPU a server process has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="200 requests, 3 rounds")
    parser.add_argument("--serve", choices=KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--logs", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve:
        serve_until_input_closes(app(arguments.serve, arguments.logs))
        return
    count, rounds = (200, 3) if arguments.quick else (arguments.requests, arguments.rounds)
    os.environ[SECRET_VARIABLE] = os.urandom(32).hex()
    with tempfile.TemporaryDirectory() as logs, ExitStack() as stack:
        servers = dict(zip(KINDS, start_services(
            [[sys.executable, __file__, "--serve", kind, "--logs", str(Path(logs) / "server")]
             for kind in KINDS], stack)))
        sessions = {kind: client(kind, base, str(Path(logs) / "client"))
                    for kind, (_, base) in servers.items()}
        urls = {kind: f"{base}/deploy?version=v2" for kind, (_, base) in servers.items()}
        for kind in KINDS:
            latencies(sessions[kind], urls[kind], max(100, count // 10))  # warm up
        p50, p90, cpu = ({kind: [] for kind in KINDS} for _ in range(3))
        for round_number in range(rounds):
            order = KINDS[round_number % 3:] + KINDS[:round_number % 3]
            for kind in order:
                server = servers[kind][0]
                client_cpu, server_cpu = time.process_time(), cpu_seconds(server)
                seconds = latencies(sessions[kind], urls[kind], count)
                used = time.process_time() - client_cpu + cpu_seconds(server) - server_cpu
                p50[kind].append(percentile(seconds, 0.5))
                p90[kind].append(percentile(seconds, 0.9))
                cpu[kind].append(used / count)
    print(f"{count} requests x {rounds} rounds per server, medians over rounds "
          f"(uvicorn + Starlette on 127.0.0.1, httpx keep-alive client)")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    plain = {name: statistics.median(values["plain"]) for name, values in
             (("p50", p50), ("p90", p90), ("cpu", cpu))}
    for kind in KINDS:
        cells = []
        for name, values in (("p50", p50), ("p90", p90), ("cpu", cpu)):
            value = statistics.median(values[kind])
            cells.append(f"{name} {value * 1e6:6.0f} us ({value / plain[name]:.3f}x plain)")
        print(f"{kind:>13}: " + "  ".join(cells))
    print("cpu: client + server CPU per request, both processes")


if __name__ == "__main__":
    main()
