"""Reading and writing ``cpl-msc/1`` traces: bytes (JSON or msgpack) ↔ document ↔ ``Trace``.

Decoding rejects what is not a JSON or msgpack object (and a JSON object with
a duplicate key); whether the document is a valid trace is ``cpl.tracecheck``'s
question.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgpack

from .collector import collector_paused
from .errors import TraceError
from .msc import Trace
from .tracecheck import FORMAT, parse_trace

MSGPACK_SUFFIXES = (".msgpack", ".mpk")

__all__ = ["FORMAT", "TraceError", "load_trace", "loads_trace", "parse_trace", "dump_trace",
           "dumps_trace"]


# --------------------------------------------------------------- bytes


def load_trace(path) -> Trace:
    """Read and validate a trace file: msgpack for .msgpack/.mpk or non-JSON bytes, else JSON."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise TraceError(f"cannot read the trace: {error.strerror}", str(path)) from None
    return loads_trace(raw, str(path), msgpack_first=path.suffix.lower() in MSGPACK_SUFFIXES)


def loads_trace(raw: bytes | str, origin: str = "trace", *, msgpack_first: bool = False) -> Trace:
    """Decode bytes (JSON, falling back to msgpack) and validate them."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    with collector_paused():  # a trace is a million acyclic objects: see collector_paused
        return parse_trace(_decode(raw, origin, msgpack_first), origin)


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs):
    data = dict(pairs)
    if len(data) < len(pairs):  # some key came twice: say which
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(f"the key {key!r} occurs twice in one object")
            seen.add(key)
    return data


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _unpack(raw: bytes):
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


def _decode(raw: bytes, origin: str, msgpack_first: bool):
    if msgpack_first:
        try:
            return _unpack(raw)
        except Exception as error:  # msgpack raises several unrelated types
            raise TraceError(f"not a msgpack trace ({error}); write it with "
                             f"`cpl run --trace OUT.msgpack` or use JSON", origin) from None
    try:
        return json.loads(raw.decode("utf-8-sig"), object_pairs_hook=_no_duplicates,
                          parse_constant=_no_constant)
    except _DuplicateKey as error:
        raise TraceError(f"not a valid trace: {error}; keep one of them", origin) from None
    except (UnicodeDecodeError, ValueError) as json_error:
        try:
            data = _unpack(raw)
        except Exception:
            data = None
        if isinstance(data, dict):
            return data
        raise TraceError(f"not JSON ({json_error}) and not msgpack either; a trace is a JSON "
                         f'object {{"format": "{FORMAT}", "lifelines": [...], "events": [...]}}',
                         origin) from None


def dumps_trace(trace: Trace, binary: bool = False) -> bytes:
    """The document as bytes: JSON (one event per line) or msgpack."""
    data = trace.to_dict()
    if binary:
        return msgpack.packb(data, use_bin_type=True)
    lines = []
    for key, value in data.items():
        if key == "events":
            rows = ",\n".join("    " + _json(event) for event in value)
            lines.append(f'  "events": [\n{rows}\n  ]' if value else '  "events": []')
        else:
            lines.append(f"  {_json(key)}: {_json(value)}")
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")


def dump_trace(trace: Trace, path) -> None:
    """Write the trace; msgpack when the suffix is .msgpack/.mpk, JSON otherwise."""
    path = Path(path)
    path.write_bytes(dumps_trace(trace, binary=path.suffix.lower() in MSGPACK_SUFFIXES))


def _json(value) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)
