"""An MCP server over stdio that answers every request, also those the SDK cannot read.

The SDK's stdio transport reads a line, parses it and, when that fails, drops it: no
answer, the caller waits for its own timeout (``mcp/server/stdio.py`` passes the parse
error on as an exception, which ``mcp/shared/jsonrpc_dispatcher.py`` logs at debug
level and drops: it cannot know the request's id, and nothing of a server sees it).
Lines it drops: a lone surrogate escape (``"\\ud800"``, which is also how
a client writes text that was not UTF-8), nesting past its parser's depth limit (about
200 levels), cut-short or malformed JSON, a message of the wrong shape.

:func:`serve_stdio` serves an ``MCPServer`` on the SDK's own stdio transport, but reads
stdin itself: each line is checked with the parser the SDK uses, and one it would drop
is answered with a JSON-RPC error for its request id (``-32700`` when it is not JSON the
SDK reads, ``-32600`` when it is JSON but not a message) and never reaches a tool.
Bytes that are not UTF-8 are such a line too (the SDK would silently replace them). A
line whose id cannot be found (a notification, a response, no JSON object at all) is
dropped, as nobody can be waiting for its answer.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

__all__ = ["INVALID_REQUEST", "PARSE_ERROR", "run_stdio", "serve_stdio"]

PARSE_ERROR = mcp_types.PARSE_ERROR  # -32700: not JSON the SDK reads
INVALID_REQUEST = -32600  # JSON, but not a JSON-RPC message the SDK reads
MAX_DETAIL = 200  # characters of the parser's message kept in an answer (never the input)

_STRUCTURE = re.compile(r'["{}\[\],:]')  # what finding a top-level key looks at
_STRING_REST = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON string after its opening quote


def run_stdio(server: MCPServer) -> None:
    """``server.run("stdio")``, but every request the SDK cannot read is answered."""
    anyio.run(serve_stdio, server)


async def serve_stdio(server: MCPServer) -> None:
    """Serve ``server`` over this process's stdin and stdout until stdin ends."""
    wire = os.dup(0)  # stdin is ours to read; fd 0 points at the null device meanwhile
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        lines = _Lines(anyio.wrap_file(os.fdopen(wire, "rb", closefd=False)))
        # the SDK only iterates stdin, which _Lines does: an AsyncFile's other methods unused
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            lines.answer_to(write_stream)
            lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async serves
            await lowlevel.run(read_stream, write_stream,
                               lowlevel.create_initialization_options())
    finally:
        os.dup2(wire, 0)  # the wire descriptor stays open: a reader thread may still hold it


class _Lines:
    """stdin's lines as the SDK's reader takes them, minus those it would drop, which
    are answered here instead."""

    def __init__(self, stdin: Any):
        self._stdin = stdin
        self._answers: Any = None
        self._ready = anyio.Event()

    def answer_to(self, write_stream: Any) -> None:
        self._answers = write_stream
        self._ready.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._read()

    async def _read(self) -> AsyncIterator[str]:
        async for raw in self._stdin:
            line, refusal = _checked(raw)
            if refusal is None:
                assert line is not None  # only a refused line can be no text
                yield line
                continue
            request = _request_id(line if line is not None else raw.decode("utf-8", "replace"))
            if request is not None:
                await self._answer(request, *refusal)

    async def _answer(self, request: int | str, code: int, message: str) -> None:
        await self._ready.wait()
        error = mcp_types.JSONRPCError(jsonrpc="2.0", id=request,
                                       error=mcp_types.ErrorData(code=code, message=message))
        try:
            await self._answers.send(SessionMessage(error))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the server is stopping: nobody reads answers any more


def _checked(raw: bytes) -> tuple[str | None, tuple[int, str] | None]:
    """A line as text, and None or why the SDK would drop it (a JSON-RPC error code and
    message)."""
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return None, (PARSE_ERROR, f"the request is not UTF-8: byte 0x{raw[error.start]:02x} "
                                   f"at offset {error.start}")
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as error:  # what the SDK's reader catches, so that it drops the line
        return line, _refusal(error)
    return line, None


def _refusal(error: Exception) -> tuple[int, str]:
    details = getattr(error, "errors", None)
    try:
        first = details()[0] if callable(details) else {}
    except Exception:  # not a pydantic error: its type names it
        first = {}
    if not first:
        return PARSE_ERROR, f"the MCP SDK cannot read this request ({type(error).__name__})"
    reason = str(first.get("msg", ""))[:MAX_DETAIL]
    if first.get("type") == "json_invalid":
        if "hex escape" in reason or "surrogate" in reason:
            reason += " (a lone surrogate \\ud800-\\udfff, without its pair)"
        return PARSE_ERROR, f"the MCP SDK cannot read this request: {reason}"
    where = ".".join(str(part) for part in first.get("loc", ()))[:MAX_DETAIL]
    return (INVALID_REQUEST,
            f"not a JSON-RPC message the MCP SDK reads: {where or 'message'}: {reason}")


def _request_id(line: str) -> int | str | None:
    """The id of a request from its top-level keys, however deep or unreadable the rest
    is; None for a response, a notification or a line that is no JSON object.  One pass
    over the line (it may be hostile: huge, deep, cut short)."""
    depth, key, keys, found = 0, None, set(), None
    expect_key, id_from = False, None  # id_from: where the id's value starts, until it is read
    for text, start, end in _tokens(line):
        if id_from is not None:
            found = _id_value(text if text.startswith('"') and not line[id_from:start].strip()
                              else line[id_from:start])
            id_from = None
        if depth == 0 and text != "{":
            return None
        if text in ("{", "["):
            depth += 1
            expect_key = depth == 1
        elif text in ("}", "]"):
            depth -= 1
            if depth == 0:
                break
        elif depth == 1 and text == ",":
            expect_key = True
        elif depth == 1 and text == ":" and key == "id":
            id_from = end
        elif depth == 1 and expect_key and text.startswith('"'):
            key, expect_key = _key(text), False
            keys.add(key)
    if id_from is not None:  # the line ends inside the id's value
        found = _id_value(line[id_from:])
    if keys & {"result", "error"}:
        return None
    return found


def _tokens(line: str):
    """The strings and structural characters of a JSON text: (text, start, end); an
    unterminated string ends it (what follows is inside the string)."""
    at = 0
    while (mark := _STRUCTURE.search(line, at)) is not None:
        if mark.group() != '"':
            at = mark.end()
            yield mark.group(), mark.start(), at
            continue
        rest = _STRING_REST.match(line, mark.end())
        if rest is None:
            return
        at = rest.end()
        yield line[mark.start():at], mark.start(), at


def _key(text: str) -> str | None:
    if "\\" not in text:
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return None


def _id_value(raw: str) -> int | str | None:
    """A request id: a string or an integer, one the answer can carry back."""
    try:
        value = json.loads(raw)
        if isinstance(value, str):
            value.encode("utf-8")  # a lone surrogate cannot go back on the wire
    except (ValueError, UnicodeEncodeError, RecursionError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return None
    if isinstance(value, int) and not -2 ** 63 <= value < 2 ** 63:
        return None
    return value
