"""Bytes ↔ JSON values for traces: the decoders and encoders every trace form shares.

Decoding rejects a JSON object with a duplicate key, NaN and Infinity, a
lone surrogate (``"\\ud800"``: UTF-8 cannot encode it, so no output could
show it), and turns the decoders' own failures on hostile input (nesting
deeper than the interpreter's stack, a msgpack stack overflow, a number too
long to convert) into a ``TraceError`` that says what it found, never a
traceback.  ``read_limit`` is the most read as one piece: a stream's line or
a whole document.
"""

from __future__ import annotations

import json
import math
import os
import re

import msgpack

from ..errors import CplError, TraceError
from .wording import shown

FORMAT = "cpl-msc/1"
# Lists and objects inside one value: deeper than this is not data a run records, and every
# later recursive step (comparison, copy, encoding) would risk the interpreter's stack.
MAX_DEPTH = 100
TOO_DEEP = f"nested more than {MAX_DEPTH} lists or objects deep"
LIMIT_VARIABLE = "CPL_TRACE_LIMIT"
DEFAULT_LIMIT = 64 * 2**20  # bytes: no line a run writes is longer; a longer document is a .jsonl
_SIZE = re.compile(r"\s*(\d{1,15})\s*([KMG]?)i?B?\s*", re.IGNORECASE)
# msgpack (the wire, and the .msgpack form) holds integers in 64 bits, signed or not.
SMALLEST_INT, LARGEST_INT = -2**63, 2**64 - 1
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_limit() -> int:
    """The most bytes read as one piece, a stream's line or a whole document: ``DEFAULT_LIMIT``,
    or ``$CPL_TRACE_LIMIT`` (bytes, or with a K, M or G suffix)."""
    text = os.environ.get(LIMIT_VARIABLE)
    if text is None or not text.strip():
        return DEFAULT_LIMIT
    match = _SIZE.fullmatch(text)
    if not match or int(match[1]) == 0:
        raise TraceError(f"{LIMIT_VARIABLE}={text!r} is not a size: give bytes, or a number "
                         f"with K, M or G (e.g. 256M)", LIMIT_VARIABLE)
    return int(match[1]) << {"": 0, "K": 10, "M": 20, "G": 30}[match[2].upper()]


def size_text(size: int) -> str:
    """``64 MiB``, ``1000 bytes``: a limit as messages say it."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} bytes"


class Refused(CplError, ValueError):
    """JSON that decodes, but that no trace may hold; the message says why."""


class DuplicateKey(Refused):
    pass


class Unencodable(Refused):
    """A lone surrogate in a string: the message names the event and the field."""


def _no_duplicates(pairs):
    data = dict(pairs)
    if len(data) < len(pairs):  # some key came twice: say which
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(f"the key {key!r} occurs twice in one object")
            seen.add(key)
    return data


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


_decoder = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constant)


def decode_json(text: str):
    """One JSON value; ``ValueError`` (a ``Refused`` for a repeated key or a lone surrogate) or
    ``RecursionError``.  Only a ``\\uD800``-``\\uDFFF`` escape makes a surrogate, so only a
    text holding one is walked."""
    value = _decoder.decode(text)
    if "\\u" in text and _ESCAPED_SURROGATE.search(text):
        _refuse_surrogates(value)
    return value


def _unencodable(text) -> bool:
    return type(text) is str and not text.isascii() and _SURROGATE.search(text) is not None


def _refuse_surrogates(value) -> None:
    """``Unencodable`` naming where the first lone surrogate is: the event (in a document's
    ``events``, or a stream's event line) and its field, or the top-level field."""
    stack = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, (dict, list)):
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, inner in reversed(list(pairs)):
                if _unencodable(key):
                    stack.append((key, path + (key,)))
                stack.append((inner, path + (key,)))
        elif _unencodable(item):
            raise Unencodable(f"{_where(value, path)} holds {shown(item)}, a lone surrogate "
                              f"(a \\ud800-\\udfff escape without its pair), which UTF-8 "
                              f"cannot encode; remove it or give the pair")


def _where(value, path) -> str:
    field = path[0] if path else None
    if field == "events" and len(path) > 1 and isinstance(value, dict):
        event = value["events"][path[1]]
        name = event.get("id") if isinstance(event, dict) else None
        inner = f" {_quoted(path[2])}" if len(path) > 2 and isinstance(path[2], str) else ""
        return f"event #{path[1]} {shown(name)}:{inner}"
    if isinstance(value, dict) and isinstance(value.get("id"), str) and "end" not in value:
        return f"event {shown(value['id'])}:" + (f" {_quoted(field)}" if field is not None else "")
    if field == "end":  # a stream's last line holds the meta
        return '"meta" (the end line)'
    return _quoted(field) if isinstance(field, str) else "the value"


