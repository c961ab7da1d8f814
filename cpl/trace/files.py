"""Reading and writing ``cpl-msc/1`` traces: bytes (JSON, msgpack, JSON Lines) ↔ ``Trace``.

Every reader takes all three forms: ``.jsonl`` by its suffix, msgpack by
``.msgpack``/``.mpk``, anything else sniffed (a first line that is a whole
header object followed by more lines is a stream; else a JSON document,
falling back to msgpack).  Decoding rejects what is not a JSON or msgpack
object (and a JSON object with a duplicate key); whether the document is a
valid trace is ``cpl.trace.checker``'s question.  Writing goes through
``cpl.trace.writer.TraceWriter`` only.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import msgpack

from ..collector import collector_paused
from ..errors import TraceError
from .msc import Trace
from .checker import FORMAT, parse_trace
from .codec import (LIMIT_VARIABLE, Refused, decode_json, decode_problem, json_error, read_limit,
                    size_text, unpack)
from .lines import JsonLines
from .paths import readable_file
from .typed import Pending, typed_document, typed_trace
from .writer import TraceWriter, form_of

_BLANK_START = re.compile(rb"^(\xef\xbb\xbf)?[ \t\r\n]*")  # a BOM, blanks: before a stream's "{"

__all__ = ["FORMAT", "TraceError", "load_trace", "loads_trace", "parse_trace", "dump_trace",
           "dumps_trace", "open_trace", "TraceWriter"]


# --------------------------------------------------------------- bytes


def load_trace(path, warn=None) -> Trace:
    """Read and validate a trace file in any of the three forms (see the module docstring).

    A cut-off stream loads with ``meta == {"cut_off": True}``; ``warn(text)`` is told
    (default: a ``TraceWarning``)."""
    source = open_trace(path, warn)
    return source if isinstance(source, Trace) else source.trace()


def open_trace(path, warn=None, pending: bool = False) -> Trace | JsonLines | Pending:
    """A document as its ``Trace``; a stream as a ``JsonLines`` whose header is checked and
    whose events are not read yet (``cpl eval`` reads them one at a time).  A document is
    read whole, so past ``read_limit()`` bytes it is refused before it is read.
    ``pending``: a JSON document the fast path takes is a ``Pending``, its events decoded
    but neither checked nor built (``cpl eval`` checks and evaluates them in one pass).
    Agents' logs, or their folder, are refused with the ``cpl merge`` to run first."""
    try:
        return _open(Path(path), warn, pending)
    except TraceError as error:
        from .unmerged import merge_first
        refusal = merge_first(path)
        if refusal is None:
            raise
        raise refusal from error


def _open(path: Path, warn, pending: bool) -> Trace | JsonLines | Pending:
    limit = read_limit()
    readable_file(path)
    form = form_of(path)
    if form != "jsonl":
        try:
            with open(path, "rb") as handle:
                sniff = form is None and _BLANK_START.sub(b"", handle.peek(1 << 12)[:1 << 12])
                first = handle.readline(limit + 1) if sniff and sniff[:1] == b"{" else b""
                second = handle.readline(limit + 1) if first.lstrip().startswith(b"{") else b""
                stream = _looks_streamed(first, second)
                raw = b"" if stream else _whole(handle, first + second, limit, str(path))
        except OSError as error:
            raise TraceError(f"cannot read the trace: {error.strerror}", str(path)) from None
        except MemoryError:
            raise TraceError("too large to read into memory; write it as .jsonl",
                             str(path)) from None
        if not stream:
            if pending and form is None and not _looks_streamed(*_two_lines(raw)):
                with collector_paused():
                    found = typed_document(raw, str(path))
                if found is not None:
                    return found
            return loads_trace(raw, str(path), msgpack_first=form == "msgpack")
    stream = JsonLines(path, str(path), warn)
    stream.header()
    return stream


