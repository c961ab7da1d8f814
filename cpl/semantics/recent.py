"""Explaining from a stream: keep the last events before the one explained, not the trace.

An explanation reads the causal past of one event, and a guard is nearly always
decided by its last few rounds.  So a pass over the stream keeps only the last
``size`` events up to the event (``Recent``: a ring, with the stores the dropped
events left and how many each lifeline dropped), and counts what comes after it.
Every path between two kept events runs through kept events (the trace order
is a linear extension), so the slice's causal order and values are the whole
trace's.  If the explanation still walks past the slice's start
(``BeyondSlice``: a guard like ``H(…)`` that needs all of a lifeline's past),
the stream is read again keeping sixteen times as much, up to all of it.
"""

from __future__ import annotations

import collections

from ..lang import did_you_mean
from ..trace import Trace
from .explain import _LISTED, Explainer, ExplainError, Explanation
from .reference import BeyondSlice, Horizon

FIRST_SIZE = 4_096  # events kept on the first pass
_SUGGESTED = 10_000  # event ids remembered for "did you mean"


class Recent:
    """The last ``size`` events pushed; the stores, counts and setters of variables the
    dropped ones leave; and (count, first ids) per lifeline of the events noted as
    ``beyond`` the slice."""

    def __init__(self, lifelines, init, size: int):
        self.lifelines, self.size = tuple(lifelines), size
        self.events: collections.deque = collections.deque()
        self.stores = {name: dict(store) for name, store in (init or {}).items()}
        self.before: collections.Counter = collections.Counter()
        self.setters: dict[str, dict[str, str]] = {}  # lifeline → variable → dropped setter
        self.after: dict[str, tuple[int, tuple[str, ...]]] = {}

    def push(self, event) -> None:
        self.events.append(event)
        if len(self.events) > self.size:
            old = self.events.popleft()
            if old.set:
                self.stores.setdefault(old.lifeline, {}).update(old.set)
                self.setters.setdefault(old.lifeline, {}).update(dict.fromkeys(old.set, old.id))
            self.before[old.lifeline] += 1

    def beyond(self, event) -> None:
        count, ids = self.after.get(event.lifeline, (0, ()))
        self.after[event.lifeline] = (count + 1, ids + (event.id,) if len(ids) < _LISTED
                                      else ids)

    def slice(self, source) -> tuple[Trace, Horizon]:
        """The kept events as a ``Trace`` (``source``'s header and meta), and its horizon."""
        trace = Trace(self.lifelines, self.stores, self.events, source.vars, source.symbols,
                      source.meta, predicates=source.predicates)
        return trace, Horizon(dict(self.before), dict(self.after),
                              {name: dict(found) for name, found in self.setters.items()})


def explain_stream(stream, event_id: str, guard: str | None = None, predicates=None,
                   schema=None) -> Explanation:
    """``explain`` on a ``.jsonl`` stream (a ``JsonLines`` whose events are not read yet),
    keeping the last events up to ``event_id`` rather than the trace."""
    size, reader = FIRST_SIZE, stream
    while True:
        recent, target = Recent(stream.lifelines, stream.init, size), None
        ids: list[str] = []
        for event in reader.events():
            if target is not None:
                recent.beyond(event)
                continue
            recent.push(event)
            if event.id == event_id:
                target = event
            elif len(ids) <= _SUGGESTED:
                ids.append(event.id)
        if target is None:
            raise ExplainError(f"the trace has no event {event_id!r}"
                               f"{did_you_mean(event_id, ids)}")
        trace, horizon = recent.slice(reader)
        schema = schema if schema is not None else reader.schema(predicates)
        try:
            return Explainer(trace, predicates, horizon, schema).explain(event_id, guard)
        except BeyondSlice:  # never once nothing was dropped
            size *= 16
            reader = stream.again()
