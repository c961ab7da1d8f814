"""A log that cannot take an event (a real file size limit, RLIMIT_FSIZE, in a process of
its own): the agent refuses the event whole (``LogFailed``, nothing counted, the monitor as
it was, no torn line) and goes on once the log has room; the HTTP adapter answers 503 and
the MCP adapter an error result, never a 500, a reset or a traceback, and the service keeps
running.  Also: refused requests are counted in the log without growing it per request."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from causal_guards.http import CausalMiddleware, causal_hooks
from cpl.live import System
from log_full_child import MCP_LIMIT, http_app, release_system

ROOT = Path(__file__).resolve().parents[1]
CHILD = Path(__file__).resolve().parent / "log_full_child.py"


def limited(size: int):
    """A ``preexec_fn``: the child's file size limit, SIGXFSZ ignored (an error, not death)."""
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
    return limit


def log_lines(path: Path) -> list[dict]:
    """Every line of a log, each whole JSON (a torn line fails here)."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def events_of(path: Path) -> list[dict]:
    return [line for line in log_lines(path) if "kind" in line]


def cpl(*args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpl_cli", *map(str, args)],
                          capture_output=True, text=True, timeout=60, cwd=cwd)


# -- the agent ----------------------------------------------------------------------------------

def test_an_event_the_log_cannot_take_is_refused_whole_and_the_agent_goes_on(tmp_path):
    ran = subprocess.run([sys.executable, str(CHILD), "agent", str(tmp_path)],
                         capture_output=True, text=True, timeout=60, preexec_fn=limited(4096))
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)
    failed = summary["failed"]
    assert {f["kind"] for f in failed} == {"recv", "choice", "act", "send"}  # every kind met it
    for failure in failed:
        assert failure["type"] == "LogFailed", failure
        assert "File too large" in failure["message"], failure
        assert failure["unchanged"], failure  # no count, clock, view, value or replay window
    assert summary["retried"] is True  # the refused receive's token was not spent
    assert summary["failed_after"] == []  # with room again, every event is taken
    assert summary["decisions"] == summary["replayed"] and summary["same_state"]
    lines = log_lines(tmp_path / "Deployer.jsonl")  # whole lines only
    events = [line for line in lines if "kind" in line]
    assert [e["id"] for e in events] == [f"Deployer.{k}" for k in range(1, summary["taken"] + 1)]
    assert lines[-1] == {"end": {"events": summary["taken"]}}


# -- the HTTP adapter -----------------------------------------------------------------------------

REQUESTS, CLIENTS = 120, 8


def test_a_full_log_makes_http_503s_and_the_service_goes_on(tmp_path):
    logs = service_logs = tmp_path / "logs"
    logs.mkdir()
    service = subprocess.Popen([sys.executable, str(CHILD), "http", str(service_logs)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=limited(8 * 1024))
    ended: dict = {}  # its output once its input closed (it stops then, closing its log)
    with ExitStack() as stack:
        stack.callback(lambda: ended.update(zip(("out", "err"), service.communicate(timeout=20))))
        line = service.stdout.readline()
        assert line.startswith("PORT "), service.stderr.read()
        url = f"http://127.0.0.1:{int(line.split()[1])}"
        system = release_system()
        author = system.agent("Author", log=logs)
        reviewer = system.agent("Reviewer", log=logs)
        stack.enter_context(author), stack.enter_context(reviewer)
        causal = stack.enter_context(httpx.Client(
            event_hooks=causal_hooks(author, {url: "Deployer"}), timeout=10))
        plain = stack.enter_context(httpx.Client(timeout=10))  # no token: refused, counted

        def request(k: int) -> tuple[int, dict]:
            version = f"v{k}" if k % 3 else "never reviewed"
            if k % 3:
                reviewer.act("approve", approved=True, version=version)
                author.receive(reviewer.send("Author", "approved"))
            client = causal if k % 5 else plain
            response = client.post(f"{url}/deploy", params={"version": version})
            return response.status_code, response.json()

        started = time.monotonic()
        with ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(pool.map(request, range(REQUESTS)))
        statuses = Counter(status for status, _ in answers)
        assert set(statuses) <= {200, 401, 403, 503}, statuses  # no 500; no reset (it raises)
        assert statuses[503] > REQUESTS / 2 and statuses[200] > 0, statuses
        for status, body in answers:
            if status == 503:
                assert body["error"] == "log unwritable" and body["reason"] == "log", body
                assert "File too large" in body["detail"], body
        assert service.poll() is None  # still serving
        resource.prlimit(service.pid, resource.RLIMIT_FSIZE,
                         (resource.RLIM_INFINITY, resource.RLIM_INFINITY))  # room again
        after = Counter(request(k)[0] for k in range(REQUESTS, REQUESTS + 30))
        assert 503 not in after and after[200] > 0, after
        assert time.monotonic() - started < 60
    errors = ended["err"]
    assert service.returncode == 0, errors
    assert "Traceback" not in errors, errors
    deployer = events_of(service_logs / "Deployer.jsonl")
    assert not any("log" in str(e.get("label")) for e in deployer if e["kind"] == "act")
    merged = cpl("merge", logs, "-o", tmp_path / "t.jsonl", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    checked = cpl("eval", tmp_path / "t.jsonl", cwd=tmp_path)
    assert checked.returncode == 0 and "all agree" in checked.stdout, checked.stderr


# -- the MCP adapter ------------------------------------------------------------------------------

CALLS = 20


def test_a_full_log_makes_mcp_error_results_and_the_server_goes_on(tmp_path):
    pytest.importorskip("mcp", reason="mcp is not installed (pip install 'causal-guards[mcp]')")
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from causal_guards.mcp import call_tool

    system = release_system()
    author, reviewer = system.agent("Author"), system.agent("Reviewer")
    errors = tmp_path / "server.err"
    server = StdioServerParameters(command=sys.executable,
                                   args=[str(CHILD), "mcp", str(tmp_path)],
                                   env={**os.environ}, cwd=str(ROOT))

    async def calls():
        results = []
        with open(errors, "w") as stderr:
            async with stdio_client(server, errlog=stderr) as (read, write), \
                    ClientSession(read, write) as client:
                await client.initialize()
                for k in range(CALLS):
                    reviewer.act("approve", approved=True, version=f"v{k}")
                    author.receive(reviewer.send("Author", "approved"))
                    results.append(await call_tool(client, author, "Deployer", "deploy",
                                                   {"version": f"v{k}"}))
                await client.call_tool("make_room", {})
                last = f"v{CALLS - 1}"
                after = await call_tool(client, author, "Deployer", "deploy", {"version": last})
        return results, after

    results, after = asyncio.run(asyncio.wait_for(calls(), 60))
    texts = [result.content[0].text for result in results]
    unlogged = [text for text in texts if "log cannot take" in text]
    assert unlogged and all(result.is_error for result in results[-5:])
    assert all("File too large" in text and text.startswith("deploy refused: ")
               for text in unlogged), unlogged[:1]
    assert not after.is_error and after.content[0].text == f"deployed v{CALLS - 1}"
    assert "Traceback" not in errors.read_text(), errors.read_text()
    log = tmp_path / "Deployer.jsonl"
    events = events_of(log)
    assert [e["id"] for e in events] == [f"Deployer.{k}" for k in range(1, len(events) + 1)]
    assert not any("log" in str(e.get("label")) for e in events if e["kind"] == "act")
    assert os.path.getsize(log) > MCP_LIMIT  # the room made was used


# -- refusals counted, not one act each -----------------------------------------------------------

def test_refusals_are_one_act_per_reason_per_window_and_the_counts_add_up():
    from cpl.live import refusals_of
    from cpl.live.refusals import Refusals, refusal_label

    now = [0.0]
    refusals = Refusals(window=1.0, clock=lambda: now[0])
    recorded = []
    for tick in range(30):  # 3 seconds, 10 refusals a second, two reasons
        now[0] = tick / 10
        recorded += refusals.note("missing" if tick % 3 else "forged")
    recorded += refusals.pending()
    labels = [refusal_label(reason, count) for reason, count in recorded]
    assert len(labels) <= 2 * 2 * 3  # two reasons, two acts each per second at most
    totals = Counter()
    for label in labels:
        reason, count = refusals_of(label)
        totals[reason] += count
    assert totals == Counter({"missing": 20, "forged": 10})
    assert labels[:2] == ["refused: forged", "refused: missing"]  # each first one at once
    assert refusals_of("refused: missing (7 times)") == ("missing", 7)
    assert refusals_of("deploy") is None


def test_a_thousand_refused_requests_grow_the_log_by_a_bounded_amount(tmp_path):
    from cpl.live import refusals_of

    deployer = release_system().agent("Deployer", log=tmp_path)
    app = CausalMiddleware(http_app(deployer).router, agent=deployer,
                           guards={"/deploy": "deploy"})
    log = tmp_path / "Deployer.jsonl"
    before = os.path.getsize(log)

    async def refused(headers) -> int:
        answers = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            answers.append(message)
        scope = {"type": "http", "method": "POST", "path": "/deploy", "headers": headers,
                 "query_string": b"version=v1"}
        await app(scope, receive, send)
        return answers[0]["status"]

    async def many():
        statuses = Counter()
        for k in range(1000):
            statuses[await refused([] if k % 2 else [(b"cpl-token", b"garbage")])] += 1
        return statuses

    started = time.monotonic()
    statuses = asyncio.run(many())
    seconds = time.monotonic() - started
    assert statuses == Counter({401: 500, 400: 500})
    grown = os.path.getsize(log) - before
    lines = 2 * 2 * (int(seconds) + 1)  # two reasons, at most two acts each per second
    assert grown <= lines * 200 and len(events_of(log)) <= lines, (grown, seconds)
    deployer.close()
    totals = Counter()
    for event in events_of(log):
        reason, count = refusals_of(event["label"])
        totals[reason] += count
    assert totals == Counter({"missing": 500, "malformed": 500})


def test_a_step_that_raises_leaves_no_line_in_the_log(tmp_path):
    """The line is written before the monitor steps: a user predicate that raises takes
    it back, so the log never holds an event the agent did not count (nor an id twice)."""
    from cpl.errors import EvaluationError
    from cpl.lang import DEFAULT

    registry = DEFAULT.child()
    registry.register("picky", lambda x: 1 / (x != "boom") > 0, 1)
    system = System(["A", "B"], {"g": ("A", "picky(x)")}, ["x"], predicates=registry)
    agent = system.agent("A", log=tmp_path)
    agent.act(x="fine")
    with pytest.raises(EvaluationError):
        agent.act(x="boom")
    agent.act(x="fine again")
    agent.close()
    events = events_of(tmp_path / "A.jsonl")
    assert [(e["id"], e["set"]["x"]) for e in events] == [("A.1", "fine"), ("A.2", "fine again")]


def test_an_app_or_tool_whose_own_event_finds_no_room_is_a_503_or_an_error_result(tmp_path):
    """The app's (the tool's) own ``act`` raising ``LogFailed`` before it answers: the
    adapter answers for it, by name, as for its own events."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from cpl.live import LogFailed

    def full(*_):
        raise LogFailed("Deployer", "logs/Deployer.jsonl", "No space left on device")

    system = release_system()
    deployer, author = system.agent("Deployer"), system.agent("Author")
    app = Starlette(routes=[Route("/status", full)],
                    middleware=[Middleware(CausalMiddleware, agent=deployer)])
    with TestClient(app, raise_server_exceptions=False) as client:
        plain = client.get("/status")
        tokened = client.get("/status", headers={"cpl-token": author.send("Deployer").text})
    for response in (plain, tokened):
        assert response.status_code == 503 and response.json()["reason"] == "log"
        assert "No space left on device" in response.json()["detail"]
        assert "cpl-token" not in response.headers

    pytest.importorskip("mcp", reason="mcp is not installed (pip install 'causal-guards[mcp]')")
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from causal_guards.mcp import CausalTools, call_tool

    server, tools = MCPServer("deployer"), CausalTools(deployer)

    @server.tool()
    @tools.tool()
    def deploy(version: str) -> str:
        """Deploy, or find the log full."""
        full()

    async def call():
        async with Client(server) as client:
            return await call_tool(client, author, "Deployer", "deploy", {"version": "v1"})

    result = asyncio.run(asyncio.wait_for(call(), 20))
    assert result.is_error and "No space left on device" in result.content[0].text
    assert result.content[0].text.startswith("deploy refused: the server's log cannot take")


def test_a_monitor_put_back_after_a_choice_goes_on_as_if_it_never_took_it():
    """``Monitor.saved``/``restore`` (what ``decide`` undoes when the log is full): with
    Y, S and @B in the guard, the restored monitor and a twin that never took the choice
    agree at every later event."""
    from cpl.monitor import Monitor

    system = System(["A", "B"], {"g": ("A", "Y(x == 1) && (x != 0 S x == 1) && @B(y == 2)"),
                                 "h": ("B", "@A.x == 1")}, ["x", "y"])
    a, twin, b = (Monitor(system.program, name) for name in ("A", "A", "B"))
    for k in range(12):
        b.act({"y": k % 3})
        message = b.send()
        for monitor in (a, twin):
            monitor.receive(message, {"x": k % 2})
        saved = a.saved()
        a.choice()
        a.restore(saved)
        for monitor in (a, twin):
            monitor.act({"x": (k + 1) % 2})
        assert (a.values, a.store, a.views, a.varviews, a.send()) == \
            (twin.values, twin.store, twin.views, twin.varviews, twin.send()), k
