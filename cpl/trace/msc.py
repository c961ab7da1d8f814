"""What an MSC is: lifelines, their events in a linear extension, and messages.

A ``Trace`` is the in-memory form of a ``cpl-msc/1`` document (see
``cpl.trace.files`` for reading, validating and writing it).  It is a frozen
value; derived structure (local order, message matching, valuations) is
computed once on demand.  The causal order itself is *not* computed here:
each evaluator derives it its own way (the reference evaluator by graph
reachability over ``predecessors``, the monitor by vector clocks), so the two
stay independent.

Stored values are JSON values.  Lists and objects are opaque and compared by
equality, so nothing here hashes them: ``set``, ``init``, ``vc`` and
``payload`` take no part in an event's hash.

:func:`msc_key` says when two traces are the same MSC, whatever their
linearisation: ``cpl verify`` runs each key once, and its tests compare keys.
"""

from __future__ import annotations

import collections
import functools
import json
import operator
from types import MappingProxyType
from typing import Mapping

import attrs

from ..lang import Schema

KINDS = ("act", "send", "recv", "choice")
_EMPTY: Mapping = MappingProxyType({})


def _frozen_map(value) -> Mapping:
    """A read-only copy (``None`` → empty), so an event cannot change after loading."""
    return MappingProxyType(dict(value)) if value else _EMPTY


def _optional_map(value) -> Mapping | None:
    return None if value is None else MappingProxyType(dict(value))


def _frozen_init(value) -> Mapping:
    return MappingProxyType({name: _frozen_map(store) for name, store in (value or {}).items()})


def _optional_names(value) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


_EVENT_FIELDS = ("id", "lifeline", "kind", "to", "msg", "set", "label", "guard", "outcome", "vc",
                 "time", "payload")
_HASHED = operator.itemgetter(0, 1, 2, 3, 4, 6, 7, 8, 10)  # not set, vc, payload: maps and lists


class Event(collections.namedtuple("_EventFields", _EVENT_FIELDS)):
    """One event of one lifeline.  ``set`` reads like a dict but cannot be changed.

    A tuple underneath, not an attrs class: a loaded trace builds one per event,
    and a tuple is built in a tenth of the time of a frozen attrs instance with
    converters (bench/eval_trace.py).  Read it by attribute; it compares equal
    only to another ``Event`` and is not ordered, like the attrs class it replaces.
    """

    __slots__ = ()

    id: str
    lifeline: str
    kind: str  # "act" | "send" | "recv" | "choice"
    to: str | None  # receiver of a send
    msg: str | None  # message id of a send or recv
    set: Mapping[str, object]
    label: str | None
    guard: str | None  # choice: the guard's canonical text
    outcome: bool | None  # choice: the recorded value of the guard
    vc: Mapping[str, int] | None
    time: float | None
    payload: object

    def __new__(cls, id: str, lifeline: str, kind: str, to: str | None = None,
                msg: str | None = None, set: Mapping | None = _EMPTY, label: str | None = None,
                guard: str | None = None, outcome: bool | None = None, vc: Mapping | None = None,
                time: float | None = None, payload: object = None):
        return tuple.__new__(cls, (id, lifeline, kind, to, msg, _frozen_map(set), label, guard,
                                   outcome, _optional_map(vc), time, payload))

    @classmethod
    def checked(cls, fields: tuple) -> Event:
        """The 12 field values in order, already in final form (``set`` a read-only map,
        ``vc`` one or ``None``) and owned by nobody else: the loader's way past the copies."""
        return tuple.__new__(cls, fields)

    def __eq__(self, other):
        return type(other) is type(self) and tuple.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(_HASHED(self))

    def _unordered(self, other):
        return NotImplemented

    __lt__ = __le__ = __gt__ = __ge__ = _unordered

    def to_dict(self) -> dict:
        """JSON-ready, omitting absent optional fields (the inverse of loading)."""
        # Unrolled in field order: a lifeline's log calls it per event (bench/stream_throughput.py).
        id, lifeline, kind, to, msg, set, label, guard, outcome, vc, time, payload = self
        data: dict = {"id": id, "lifeline": lifeline, "kind": kind}
        if to is not None:
            data["to"] = to
        if msg is not None:
            data["msg"] = msg
        if set:
            data["set"] = dict(set)
        if label is not None:
            data["label"] = label
        if guard is not None:
            data["guard"] = guard
        if outcome is not None:
            data["outcome"] = outcome
        if vc is not None:
            data["vc"] = dict(vc)
        if time is not None:
            data["time"] = time
        if payload is not None:
            data["payload"] = payload
        return data