def _whole(handle, start: bytes, limit: int, origin: str) -> bytes:
    """A document's bytes (``start``: those read already), refused past ``limit`` bytes
    without reading them when the file's size says so."""
    if len(start) <= limit and os.fstat(handle.fileno()).st_size <= limit:
        raw = start + handle.read(limit + 1 - len(start))
        if len(raw) <= limit:
            return raw
    raise TraceError(f"larger than {size_text(limit)}, the most read whole as a document; "
                     f"write the trace as .jsonl (read a line at a time), or raise the limit "
                     f"with {LIMIT_VARIABLE} (e.g. {LIMIT_VARIABLE}=1G)", origin)


def _looks_streamed(first: bytes, second: bytes) -> bool:
    """A header object alone on the first line, and more lines after it."""
    text = first.lstrip(b"\xef\xbb\xbf \t\r")
    if not text.startswith(b"{") or not second.strip():
        return False
    try:
        value = decode_json(text.decode("utf-8"))
    except Refused:  # JSON, but wrong: the stream reader says what is wrong with its line 1
        return True
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and "events" not in value


def loads_trace(raw: bytes | str, origin: str = "trace", *, msgpack_first: bool = False,
                warn=None) -> Trace:
    """Decode bytes (a JSON document, msgpack, or a JSON Lines stream) and validate them."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if not msgpack_first and _looks_streamed(*_two_lines(raw)):
        return JsonLines(raw, origin, warn).trace()
    with collector_paused():  # a trace is a million acyclic objects: see collector_paused
        trace = None if msgpack_first else typed_trace(raw, origin)
        return trace or parse_trace(_decode(raw, origin, msgpack_first), origin, owned=True)


def _two_lines(raw: bytes) -> tuple[bytes, bytes]:
    """The first line and the second (or the next byte), without copying the rest."""
    end = raw.find(b"\n")
    if end < 0:
        return raw, b""
    stop = raw.find(b"\n", end + 1)
    return raw[:end], raw[end + 1:stop] if stop >= 0 else raw[end + 1:]


def _decode(raw: bytes, origin: str, msgpack_first: bool):
    if msgpack_first:
        try:
            return unpack(raw)
        except Exception as error:  # msgpack raises several unrelated types
            if isinstance(error, (msgpack.exceptions.StackError, MemoryError)):
                raise TraceError(f"not a trace this reader takes: a value is "
                                 f"{decode_problem(error)}", origin) from None
            raise TraceError(f"not a msgpack trace ({decode_problem(error)}); write it with "
                             f"`cpl run --trace OUT.msgpack` or use JSON", origin) from None
    try:
        return decode_json(raw.decode("utf-8-sig"))
    except Refused as error:
        raise json_error(error, origin) from None
    except (UnicodeDecodeError, ValueError, RecursionError, MemoryError) as json_error_:
        if isinstance(json_error_, (RecursionError, MemoryError)):
            raise json_error(json_error_, origin) from None
        try:
            data = unpack(raw)
        except Exception:
            data = None
        if isinstance(data, dict):
            return data
        raise TraceError(f"not JSON ({json_error_}) and not msgpack either; a trace is a JSON "
                         f'object {{"format": "{FORMAT}", "lifelines": [...], "events": [...]}}',
                         origin) from None


def dumps_trace(trace: Trace, binary: bool = False, form: str | None = None) -> bytes:
    """The trace as bytes: a JSON document (one event per line), msgpack, or ``form="jsonl"``."""
    buffer = io.BytesIO()
    _write(trace, TraceWriter.to_stream(buffer, form or ("msgpack" if binary else "json"),
                                        trace.lifelines, trace.init, trace.vars, trace.symbols,
                                        trace.predicates))
    return buffer.getvalue()


def dump_trace(trace: Trace, path) -> None:
    """Write the trace; the form from the suffix (.jsonl, .msgpack/.mpk, else JSON)."""
    _write(trace, TraceWriter.open(path, trace.lifelines, trace.init, trace.vars, trace.symbols,
                                   trace.predicates))


def _write(trace: Trace, writer: TraceWriter) -> None:
    with writer:
        for event in trace.events:
            writer.write(event)
        writer.close(None if trace.meta is None else dict(trace.meta))