def _quoted(field, limit: int = 40) -> str:
    """A field's name as JSON spells it (escapes and all), cut after ``limit`` characters."""
    return json.dumps(field if len(field) <= limit else field[:limit] + "...")


def unpack(raw: bytes):
    """One msgpack value (``ValueError`` and others on bad bytes: msgpack raises several types)."""
    return msgpack.unpackb(raw, raw=False, strict_map_key=False)


def decode_problem(error: BaseException) -> str:
    """What a decoder's exception means, in words, for a message."""
    if isinstance(error, (RecursionError, msgpack.exceptions.StackError)):
        return TOO_DEEP
    if isinstance(error, MemoryError):
        return "too large to decode in memory"
    return str(error) or type(error).__name__


try:  # the C encoder ``json.dumps`` builds per call, built once: the same text, a third
    from json.encoder import c_make_encoder as _make, c_encode_basestring as _string
    _chunks = _make(None, None, _string, None, ": ", ", ", False, False, False)  # of the
    # time a trace's line took when the supervisor merged (bench/stops.py)

    def _encode(value) -> str:
        if isinstance(value, (dict, list)):
            return "".join(_chunks(value, 0))
        return _json_encode(value)
except ImportError:  # no C accelerator: the encoder, one reused
    _encode = None
_json_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
_encode = _encode or _json_encode


def encode_json(value) -> str:
    """Compact one-line JSON, unicode kept; ``ValueError`` for NaN/Infinity or a deep value.
    (``json.dumps`` with options builds an encoder per call: a tenth of a lifeline's
    per-event cost, bench/stream_throughput.py.)"""
    try:
        return _encode(value)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None


def value_problem(value, sequences=(list,), recorded: bool = False) -> str | None:
    """Why ``value`` is not a JSON value this format holds (``"is nan, which JSON cannot
    hold"``, …), or ``None``.  Iterative with a depth limit: hostile input cannot reach the
    stack's.  The writer passes ``sequences=(list, tuple)``: a tuple is written as a list.
    ``recorded``: a value a run records also fits msgpack, which the wire and the
    ``.msgpack`` form use: integers of at most 64 bits (a JSON trace may hold larger ones)."""
    stack = [(value, 0)]
    while stack:
        value, depth = stack.pop()
        if value is None or isinstance(value, bool):
            continue
        if isinstance(value, int):
            if recorded and not SMALLEST_INT <= value <= LARGEST_INT:
                return "holds an integer outside the 64 bits a run records (-2**63 to 2**64-1)"
            continue
        if isinstance(value, str):
            if _unencodable(value):
                return f"holds {shown(value)}, a lone surrogate, which UTF-8 cannot encode"
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                return f"is {value}, which JSON cannot hold"
            continue
        if isinstance(value, dict) or isinstance(value, sequences):
            if depth >= MAX_DEPTH:
                return f"is {TOO_DEEP}"
            if isinstance(value, dict):
                for key in value:
                    if not isinstance(key, str):
                        return f"holds an object with the key {key!r}; object keys are strings"
                    if _unencodable(key):
                        return f"holds the key {shown(key)}, a lone surrogate, which UTF-8 " \
                               f"cannot encode"
                value = value.values()
            stack.extend((item, depth + 1) for item in reversed(list(value)))  # in order
            continue
        return (f"holds a {type(value).__name__} value; values are string, number, boolean, "
                f"null, list or object")
    return None


def json_error(error: BaseException, origin: str, where: str = "") -> TraceError:
    """The ``TraceError`` for a JSON text that did not decode (``where``: e.g. ``line 3: ``)."""
    if isinstance(error, DuplicateKey):
        return TraceError(f"{where}not a valid trace: {error}; keep one of them", origin)
    if isinstance(error, Unencodable):
        return TraceError(f"{where}not a valid trace: {error}", origin)
    if isinstance(error, (RecursionError, MemoryError)):
        return TraceError(f"{where}not a trace this reader takes: a value is "
                          f"{decode_problem(error)}", origin)
    return TraceError(f"{where}not JSON ({decode_problem(error)})", origin)
