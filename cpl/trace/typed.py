"""Traces decoded typed, in C, and checked in bulk: the fast path for JSON documents
and the event lines of ``.jsonl`` streams.

``typed_trace`` decodes with msgspec into typed structs (field names, kinds,
types and count ranges checked in C while decoding), then makes the
checker's per-event checks as whole-column set operations.  It only has
to be right when it *accepts*: on any failure, or anything it cannot
decide (a duplicate key, a value that is not plain, an explicit ``null``),
it answers ``None`` and the caller runs the exact checker
(``cpl.trace.checker``), which words the problem as it always has.

Duplicate keys: msgspec keeps the last of two equal keys, silently.  Every
member of a JSON object has exactly one ``:`` outside strings, so the
document's colons are its members plus the colons inside its strings.
Re-encoding what was decoded (compact, no whitespace) gives the kept
members plus the colons of the kept strings; a dropped member takes at
least its own colon with it.  So the two counts are equal exactly when
nothing was dropped, provided no string spells a colon as ``\\u003a``
(such a document takes the exact path).
"""

from __future__ import annotations

import re
from itertools import chain
from operator import attrgetter, itemgetter
from types import MappingProxyType
from typing import Any, Annotated, Iterator, Literal, Optional, Union

import msgspec

from ..collector import collector_paused
from ..errors import TraceError
from .caps import TooManyLifelines
from .checker import Checker, _LONGEST_TIME
from .codec import value_problem
from .msc import Event, Trace

_EMPTY = MappingProxyType({})
_Name = Annotated[str, msgspec.Meta(min_length=1)]


class _Event(msgspec.Struct, gc=False, forbid_unknown_fields=True, omit_defaults=True):
    """An event's fields in ``Event``'s order."""
    id: _Name
    lifeline: str
    kind: Literal["act", "send", "recv", "choice"]
    to: Optional[str] = None
    msg: Optional[_Name] = None
    set: dict[str, Any] = _EMPTY  # absent: the empty read-only map Event() puts there
    label: Optional[str] = None
    guard: Optional[str] = None
    outcome: Optional[bool] = None
    vc: Optional[dict[str, Annotated[int, msgspec.Meta(ge=0)]]] = None
    time: Union[int, float, None] = None
    payload: Any = None


class _Document(msgspec.Struct, kw_only=True, gc=False, forbid_unknown_fields=True,
                omit_defaults=True):
    format: Any
    lifelines: Any
    vars: Any = None
    symbols: Any = None
    predicates: Any = None
    init: Any = None
    parts: Any = None
    events: list[_Event]
    meta: Any = None


_HEADER = ("format", "lifelines", "vars", "symbols", "predicates", "init", "parts")
_decode = msgspec.json.Decoder(_Document).decode
_decode_event = msgspec.json.Decoder(_Event).decode
_encode = msgspec.json.Encoder().encode
_ESCAPED_COLON = re.compile(rb"\\u003[aA]")
_PLAIN = frozenset((str, int, bool, type(None)))
_astuple = msgspec.structs.astuple
_new = tuple.__new__
_first = itemgetter(0)
_id = attrgetter("id")


def typed_trace(raw: bytes, origin: str) -> Trace | None:
    """The checked ``Trace`` of a JSON document, or ``None``: let the exact checker decide."""
    pending = typed_document(raw, origin)
    return None if pending is None else pending.trace()


class Declined(Exception):
    """The fast path cannot decide: read the trace again with the exact checker."""


def typed_document(raw: bytes, origin: str) -> Pending | None:
    """A JSON document decoded and its header checked, its events not yet; or ``None``."""
    if raw[:3] == b"\xef\xbb\xbf":
        raw = raw[3:]
    if b"\\u003" in raw and _ESCAPED_COLON.search(raw):
        return None
    try:
        document = _decode(raw)
    except Exception:  # not JSON, wrong types, too deep, …: the exact path says which
        return None
    if _encode(document).count(b":") != raw.count(b":"):  # a repeated key, or a null
        return None
    checker = Checker(origin, owned=True)
    try:
        checker.header({name: value for name in _HEADER
                        if (value := getattr(document, name)) is not None})
        meta = checker.meta(document.meta)
    except TooManyLifelines:
        raise  # the exact checker would say the same, after reading it all again
    except TraceError:
        return None
    return Pending(checker, meta, document.events)


class Pending:
    """A document whose header passed and whose events are still msgspec structs:
    ``trace()`` builds the ``Trace``; ``stepped(step)`` hands each event to ``step``
    instead (``cpl eval``: no ``Event`` is built, the monitors step as it checks)."""

    def __init__(self, checker: Checker, meta, decoded: list):
        self.checker, self.meta, self._decoded = checker, meta, decoded

    lifelines = property(lambda self: self.checker.lifelines)
    init = property(lambda self: self.checker.init)
    vars = property(lambda self: self.checker.vars)

    def schema(self, predicates=None):
        """``Trace.schema``, for a document that declares its ``vars`` (else ``None``: the
        names its events assign are known only once they are checked)."""
        checker = self.checker
        return None if checker.vars is None else Trace(
            checker.lifelines, checker.init, (), checker.vars, checker.symbols,
            predicates=checker.predicates).schema(predicates)

    def trace(self) -> Trace | None:
        """The ``Trace``, or ``None`` if an event does not pass."""
        events, checker = _events(self._decoded, self.checker), self.checker
        if events is None:
            return None
        return Trace(checker.lifelines, checker.init, events, checker.vars, checker.symbols,
                     self.meta, predicates=checker.predicates)

    def stepped(self, step) -> Iterator[int]:
        """``step(id, lifeline, kind, msg, set)`` for every event, in order, each after its
        own checks (``set`` a plain dict, or the empty read-only map); ``Declined`` if the
        document does not pass as a whole, found maybe after some steps.  A generator that
        yields nothing, like ``JsonLines.stepped`` with no batch to drain."""
        with collector_paused():  # the values kept are a million acyclic objects too
            if _events(self._decoded, self.checker, None, step) is None:
                raise Declined
        yield from ()


BATCH = 2048  # lines of a stream decoded and checked together
BATCH_BYTES = 1 << 20  # and at most about this many bytes of them: a line with a clock of
# 2,000 lifelines is 24 kB, and 2,048 of them decoded took 800 MB (before this check)


def typed_stream(lines: Iterator, checker: Checker, step=None):
    """Yield the events of a stream's numbered event ``lines`` (after its header) a batch
    at a time (with ``step``: hand them to it, yield each batch's count); return ``None``
    at their end, the end line ``(number, bytes)`` when it comes (the caller reads it), or
    the count of events yielded when a batch is declined (``stream_events``)."""
    in_transit, done, batch, pending, size = {}, 0, [], None, 0
    for number, line in lines:
        if line.startswith(b'{"end"'):
            pending = (number, line)
            break
        batch.append(line)
        size += len(line)
        if len(batch) == BATCH or size >= BATCH_BYTES:
            with collector_paused():  # only this batch's objects are built in the pause
                events = stream_events(batch, checker, in_transit, step)
            if events is None:
                return done
            if step is None:
                yield from events
            else:
                yield events
            done, batch, size = done + (len(events) if step is None else events), [], 0
    if batch:
        with collector_paused():
            events = stream_events(batch, checker, in_transit, step)
        if events is None:
            return done
        if step is None:
            yield from events
        else:
            yield events
    return pending


def stream_events(lines: list, checker: Checker, in_transit: dict,
                  step=None) -> list | int | None:
    """A batch of a ``.jsonl`` stream's event lines (bytes, each with its newline) as
    ``Event``s, continuing ``checker``'s state (its ids, messages and count) and the
    messages ``in_transit`` (msg -> addressee) of the batches before; or ``None``.  After
    ``None`` the state is spoiled: the caller checks the stream again from its start.
    With ``step``: each event handed to it, and their count (``_events``)."""
    raw = b"".join(lines)
    if b"\\u003" in raw and _ESCAPED_COLON.search(raw):
        return None
    try:  # a line at a time: a line that holds two values, or none, is the checker's
        decoded = list(map(_decode_event, lines))
    except Exception:
        return None
    if _encode(decoded).count(b":") != raw.count(b":"):
        return None
    return _events(decoded, checker, in_transit, step)


