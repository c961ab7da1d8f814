"""The token channel of a LangGraph state: ``cpl: Tokens`` maps a receiving lifeline to
``{message id: token text}``.

Its reducer merges one superstep's writes (message ids are distinct, so they commute),
deletes consumed ids (mapped to ``None``) and never raises: whatever shape a caller or a
node wrote is filed under a receiver, or under :data:`UNADDRESSED`, to be refused there
rather than crash the graph.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

UNADDRESSED = "?"  # receiver of entries nobody can be found for; the next node to run refuses them


def merge_tokens(current: Any, update: Any) -> dict:
    """The token channel's reducer: add new tokens, delete consumed ones, never raise."""
    merged = dict(current) if isinstance(current, dict) else {}  # buckets copied when touched
    for receiver, entries in _addressed(update):
        bucket = merged[receiver] = dict(merged.get(receiver, ()))
        for key, text in entries:
            if text is None:
                bucket.pop(key, None)
            else:
                bucket[key] = text
        if not bucket:
            del merged[receiver]
    return merged


Tokens = Annotated[dict, merge_tokens]
"""The state channel's type: ``cpl: Tokens`` in a TypedDict state schema."""


def _addressed(update: Any) -> Iterable[tuple[str, list[tuple[str, Any]]]]:
    """An update's entries by receiver, whatever its shape: what cannot be attributed to
    a receiver goes to UNADDRESSED, keys that are not strings get a digest of the value."""
    if update is None:
        return
    if not isinstance(update, Mapping):
        yield UNADDRESSED, [(_digest(update), update)]
        return
    for receiver, bucket in update.items():
        if not isinstance(receiver, str):
            receiver, bucket = UNADDRESSED, [bucket]
        if isinstance(bucket, Mapping):
            yield receiver, [(k if isinstance(k, str) else _digest(v), v)
                             for k, v in bucket.items()]
        elif isinstance(bucket, (list, tuple)):
            yield receiver, [(_digest(v), v) for v in bucket if v is not None]
        elif bucket is not None:
            yield receiver, [(_digest(bucket), bucket)]


def _digest(value: Any) -> str:
    try:
        shown = repr(value)[:4096]
    except Exception:  # a hostile value's own __repr__ may raise anything
        shown = type(value).__name__
    return "raw:" + hashlib.sha1(shown.encode("utf-8", "replace")).hexdigest()[:16]
