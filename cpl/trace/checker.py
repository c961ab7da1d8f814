"""Checking ``cpl-msc/1`` traces (docs/traces.md): one ``Checker`` for documents and streams.

The checker takes the header (the document without ``events``, checked by
``cpl.trace.header``), then events one at a time, then ``meta``: a JSON
document is checked as a header and its list, a ``.jsonl`` stream line by line
with the same code and messages.  Its state is what later events are checked
against: the header's names, the event ids, the message ids sent, and the sends
still in transit; nothing per event beyond that.

A malformed trace is rejected as a whole, with the first problem in list
order: a guard value computed from a broken MSC would be meaningless, so
nothing is evaluated from it.  Messages name the event (``#index`` in the
``events`` list, 0-based, and its id) and say what to do.  Wording a problem
about *another* event (the earlier duplicate, the later send) asks ``scan``
for the raw events again (``cpl.trace.wording``), so the fast path keeps no
index per event.
"""

from __future__ import annotations

import sys
from types import MappingProxyType

from ..errors import TraceError
from ..lang import did_you_mean
from .codec import FORMAT
from .header import check_lifeline, check_store, check_value, read_header, type_name
from .issued import Issued
from .msc import KINDS, Event, Trace
from .wording import first as _first, head as _head, receive_problem, shown

_LONGEST_TIME = sys.float_info.max  # seconds: any finite float; a longer integer has no float
_EVENT_FIELDS = Event._fields
_EVENT_FIELD_SET = frozenset(_EVENT_FIELDS)
_PLAIN_TYPE_SET = frozenset((str, int, bool, type(None)))  # values that need no further check
_INT, _STR = frozenset((int,)), frozenset((str,))
_NO_UPDATES = MappingProxyType({})
_build = Event.checked

__all__ = ["FORMAT", "Checker", "parse_trace"]


def parse_trace(data, origin: str = "trace", *, owned: bool = False) -> Trace:
    """Validate a decoded document and build the ``Trace``; ``TraceError`` on the first problem.
    ``owned``: ``data`` was decoded for this call alone, so its maps need no copies."""
    checker = Checker(origin, owned=owned)
    checker.header(data)
    if "events" not in data:
        raise checker.fail('missing "events": list the events (it may be empty)')
    raw = data["events"]
    if not isinstance(raw, list):
        raise checker.fail(f'"events" must be a list, found {type_name(raw)}')
    checker.scan = lambda: iter(raw)
    event = checker.event
    events = [event(item) for item in raw]
    meta = checker.meta(data.get("meta"))
    return Trace(checker.lifelines, checker.init, events, checker.vars, checker.symbols, meta,
                 predicates=checker.predicates)