def _events(decoded: list, checker: Checker, in_transit: dict | None = None,
            step=None) -> list | int | None:
    """The events as ``Event``s if the checker accepts every one of them, else ``None``;
    with ``step``, their count, each handed to ``step`` once its own checks pass
    (``Pending.stepped``: no ``Event`` built, a plain ``set`` dict).
    msgspec checked each event's fields and their types; this is the rest of
    ``Checker.event``, in one loop, with the rarely used fields looked at only when set.
    A stream's ids and message ids go into the checker's ``Issued`` sets, as
    ``Checker.event`` puts them (``Issued.fresh`` and ``add`` inline): a stream's next
    batch is checked against them.  A document's ids are only checked unique, at once
    (``in_transit`` None)."""
    known, empty, wrap = checker.known, _EMPTY, MappingProxyType
    ids, messages = checker.ids, checker.messages
    expect, counts, other = ids.expect, ids.count, ids.other
    sending, sends, sent = messages.expect, messages.count, messages.other
    whole = in_transit is None  # a document: ids are checked at once (no Issued to keep)
    in_transit = {} if whole else in_transit
    events, stores = [], []
    append, store = events.append, stores.append
    for row in map(_astuple, decoded):
        (event_id, lifeline, kind, to, msg, updates, label, guard, outcome, vc, time,
         payload) = row
        if lifeline not in known:
            return None
        if not whole:  # Issued.fresh and add, inline
            if event_id in other:
                return None
            if event_id == expect[lifeline]:
                ids.used = True
                n = counts[lifeline] + 1
                counts[lifeline] = n
                expect[lifeline] = f"{lifeline}.{n + 1}"
            elif ids.used and not ids.fresh(event_id):
                return None
            else:
                other.add(event_id)
        if kind == "act":
            if to is not None or msg is not None:
                return None
        elif kind == "send":
            if (to not in known or to == lifeline or msg is None or updates is not empty
                    or msg in sent):
                return None
            if msg == sending[lifeline]:  # messages.add, inline
                messages.used = True
                n = sends[lifeline] + 1
                sends[lifeline] = n
                sending[lifeline] = f"{lifeline}:{n + 1}"
            elif messages.used and not messages.fresh(msg):
                return None
            else:
                sent.add(msg)
            in_transit[msg] = to
        elif kind == "recv":
            if to is not None or in_transit.pop(msg, None) != lifeline:
                return None
        elif to is not None or msg is not None or updates is not empty:
            return None
        if (guard is not None or outcome is not None) and kind != "choice":
            return None
        if vc is None and time is None and payload is None:
            if updates is not empty:
                store(updates)
                if step is None:
                    row = (event_id, lifeline, kind, to, msg, wrap(updates) if updates else empty,
                           label, guard, outcome, None, None, None)
        else:
            if updates is not empty:
                store(updates)
            checked = _rare(row, known)
            if checked is None:
                return None
            row = checked
        if step is None:
            append(_new(Event, row))
        else:
            step(event_id, lifeline, kind, msg, updates)
    count = len(events) if step is None else len(decoded)
    if whole and len(set(map(_first, events) if step is None else map(_id, decoded))) != count:
        return None
    if stores:
        if not _plain_stores(stores, checker.declared):
            return None
        if checker.declared is None:  # a stream's schema: the names its events assign
            for updates in stores:
                checker.assigned.update(dict.fromkeys(updates))
    checker.count += count
    return events if step is None else count


def _rare(row: tuple, known) -> tuple | None:
    """The row with ``set`` and ``vc`` read-only, if its ``vc``, ``time`` and ``payload``
    pass; ``None`` if not."""
    (event_id, lifeline, kind, to, msg, updates, label, guard, outcome, vc, time,
     payload) = row
    if vc is not None:
        if not known.issuperset(vc):
            return None
        vc = MappingProxyType(vc)
    if time is not None and not -_LONGEST_TIME <= time <= _LONGEST_TIME:
        return None
    if payload is not None and type(payload) not in _PLAIN and value_problem(payload):
        return None
    if updates is not _EMPTY:
        updates = MappingProxyType(updates) if updates else _EMPTY
    return (event_id, lifeline, kind, to, msg, updates, label, guard, outcome, vc, time,
            payload)


def _plain_stores(stores: list, declared) -> bool:
    """Every ``set`` assigns declared (else non-empty) names JSON values."""
    names = set(chain.from_iterable(stores))
    if not (names <= declared if declared is not None else "" not in names):
        return False
    return (_PLAIN.issuperset(map(type, chain.from_iterable(map(dict.values, stores))))
            or not any(map(value_problem, stores)))