def _as_tuple(values) -> tuple:
    """``tuple`` as a converter: a function, because attrs reads a converter's signature and
    a builtin's is text that ``inspect`` tokenizes (~7 ms at start-up, for tokenize's regex)."""
    return tuple(values)


@attrs.frozen
class Trace:
    """An MSC: ``events`` in an order that is a linear extension of the causal order."""

    lifelines: tuple[str, ...] = attrs.field(converter=_as_tuple)
    init: Mapping[str, Mapping[str, object]] = attrs.field(
        factory=dict, converter=_frozen_init, hash=False)
    events: tuple[Event, ...] = attrs.field(factory=tuple, converter=_as_tuple)
    vars: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_names)
    symbols: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_names)
    # Run information a recorder may attach (seed, which lifeline failed, …); never evaluated.
    meta: Mapping[str, object] | None = attrs.field(default=None, converter=_optional_map,
                                                    hash=False)
    # The application predicates the recorded guards call (not the built-ins): what an
    # offline tool must load before it can re-check them.  ``None``: the trace does not say.
    predicates: tuple[str, ...] | None = attrs.field(default=None, kw_only=True,
                                                     converter=_optional_names)

    # ------------------------------------------------------------ names

    def variables(self) -> tuple[str, ...]:
        """Declared ``vars``, or else the names any ``init`` or ``set`` assigns, first use first."""
        if self.vars is not None:
            return self.vars
        names: dict[str, None] = {}
        for store in self.init.values():
            names.update(dict.fromkeys(store))
        for event in self.events:
            names.update(dict.fromkeys(event.set))
        return tuple(names)

    def schema(self, predicates=None) -> Schema:
        """What a guard evaluated on this trace may name."""
        extra = {} if predicates is None else {"predicates": predicates}
        return Schema(lifelines=self.lifelines, variables=frozenset(self.variables()),
                      symbols=None if self.symbols is None else frozenset(self.symbols), **extra)

    # ------------------------------------------------------ local order

    @functools.cached_property
    def _ids(self) -> dict[str, int]:
        return {event.id: index for index, event in enumerate(self.events)}

    @functools.cached_property
    def _local(self) -> tuple[dict[str, tuple[int, ...]], tuple[int, ...]]:
        order: dict[str, list[int]] = {name: [] for name in self.lifelines}
        positions = []
        for index, event in enumerate(self.events):
            mine = order.setdefault(event.lifeline, [])
            positions.append(len(mine))
            mine.append(index)
        return {name: tuple(indices) for name, indices in order.items()}, tuple(positions)

    def index_of(self, event_id: str) -> int:
        """Position of the event in ``events`` (``KeyError`` if there is none)."""
        return self._ids[event_id]

    def event(self, event_id: str) -> Event:
        return self.events[self._ids[event_id]]

    def local_events(self, lifeline: str) -> tuple[int, ...]:
        """Indices of the lifeline's events, in local order."""
        return self._local[0].get(lifeline, ())

    def local_index(self) -> tuple[int, ...]:
        """For each event, its 0-based position in its own lifeline's local order."""
        return self._local[1]

    def previous(self, index: int) -> int | None:
        """``prev(e)``: index of the previous event on e's lifeline, if any."""
        position = self._local[1][index]
        return self.local_events(self.events[index].lifeline)[position - 1] if position else None

    # --------------------------------------------------------- messages

    @functools.cached_property
    def _messages(self) -> tuple[dict[str, int], dict[str, int]]:
        sends: dict[str, int] = {}
        receives: dict[str, int] = {}
        for index, event in enumerate(self.events):
            if event.kind == "send":
                sends.setdefault(event.msg, index)
            elif event.kind == "recv":
                receives.setdefault(event.msg, index)
        return sends, receives

    def send_index(self, msg_id: str) -> int | None:
        return self._messages[0].get(msg_id)

    def send_of(self, msg_id: str) -> Event | None:
        """The send event of a message, or ``None``."""
        index = self.send_index(msg_id)
        return None if index is None else self.events[index]

    def receive_of(self, msg_id: str) -> Event | None:
        """The receive event of a message, or ``None`` while it is in transit."""
        index = self._messages[1].get(msg_id)
        return None if index is None else self.events[index]

    def in_transit(self) -> tuple[Event, ...]:
        """Sends that no event receives."""
        return tuple(e for e in self.events if e.kind == "send" and e.msg not in self._messages[1])

    def predecessors(self, index: int) -> tuple[int, ...]:
        """Immediate causal predecessors: the previous local event and, for a recv, its send."""
        found = []
        previous = self.previous(index)
        if previous is not None:
            found.append(previous)
        event = self.events[index]
        if event.kind == "recv":
            send = self.send_index(event.msg)
            if send is not None:
                found.append(send)
        return tuple(found)

    # ------------------------------------------------------- valuations

    @functools.cached_property
    def _valuations(self) -> tuple[Mapping[str, object], ...]:
        stores = {name: dict(store) for name, store in self.init.items()}
        after = []
        for event in self.events:
            store = stores.setdefault(event.lifeline, {})
            store.update(event.set)
            after.append(MappingProxyType(dict(store)))
        return tuple(after)

    def valuations(self) -> tuple[Mapping[str, object], ...]:
        """Per event, the lifeline's store after it: its ``init`` updated by its ``set``s so far."""
        return self._valuations

    # ------------------------------------------------------------ output

    def to_dict(self) -> dict:
        """The ``cpl-msc/1`` document (JSON-ready)."""
        data: dict = {"format": "cpl-msc/1", "lifelines": list(self.lifelines)}
        if self.vars is not None:
            data["vars"] = list(self.vars)
        if self.symbols is not None:
            data["symbols"] = list(self.symbols)
        if self.predicates is not None:
            data["predicates"] = list(self.predicates)
        if self.init:
            data["init"] = {name: dict(store) for name, store in self.init.items()}
        data["events"] = [event.to_dict() for event in self.events]
        if self.meta is not None:
            data["meta"] = dict(self.meta)
        return data


