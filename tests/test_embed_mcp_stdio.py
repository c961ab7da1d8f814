"""Requests the MCP SDK's stdio transport cannot read: a real server subprocess (the
example's Mailer, served by ``causal_guards.mcp_stdio.run_stdio``) answers each with a
JSON-RPC error for its id, records nothing for it and goes on; raw JSON-RPC lines are
written to its stdin, every wait bounded."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

import pytest

pytest.importorskip("mcp", reason="mcp is not installed (pip install 'causal-guards[mcp]')")

import causal_guards  # noqa: E402
from causal_guards.mcp import TOKEN_KEY  # noqa: E402
from causal_guards.mcp_stdio import INVALID_REQUEST, PARSE_ERROR, _request_id  # noqa: E402
from cpl.live import System  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "examples", "embedding", "mcp", "server.py")
CODE = os.path.dirname(os.path.dirname(os.path.abspath(causal_guards.__file__)))
SECRET = bytes(range(32))
WAIT = 5.0  # seconds an answer may take (they take milliseconds)


class Raw:
    """An MCP server over stdio, spoken to in raw JSON-RPC lines."""

    def __init__(self, command: list[str], cwd):
        self.unread = b""
        self.process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": CODE,
                                         "MAIL_SECRET": SECRET.hex()})
        hello = self.ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}, wait=30)
        assert hello is not None and hello.get("id") == 0, self.stderr()
        self.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

    def write(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def answer(self, wait: float = WAIT) -> dict | None:
        """The next line the server writes, or None if none comes within ``wait``."""
        deadline = time.monotonic() + wait
        out = self.process.stdout.fileno()  # read unbuffered: select sees all there is
        while b"\n" not in self.unread:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([out], [], [], left)[0]:
                return None
            chunk = os.read(out, 1 << 16)
            if not chunk:
                return None
            self.unread += chunk
        line, _, self.unread = self.unread.partition(b"\n")
        return json.loads(line)

    def ask(self, message: dict | bytes, wait: float = WAIT) -> dict | None:
        self.write(message if isinstance(message, bytes) else json.dumps(message).encode())
        return self.answer(wait)

    def close(self) -> int:
        self.process.stdin.close()
        try:
            return self.process.wait(10)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()

    def stderr(self) -> str:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        return self.process.stderr.read().decode(errors="replace")[-2000:]


def call(request: int | str, arguments: bytes = b'{"to": "board", "draft": "d1"}',
         meta: bytes = b"{}") -> bytes:
    return (b'{"jsonrpc": "2.0", "id": %s, "method": "tools/call", "params": {"name": '
            b'"send_email", "arguments": %s, "_meta": %s}}'
            % (json.dumps(request).encode(), arguments, meta))


def nested(depth: int) -> bytes:
    return b'{"deep": ' + b"[" * depth + b"]" * depth + b"}"


UNREADABLE = {  # the request line (its id: 11..17), the code of its answer
    "a lone surrogate in a guarded argument": (
        call(11, arguments=b'{"to": "board", "draft": "\\ud800"}'), PARSE_ERROR),
    "text that was not UTF-8, as a client escapes it, in _meta": (
        call(12, meta=b'{"' + TOKEN_KEY.encode() + b'": "cpl1.\\udcff\\udcfe"}'), PARSE_ERROR),
    "bytes that are not UTF-8 in _meta": (call(13, meta=b'{"note": "\xff\xfe"}'), PARSE_ERROR),
    "_meta nested 1,000 deep": (call(14, meta=nested(1000)), PARSE_ERROR),
    "_meta nested 200 deep": (call("fifteen", meta=nested(200)), PARSE_ERROR),
    "a request cut short": (call(16)[:60], PARSE_ERROR),
    "params that are not an object": (
        b'{"jsonrpc": "2.0", "id": 17, "method": "tools/call", "params": 7}', INVALID_REQUEST),
}


NO_REQUEST = (b"", b"[1, 2]", b"not json", b'{"jsonrpc": "2.0", "method": "x\\ud800"}',
              b'{"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": "\\ud800"}}',
              b'{"jsonrpc": "2.0", "id": true, "method": "tools/call", "params": 7}',
              b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "tools/call", "params": 7}')


def mailer_events(logs) -> list[tuple]:
    with open(logs / "Mailer.jsonl") as log:
        lines = [json.loads(line) for line in log]
    return [(e["kind"], e.get("label")) for e in lines if "kind" in e]


def test_requests_the_sdk_cannot_read_are_answered_with_an_error_for_their_id(tmp_path):
    """... and lines with no request id are dropped: nobody waits for their answer."""
    logs = tmp_path / "logs"
    server = Raw([sys.executable, SERVER, "--logs", str(logs)], cwd=tmp_path)
    try:
        for request, (case, (line, code)) in enumerate(UNREADABLE.items(), start=11):
            started = time.monotonic()
            answer = server.ask(line)
            assert answer is not None, f"{case}: no answer in {WAIT} s"
            request = "fifteen" if request == 15 else request
            assert answer["id"] == request and answer["error"]["code"] == code, (case, answer)
            assert "Traceback" not in answer["error"]["message"]
            assert time.monotonic() - started < WAIT
        for line in NO_REQUEST:  # nobody waits for these: dropped, as the SDK drops them
            server.write(line)
        # the server goes on, and its next answer is a genuine call's (nobody approved d1:
        # refused by the guard), so no line above was answered
        guard = "@Approver(approved == true) && @Approver.draft == draft"
        token = System(["Drafter", "Approver", "Mailer"], {"send": ("Mailer", guard)},
                       variables=["approved", "draft"], secret=SECRET).agent("Drafter").send(
            "Mailer", "send_email").text
        answer = server.ask(call(20, meta=json.dumps({TOKEN_KEY: token}).encode()))
        assert answer["id"] == 20 and answer["result"]["isError"], answer
        assert "the guard 'send' of Mailer is false" in answer["result"]["content"][0]["text"]
    except BaseException:
        print(server.stderr())
        raise
    assert server.close() == 0
    # none of the unreadable requests reached the tool: only the genuine call is recorded
    assert mailer_events(logs) == [("recv", "send_email"), ("choice", "send"),
                                   ("send", "send_email refused")]


def test_served_by_the_sdk_alone_such_a_request_gets_no_answer(tmp_path):
    """What docs/embedding.md says of ``server.run("stdio")``: the caller's timeout (if the
    SDK starts answering, this fails and the docs are to be changed)."""
    plain = tmp_path / "plain.py"
    plain.write_text("from mcp.server.mcpserver import MCPServer\n"
                     "server = MCPServer('plain')\n"
                     "@server.tool()\n"
                     "def send_email(to: str, draft: str) -> str:\n"
                     "    return 'sent'\n"
                     "server.run('stdio')\n")
    server = Raw([sys.executable, str(plain)], cwd=tmp_path)
    try:
        assert server.ask(UNREADABLE["a lone surrogate in a guarded argument"][0], wait=1.5) is None
        assert server.ask(call(40))["id"] == 40  # alive: it only dropped the line
    except BaseException:
        print(server.stderr())
        raise
    assert server.close() == 0


@pytest.mark.parametrize("line, found", [
    ('{"jsonrpc": "2.0", "id": 7, "method": "m"}', 7),
    ('{"method": "m", "params": {"id": 1, "x": [{"id": 2}]}, "id": "last"}', "last"),
    ('{"params": ' + "[" * 5000 + "]" * 5000 + ', "id": 8}', 8),
    ('{"params": {"k": "a \\" } ] \\\\", "id": 3}, "id" : 9 , "method": "m"}', 9),
    ('{"id": 10, "params": {"x": "\\ud800", "y": ' + "{" * 300, 10),
    ('{"id": -3}', -3),
    ('{"id": 2.5}', None), ('{"id": true}', None), ('{"id": null}', None),
    ('{"id": [1]}', None), ('{"id": {"id": 1}}', None), ('{"id": "\\udc80"}', None),
    ('{"id": 99999999999999999999}', None),
    ('{"id": 12', 12), ('{"id": "a\\"b}', None),
    ('{"id": 4, "result": {}}', None), ('{"error": {}, "id": 4}', None),
    ('[{"id": 1}]', None), ('"id": 1', None), ('', None), ('{"x": 1}', None),
    ('{"x": {"id": 1}}', None), ('{"x": "id", "y": 1}', None),
])
def test_the_request_id_is_found_at_the_top_level_only(line, found):
    assert _request_id(line) == found


def test_finding_the_id_of_a_hostile_line_takes_one_pass():
    """Escaped quotes with no end, 100,000 brackets or keys: each line is read once, not once
    per quote (a string that never ends is the rest of the line)."""
    for line, found in (('{"x": "' + '\\"' * 100_000 + ', "id": 1', None),
                        ('{"x": ' + "[" * 100_000 + ', "id": 2', None),
                        ('{"x": ' + "[" * 100_000 + "]" * 100_000 + ', "id": 3}', 3),
                        ('{"x": "' + '\\\\' * 100_000 + '", "id": 4}', 4),
                        ('{' + '"a": 1, ' * 100_000 + '"id": 5}', 5)):
        started = time.process_time()
        assert _request_id(line) == found
        assert time.process_time() - started < 2.0, line[:40]
