"""The MCP adapter against the real SDK: in-process ``Client(server)`` for the adapter's
behaviour and hostile tokens, and the stdio example end to end through ``cpl merge``
and ``cpl eval``."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
from collections import Counter

import pytest

pytest.importorskip("mcp", reason="mcp is not installed (pip install 'causal-guards[mcp]')")

from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent

from causal_guards.mcp import TOKEN_KEY, CausalTools, call_tool
from cpl.live import (MAX_TOKEN_TEXT, NotOwner, System, UndeclaredVariable, UnknownLabel,
                      refusals_of)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "embedding", "mcp", "run.py")
LIFELINES = ["Drafter", "Approver", "Mailer"]
GUARD = "@Approver(approved == true) && @Approver.draft == draft"
SECRET = b"a test secret of 32 bytes, fixed"
ARGS = {"to": "board@example.org", "draft": "d1"}


def mail_system(secret: bytes | None = SECRET, guard: str = GUARD) -> System:
    return System(LIFELINES, {"send": ("Mailer", guard)}, variables=["approved", "draft"],
                  secret=secret)


def mail_server(mailer) -> MCPServer:
    server = MCPServer("mailer")
    tools = CausalTools(mailer)

    @server.tool()
    @tools.tool(guard="send", assign=("draft",))
    async def send_email(to: str, draft: str) -> str:
        """Send a draft."""
        return f"sent {draft} to {to}"

    return server


def approve(drafter, approver) -> None:
    """The Approver approves draft d1 and tells the Drafter."""
    approver.receive(drafter.send("Approver", "review"), draft="d1")
    approver.act("approve", approved=True)
    drafter.receive(approver.send("Drafter", "approved"))


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content)


def events(path) -> list[dict]:
    with open(path) as log:
        lines = [json.loads(line) for line in log]
    return [line for line in lines if "kind" in line]


def run(coroutine):
    return asyncio.run(asyncio.wait_for(coroutine, 20))


def test_the_guard_refuses_until_the_approval_is_in_the_callers_past(tmp_path):
    system = mail_system()
    drafter, approver = system.agent("Drafter", log=tmp_path), system.agent("Approver")
    mailer = system.agent("Mailer", log=tmp_path)

    async def story():
        async with Client(mail_server(mailer)) as client:
            refused = await call_tool(client, drafter, "Mailer", "send_email", ARGS)
            approve(drafter, approver)
            sent = await call_tool(client, drafter, "Mailer", "send_email", ARGS)
            other = await call_tool(client, drafter, "Mailer", "send_email",
                                    {**ARGS, "draft": "d2"})
            return refused, sent, other

    refused, sent, other = run(story())
    assert refused.is_error and "the guard 'send' of Mailer is false" in text(refused)
    assert "@Approver" in text(refused)  # the explanation shows the guard's parts
    assert not sent.is_error and text(sent) == "sent d1 to board@example.org"
    assert other.is_error  # the approval was of d1, not d2
    mailer.close(), drafter.close()
    kinds = [(e["kind"], e.get("label"), e.get("outcome"))
             for e in events(tmp_path / "Mailer.jsonl")]
    assert kinds == [("recv", "send_email", None), ("choice", "send", False),
                     ("send", "send_email refused", None),
                     ("recv", "send_email", None), ("choice", "send", True),
                     ("send", "send_email result", None),
                     ("recv", "send_email", None), ("choice", "send", False),
                     ("send", "send_email refused", None)]
    received = [e for e in events(tmp_path / "Drafter.jsonl") if e["kind"] == "recv"]
    assert [e["label"] for e in received] == ["send_email refused", "approved",
                                              "send_email result", "send_email refused"]


def test_the_wrapped_tool_keeps_its_schemas_and_context():
    system = mail_system(secret=None)
    drafter, mailer = system.agent("Drafter"), system.agent("Mailer")
    server, plain = MCPServer("wrapped"), MCPServer("plain")
    tools = CausalTools(mailer)

    def total(a: int, b: int = 2) -> dict[str, int]:
        """Add two numbers."""
        return {"sum": a + b}

    async def who(name: str, ctx: Context) -> str:
        return f"{name} in request {ctx.request_id}"

    shared = CallToolResult(content=[TextContent(type="text", text="the same each time")])

    def constant() -> CallToolResult:
        return shared

    for function in (total, who, constant):
        server.tool()(tools.tool()(function))
        plain.tool()(function)

    async def calls():
        async with Client(server) as wrapped, Client(plain) as bare:
            listed = {t.name: t for t in (await wrapped.list_tools()).tools}
            expected = {t.name: t for t in (await bare.list_tools()).tools}
            summed = await call_tool(wrapped, drafter, "Mailer", "total", {"a": 1})
            named = await call_tool(wrapped, drafter, "Mailer", "who", {"name": "x"})
            untokened = await wrapped.call_tool("total", {"a": 5, "b": 5})
            forged = await wrapped.call_tool("total", {"a": 5}, meta={TOKEN_KEY: "cpl1.AAAA"})
            for _ in range(2):
                assert TOKEN_KEY in (await call_tool(wrapped, drafter, "Mailer", "constant")).meta
            return listed, expected, summed, named, untokened, forged

    listed, expected, summed, named, untokened, forged = run(calls())
    for name in ("total", "who"):
        assert listed[name].input_schema == expected[name].input_schema
        assert listed[name].output_schema == expected[name].output_schema
        assert listed[name].description == expected[name].description
    assert summed.structured_content == {"sum": 3} and TOKEN_KEY in summed.meta
    assert text(named).startswith("x in request")
    assert untokened.structured_content == {"sum": 10} and TOKEN_KEY not in (untokened.meta or {})
    assert forged.is_error and "token refused (malformed)" in text(forged)
    assert shared.meta is None  # the tool's own result is copied, not changed
    assert (drafter.taken, mailer.taken) == (8, 9)  # four sends and four receives each; a refusal


def test_concurrent_calls_from_one_agent_are_each_received_once():
    system = mail_system()
    drafter, approver, mailer = (system.agent(name) for name in LIFELINES)
    approve(drafter, approver)

    async def many():
        async with Client(mail_server(mailer)) as client:
            return await asyncio.gather(*(call_tool(client, drafter, "Mailer", "send_email", ARGS)
                                          for _ in range(8)))

    results = run(many())
    assert not any(result.is_error for result in results)
    assert mailer.taken == 8 * 3 and drafter.taken == 2 + 8 * 2


def test_misconfigured_guards_fail_when_the_tool_is_declared():
    system = mail_system()
    tools = CausalTools(system.agent("Drafter"))
    mailer_tools = CausalTools(system.agent("Mailer"))

    def send_email(to: str, draft: str) -> str:
        return "sent"

    with pytest.raises(NotOwner, match="belongs to 'Mailer'"):
        tools.tool(guard="send")(send_email)
    with pytest.raises(UnknownLabel, match="'sned'"):
        mailer_tools.tool(guard="sned")(send_email)
    with pytest.raises(UndeclaredVariable, match="'to'"):
        mailer_tools.tool(guard="send", assign=("to",))(send_email)
    with pytest.raises(ValueError, match="not parameters of send_email"):
        mailer_tools.tool(guard="send", assign=("approved",))(send_email)


def hostile_tokens(drafter) -> dict[str, object]:
    """Values a caller may put under TOKEN_KEY, by the reason the Mailer gives."""
    good = drafter.send("Mailer", "send_email").text
    foreign = mail_system(guard="@Approver(approved == true)").agent("Drafter")
    forger = mail_system(secret=b"another secret, also 32 bytes..").agent("Drafter")
    return {
        "random text": os.urandom(40).hex(),
        "random bytes": "cpl1." + base64.urlsafe_b64encode(os.urandom(120)).decode().rstrip("="),
        "truncated": good[: len(good) // 2],
        "oversized": "cpl1." + "A" * MAX_TOKEN_TEXT,
        "other system": foreign.send("Mailer", "send_email").text,
        "forged": forger.send("Mailer", "send_email").text,
        "misaddressed": drafter.send("Approver", "send_email").text,
        "a list": [good],
        "a dict": {"token": good},
        "a number": 7,
        "missing": None,
    }


REASONS = {"random text": "malformed", "random bytes": "malformed", "truncated": "malformed",
           "oversized": "oversized", "other system": "foreign", "forged": "forged",
           "misaddressed": "misaddressed", "a list": "malformed", "a dict": "malformed",
           "a number": "malformed", "missing": "missing", "replayed": "replayed"}


def test_hostile_tokens_are_error_results_and_leave_the_mailer_as_it_was(tmp_path):
    system = mail_system()
    drafter, approver = system.agent("Drafter"), system.agent("Approver")
    mailer = system.agent("Mailer", log=tmp_path)
    approve(drafter, approver)
    hostile = hostile_tokens(drafter)

    async def attack():
        async with Client(mail_server(mailer)) as client:
            accepted = drafter.send("Mailer", "send_email").text
            first = await client.call_tool("send_email", ARGS, meta={TOKEN_KEY: accepted})
            outcomes = {}
            for name, value in [*hostile.items(), ("replayed", accepted)]:
                before = (dict(mailer.seen), mailer.sent, mailer.holds("send"))
                meta = {} if value is None else {TOKEN_KEY: value}
                result = await client.call_tool("send_email", {**ARGS, "draft": "evil"}, meta=meta)
                after = (dict(mailer.seen), mailer.sent, mailer.holds("send"))
                outcomes[name] = (result, before, after)
            # The server is alive and its guard unchanged: a fresh good token still runs.
            last = await call_tool(client, drafter, "Mailer", "send_email", ARGS)
            return first, outcomes, last

    first, outcomes, last = run(attack())
    assert not first.is_error and not last.is_error
    for name, (result, before, after) in outcomes.items():
        reason = REASONS[name]
        assert result.is_error, name
        assert text(result).startswith("send_email refused: "), name
        assert reason in text(result), (name, text(result))
        assert len(text(result)) < 1000, name  # bounded: the hostile value is not echoed
        assert TOKEN_KEY not in (result.meta or {}), name
        seen_before, sent_before, holds_before = before
        seen_after, sent_after, holds_after = after
        seen_before.pop("Mailer", None), seen_after.pop("Mailer", None)
        assert seen_after == seen_before and sent_after == sent_before, name
        assert holds_after == holds_before, name
    mailer.close()
    refusals = [e for e in events(tmp_path / "Mailer.jsonl") if e["kind"] == "act"]
    counted = Counter()  # a reason's repeats within a second are one act with their count
    for event in refusals:
        reason, count = refusals_of(event["label"])
        counted[reason] += count
    assert counted == Counter(REASONS[n] for n in outcomes)
    assert not any(e.get("set") for e in refusals)
    assert all(e["set"] == {"draft": "d1"}
               for e in events(tmp_path / "Mailer.jsonl") if e["kind"] == "recv")


def test_an_argument_no_trace_can_hold_is_refused_not_received(tmp_path):
    system = mail_system()
    drafter, mailer = system.agent("Drafter"), system.agent("Mailer", log=tmp_path)

    async def call():
        async with Client(mail_server(mailer)) as client:
            return await call_tool(client, drafter, "Mailer", "send_email",
                                   {**ARGS, "draft": "\ud800"})

    result = run(call())
    assert result.is_error and "a lone surrogate" in text(result)
    mailer.close()
    assert [(e["kind"], e["label"]) for e in events(tmp_path / "Mailer.jsonl")] == \
        [("act", "refused: value")]


def test_a_bad_reply_token_is_recorded_as_refused_by_the_caller(tmp_path):
    system = mail_system()
    drafter = system.agent("Drafter", log=tmp_path)
    server = MCPServer("liar")
    replies = iter(["cpl1.garbage", ["not", "text"],
                    mail_system(secret=None).agent("Mailer").send("Drafter", "x").text])

    @server.tool()
    def send_email(to: str, draft: str) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text="ok")],
                              _meta={TOKEN_KEY: next(replies)})

    async def calls():
        async with Client(server) as client:
            return [await call_tool(client, drafter, "Mailer", "send_email", ARGS)
                    for _ in range(3)]

    results = run(calls())
    assert [text(r) for r in results] == ["ok"] * 3
    drafter.close()
    acts = [e["label"] for e in events(tmp_path / "Drafter.jsonl") if e["kind"] == "act"]
    assert acts == ["refused: the reply of send_email: malformed",
                    "refused: the reply of send_email: malformed",
                    "refused: the reply of send_email: forged"]


def cpl(*arguments, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpl_cli", *map(str, arguments)], cwd=cwd,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": ROOT})


def test_the_stdio_example_runs_and_its_merged_logs_recheck(tmp_path):
    """Run twice: the second run stops on one line (the Drafter's, or the server's once the
    Drafter's and Approver's logs are gone) unless --overwrite, whose logs then recheck."""
    logs = tmp_path / "logs"

    def example(*more: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, EXAMPLE, "--logs", str(logs), *more],
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": ROOT})

    assert example().returncode == 0
    for who, log in (("run.py", "Drafter"), ("server.py", "Mailer")):
        again = example()
        assert (again.returncode, again.stdout, again.stderr) == (2, "", (
            f"{who}: {logs}/{log}.jsonl exists already: give --overwrite to replace it\n"))
        for name in ("Drafter", "Approver"):
            (logs / f"{name}.jsonl").unlink()
    story = example("--overwrite")
    assert story.returncode == 0, story.stderr
    assert story.stdout.count("-> refused") == 2 and story.stdout.count("-> ran") == 1
    assert sorted(os.listdir(logs)) == ["Approver.jsonl", "Drafter.jsonl", "Mailer.jsonl"]
    merged = cpl("merge", logs, "-o", "t.jsonl", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    evaluated = cpl("eval", "t.jsonl", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
    assert "3 decisions re-checked: all agree" in evaluated.stdout, evaluated.stdout
    drawn = cpl("render", "t.jsonl", "-o", "t.svg", cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    assert (tmp_path / "t.svg").read_text().lstrip().startswith(("<svg", "<?xml"))


def test_the_bench_stays_runnable(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import embed_mcp
    finally:
        sys.path.pop(0)
    runs = asyncio.run(embed_mcp.measure(3, 1, embed_mcp.SECRET, str(tmp_path), stdio=False))
    assert set(runs) == {"unguarded", "guarded", "events alone"}
    assert all(len(seconds) == 1 for seconds in runs.values())