# ------------------------------------------------------------ identity


def msc_key(trace: Trace) -> tuple:
    """What makes ``trace`` the MSC it is, as a hashable value: equal keys, same MSC.

    Per lifeline, its events in local order, each as its kind, label, guard and
    outcome, the values it set and carried, its receiver, and, for a receive, the
    send it takes (the sender and which of its sends, counted from 0), and the
    initial stores.  Not the events' ids, clocks or times, nor how the lifelines'
    events were interleaved: a guard's value depends only on its causal past, so two
    runs with one key decided everything alike.  Values compare as JSON, dicts by content.
    """
    sends: dict = {}  # msg id -> (sender, its n-th send)
    counts: dict[str, int] = {}
    for event in trace.events:
        if event.kind == "send" and event.msg not in sends:
            count = counts.get(event.lifeline, 0)
            counts[event.lifeline] = count + 1
            sends[event.msg] = (event.lifeline, count)
    lines: dict[str, list] = {name: [] for name in trace.lifelines}
    for _, lifeline, kind, to, msg, values, label, guard, outcome, _, _, payload in trace.events:
        taken = sends.get(msg, ("", msg)) if kind == "recv" else None  # ("", id): never sent
        lines.setdefault(lifeline, []).append(
            (kind, label, guard, outcome, _canonical(values) if values else None,
             None if payload is None else _canonical(payload), to, taken))
    return (tuple(sorted((name, tuple(events)) for name, events in lines.items())),
            _canonical({name: dict(store) for name, store in trace.init.items() if store}))


def _canonical(value) -> str:
    """A JSON value as text that is equal exactly when the values are: keys sorted,
    ``1``, ``1.0`` and ``true`` apart.  Keys of mixed types (never in a JSON value) by repr."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          default=_plain)
    except TypeError:  # keys that do not sort together
        return repr(_sorted_maps(value))


def _plain(value):
    """A read-only store (``Event.set``) as the dict it reads as; anything else by repr."""
    return dict(value) if isinstance(value, Mapping) else repr(value)


def _sorted_maps(value):
    if isinstance(value, Mapping):
        return sorted(((repr(k), _sorted_maps(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return [_sorted_maps(v) for v in value]
    return value
