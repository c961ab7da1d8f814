"""Bytes ↔ JSON values for traces: the decoders and encoders every trace form shares.

Decoding rejects a JSON object with a duplicate key, NaN and Infinity, and
turns the decoders' own failures on hostile input (nesting deeper than the
interpreter's stack, a msgpack stack overflow, a number too long to convert)
into a ``TraceError`` that says what it found, never a traceback.
"""

from __future__ import annotations

import json
import math

import msgpack

from ..errors import TraceError

FORMAT = "cpl-msc/1"
# Lists and objects inside one value: deeper than this is not data a run records, and every
# later recursive step (comparison, copy, encoding) would risk the interpreter's stack.
MAX_DEPTH = 100
TOO_DEEP = f"nested more than {MAX_DEPTH} lists or objects deep"


class DuplicateKey(ValueError):
    pass


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
    """One JSON value; ``ValueError`` (``DuplicateKey`` for a repeated key) or ``RecursionError``."""
    return _decoder.decode(text)


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


_encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode  # one, reused


def encode_json(value) -> str:
    """Compact one-line JSON, unicode kept; ``ValueError`` for NaN/Infinity or a deep value.
    (``json.dumps`` with options builds an encoder per call: a tenth of a lifeline's
    per-event cost, bench P4.)"""
    try:
        return _encode(value)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None


def value_problem(value, sequences=(list,)) -> str | None:
    """Why ``value`` is not a JSON value this format holds (``"is nan, which JSON cannot
    hold"``, …), or ``None``.  Iterative with a depth limit: hostile input cannot reach the
    stack's.  The writer passes ``sequences=(list, tuple)``: a tuple is written as a list."""
    stack = [(value, 0)]
    while stack:
        value, depth = stack.pop()
        if value is None or isinstance(value, (bool, int, str)):
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
    if isinstance(error, (RecursionError, MemoryError)):
        return TraceError(f"{where}not a trace this reader takes: a value is "
                          f"{decode_problem(error)}", origin)
    return TraceError(f"{where}not JSON ({decode_problem(error)})", origin)
