"""The vector clock of every event, from the MSC's edges alone, as events are recorded.

A recorder sees the events of a run in a linear extension of the causal
order (the simulator as it schedules them, the supervisor as it merges the
lifelines' logs).  An event's clock is its lifeline's previous clock, merged
entry by entry with its send's clock if it is a receive, plus one on its
own entry: ``vc[B]`` counts the events of ``B`` in its causal past, itself
included.  No message has to carry a full clock for the trace to record
one; only the clocks of messages in transit are kept.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Mapping


class Clocks:
    """Stamps events fed in a linear extension order; ``in_transit`` is what was never received.

    Clocks are dicts lifeline -> count, copied per event and never changed after: an event
    holds a read-only view of its own (cheaper than from a list, bench/simulate_runs.py)."""

    def __init__(self, lifelines):
        self.lifelines = tuple(lifelines)
        zero = dict.fromkeys(self.lifelines, 0)
        self._latest = {name: zero for name in self.lifelines}
        self._sent: dict[str, dict] = {}  # msg id -> the send's clock, until received

    def stamp(self, lifeline: str, kind: str, msg: str | None = None) -> Mapping[str, int]:
        """The clock of ``lifeline``'s next event (a read-only map lifeline -> count)."""
        if kind == "recv":
            sent = self._sent.pop(msg)
            clock = {name: count if count >= other else other
                     for (name, count), other in zip(self._latest[lifeline].items(),
                                                     sent.values())}
        else:
            clock = self._latest[lifeline].copy()
        clock[lifeline] += 1
        self._latest[lifeline] = clock
        if kind == "send":
            self._sent[msg] = clock
        return MappingProxyType(clock)

    def sent(self, msg: str) -> bool:
        """Whether the send of ``msg`` was stamped and its receive not yet."""
        return msg in self._sent

    @property
    def in_transit(self) -> list[str]:
        return sorted(self._sent)


class SparseClocks:
    """The merge's clocks, each kept as its entries above zero: a merge of 2,000 logs
    whose lifelines hear from few others keeps clocks of a few entries, not 2,000 (before,
    860 MB for 2,000 logs of 3 events).  The clock an event is written with is
    built whole (``full``) for that event only.

    ``next`` computes a lifeline's next clock without keeping it: ``commit`` keeps it
    once the event is written, so an event the trace refuses leaves the clocks as they
    were."""

    def __init__(self, lifelines):
        self.lifelines = tuple(lifelines)
        self._zero = dict.fromkeys(self.lifelines, 0)
        self._latest: dict[str, dict] = {}
        self._sent: dict[str, dict] = {}  # msg id -> the send's clock, until received

    def next(self, lifeline: str, kind: str, msg: str | None = None) -> dict:
        clock = dict(self._latest.get(lifeline, ()))
        if kind == "recv":
            for name, count in self._sent[msg].items():
                if count > clock.get(name, 0):
                    clock[name] = count
        clock[lifeline] = clock.get(lifeline, 0) + 1
        return clock

    def full(self, clock: dict) -> dict:
        """``clock`` with every lifeline, in the lifelines' order."""
        whole = self._zero.copy()
        whole.update(clock)
        return whole

    def commit(self, lifeline: str, kind: str, msg: str | None, clock: dict) -> None:
        self._latest[lifeline] = clock
        if kind == "recv":
            del self._sent[msg]
        elif kind == "send":
            self._sent[msg] = clock

    def sent(self, msg: str) -> bool:
        """Whether the send of ``msg`` was placed and its receive not yet."""
        return msg in self._sent

    @property
    def in_transit(self) -> list[str]:
        return sorted(self._sent)