class Checker:
    """Checks a trace piece by piece: ``header``, then ``event`` per event in order, ``meta``.

    ``scan()``, if set, iterates the raw events from the first: used only to word a
    problem that names another event.  ``assigned`` collects the variable names the
    events ``set`` when the header declares no ``vars`` (a stream's schema needs them).
    """

    def __init__(self, origin: str = "trace", scan=None, owned: bool = False):
        self.origin = origin
        self.scan = scan
        self.owned = owned  # the raw events are nobody else's: build Events without copies
        self.lifelines: tuple[str, ...] = ()
        self.known: frozenset[str] = frozenset()  # the lifelines, for a quick membership test
        self.declared: frozenset[str] | None = None
        self.vars: tuple[str, ...] | None = None
        self.symbols: tuple[str, ...] | None = None
        self.predicates: tuple[str, ...] | None = None
        self.init: dict = {}
        self.parts: str | None = None  # the folder of a run's lifeline logs, beside the trace
        self.count = 0  # events checked so far: the index of the next one
        self.ids = Issued((), ".")
        self.messages = Issued((), ":")  # every msg id sent so far
        self.open: dict[str, tuple[int, str, str]] = {}  # in transit: msg -> (index, send id, to)
        self.assigned: dict[str, None] = {}

    def fail(self, message: str, index: int | None = None, event_id: str | None = None):
        return TraceError(message, self.origin, index, event_id)

    # ------------------------------------------------------- top level

    def header(self, data, stream: bool = False) -> None:
        """The top-level fields but ``events`` and ``meta`` (a stream's first line), checked
        by ``cpl.trace.header``: what the events are then checked against."""
        found = read_header(data, self.origin, stream)
        self.lifelines, self.known = found.lifelines, frozenset(found.lifelines)
        self.ids, self.messages = Issued(self.lifelines, "."), Issued(self.lifelines, ":")
        self.declared = None if found.vars is None else frozenset(found.vars)
        self.vars, self.symbols, self.predicates = found.vars, found.symbols, found.predicates
        self.init, self.parts = found.init, found.parts

    def meta(self, meta):
        if meta is not None and not isinstance(meta, dict):
            raise self.fail(f'"meta" must be an object, found {type_name(meta)}')
        if meta is not None:
            check_value(meta, '"meta"', self.origin)
        return meta

    def variables(self) -> tuple[str, ...]:
        """Declared ``vars``, or the names ``init`` and the events checked so far assign."""
        if self.vars is not None:
            return self.vars
        names: dict[str, None] = {}
        for store in self.init.values():
            names.update(dict.fromkeys(store))
        names.update(self.assigned)
        return tuple(names)

    # ----------------------------------------------------------- events

    def event(self, item) -> Event:
        """Check the next event and build it.  This runs for every event of every trace
        loaded, so the wording of a problem (and the ``event #3 't1' (A)`` that names the
        event) is only put together when there is one."""
        index = self.count
        if not isinstance(item, dict):
            raise self.fail(f"event #{index}: expected an object, found {type_name(item)}", index)
        event_id = item.get("id")
        if not isinstance(event_id, str) or not event_id:
            found = "it is missing" if event_id is None else f"found {event_id!r}"
            raise self.fail(f"event #{index}: \"id\" must be a non-empty string ({found})", index)
        if not item.keys() <= _EVENT_FIELD_SET:
            key = next(key for key in item if key not in _EVENT_FIELD_SET)
            raise self.fail(f"{_head(index, event_id)}: unknown field {key!r}"
                            f"{did_you_mean(key, _EVENT_FIELDS)} (fields are "
                            f"{', '.join(_EVENT_FIELDS)})", index, event_id)
        ids, lifeline = self.ids, item.get("lifeline")  # Issued.fresh, inline
        counted = type(lifeline) is str and event_id == ids.expect.get(lifeline)
        if (event_id in ids.other
                or (not counted and ids.used and not ids.fresh(event_id))):
            first, _ = _first(self, index, id=event_id)
            raise self.fail(f"{_head(index, event_id)}: duplicate event id {event_id!r} (also "
                            f"event #{first}); give every event a unique id",
                            index, event_id)
        if "lifeline" not in item:
            raise self.fail(f"{_head(index, event_id)}: missing \"lifeline\"", index, event_id)
        lifeline = item["lifeline"]
        if not (isinstance(lifeline, str) and lifeline in self.known):
            check_lifeline(lifeline, self.lifelines, _head(index, event_id), self.origin, index,
                           event_id)  # raises
        kind = item.get("kind")
        if kind not in KINDS:
            found = "missing \"kind\"" if kind is None else f"unknown kind {kind!r}"
            raise self.bad(index, event_id, lifeline, f"{found}"
                           f"{did_you_mean(kind, KINDS) if kind else ''}; expected act, send, recv "
                           f"or choice")
        get = item.get
        to, msg, updates = get("to"), get("msg"), get("set")
        if kind == "send":
            if to is None or msg is None:
                missing = "to" if to is None else "msg"
                raise self.bad(index, event_id, lifeline, f'a send needs "{missing}" (the '
                               f'receiving lifeline and a message id)')
            if not (isinstance(to, str) and to in self.known):
                check_lifeline(to, self.lifelines, f'{_head(index, event_id, lifeline)}: "to"',
                               self.origin, index, event_id)  # raises
            if to == lifeline:
                raise self.bad(index, event_id, lifeline, f"sends to its own lifeline "
                               f"{lifeline!r}; a message goes to another lifeline (use an act "
                               f"event for local steps)")
        elif to is not None:
            raise self.bad(index, event_id, lifeline, f'"to" is only for a send, not {_a(kind)}')
        if msg is None:
            if kind == "recv":
                raise self.bad(index, event_id, lifeline,
                               'a recv needs "msg": the id of the message it receives')
        elif kind in ("act", "choice"):
            raise self.bad(index, event_id, lifeline,
                           f'"msg" is only for a send or recv, not {_a(kind)}')
        elif not isinstance(msg, str) or not msg:
            raise self.bad(index, event_id, lifeline,
                           f'"msg" must be a non-empty string, found {msg!r}')
        if updates is not None:
            if kind in ("send", "choice"):
                raise self.bad(index, event_id, lifeline, f"a {kind} cannot \"set\" variables "
                               f"(only act and recv update the store); put the assignment on "
                               f"an act event before it")
            if not self.plain_store(updates):
                check_store(updates, f'{_head(index, event_id, lifeline)}: "set"', self.declared,
                            self.origin, index, event_id)
        label, guard, outcome = get("label"), get("guard"), get("outcome")
        if label is not None or guard is not None or outcome is not None:
            self.decision_fields(index, event_id, lifeline, kind, label, guard, outcome)
        vc, time, payload = get("vc"), get("time"), get("payload")
        if vc is not None and not (type(vc) is dict and vc.keys() <= self.known
                                   and {*map(type, vc.values())} <= _INT
                                   and min(vc.values(), default=0) >= 0):
            self.clock(vc, _head(index, event_id, lifeline), index, event_id)  # raises
        if time is not None and (isinstance(time, bool) or not isinstance(time, (int, float))
                                 or not -_LONGEST_TIME <= time <= _LONGEST_TIME):
            raise self.bad(index, event_id, lifeline,
                           f'"time" must be a number of seconds, found {shown(time)}')
        if payload is not None:
            check_value(payload, f'{_head(index, event_id, lifeline)}: "payload"', self.origin,
                        index, event_id)
        if kind == "send":
            sent = self.messages
            if sent.fresh(msg, lifeline):
                sent.add(msg, lifeline)
            else:
                first, other = _first(self, index, kind="send", msg=msg)
                raise self.bad(index, event_id, lifeline, f"sends message {msg!r}, which event "
                               f"#{first} {other!r} already sends; message ids are unique")
            self.open[msg] = (index, event_id, to)
        elif updates and self.declared is None:
            self.assigned.update(dict.fromkeys(updates))
        if counted:  # Issued.add, inline
            ids.used = True
            n = ids.count[lifeline] + 1
            ids.count[lifeline] = n
            ids.expect[lifeline] = f"{lifeline}.{n + 1}"
        else:
            ids.other.add(event_id)
        self.count = index + 1
        # Copies of the maps, as Event() makes, so a caller's document can change afterwards;
        # a document decoded here has no other owner (``owned``) and is wrapped as it is.
        if not self.owned:
            updates = dict(updates) if updates else None
            vc = None if vc is None else dict(vc)
        event = _build((event_id, lifeline, kind, to, msg,
                        MappingProxyType(updates) if updates else _NO_UPDATES, label, guard,
                        outcome, None if vc is None else MappingProxyType(vc), time, payload))
        if kind == "recv":
            found = self.open.pop(msg, None)
            if found is None or found[2] != lifeline:
                raise receive_problem(self, index, event, found)
        return event

    def decision_fields(self, index, event_id, lifeline, kind, label, guard, outcome) -> None:
        """``guard`` and ``outcome`` belong to a choice; ``label`` and ``guard`` are text."""
        for field, value in (("guard", guard), ("outcome", outcome)):
            if value is not None and kind != "choice":
                raise self.bad(index, event_id, lifeline,
                               f'"{field}" is only for a choice, not {_a(kind)}')
        for field, value in (("label", label), ("guard", guard)):
            if value is not None and not isinstance(value, str):
                raise self.bad(index, event_id, lifeline,
                               f'"{field}" must be a string, found {type_name(value)}')
        if outcome is not None and not isinstance(outcome, bool):
            raise self.bad(index, event_id, lifeline,
                           f'"outcome" must be true or false, found {outcome!r}')

    def bad(self, index: int, event_id: str, lifeline: str, message: str) -> TraceError:
        """A problem with event #index, named the way every event message names it."""
        return self.fail(f"{_head(index, event_id, lifeline)}: {message}", index, event_id)

    def plain_store(self, store) -> bool:
        """The usual ``set``: declared names → strings, integers, booleans or null.  Such a
        store passes ``store`` unchanged; anything else goes there to be checked in full.
        Set operations, so the loop over the items runs in C."""
        if type(store) is not dict or not {*map(type, store.values())} <= _PLAIN_TYPE_SET:
            return False
        declared = self.declared
        if declared is not None:
            return store.keys() <= declared  # declared names are non-empty strings
        return {*map(type, store)} <= _STR and "" not in store

    def clock(self, vc, head: str, index: int, event_id: str) -> None:
        if not isinstance(vc, dict):
            raise self.fail(f'{head}: "vc" must be an object lifeline → count, found '
                            f"{type_name(vc)}", index, event_id)
        for name, count in vc.items():
            check_lifeline(name, self.lifelines, f'{head}: "vc"', self.origin, index, event_id)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise self.fail(f'{head}: "vc" of {name} must be a count (an integer ≥ 0), '
                                f"found {count!r}", index, event_id)


def _a(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind
