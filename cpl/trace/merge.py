"""Merging the lifelines' event logs into one ``cpl-msc/1`` trace, clocks computed here.

Each lifeline process, and each agent of ``cpl.live``, logs its own events
in local order (one JSON line each, with the wall-clock ``time`` it took them).  The
run's trace lists all events in a linear extension of the causal order: repeatedly
take, among the lifelines whose next event can be placed (anything but a receive whose
send is not placed yet), the one taken earliest.  The vector clock of each
event — which no message needs to carry — is computed on the way, from the
graph itself: the previous local event's clock, merged with the send's for
a receive, plus one on the lifeline's own entry.

Memory is the clocks of the messages in transit (their entries above zero), not the
run's length; at most 32 logs are open at a time (``cpl.trace.logtail``).  A log cut by
a crash is read up to its last whole line.  What cannot be placed — a receive whose send is in
no log, a line that is no event, an event the trace cannot hold — stops its lifeline
there, and ``placed()`` accounts for all of it (``cpl.trace.unplaced``): the trace is
then ``incomplete``.  The supervisor merges as the run goes (``Merging``, the logs read
as they grow by ``LogTail``); ``cpl merge`` merges the same logs (``runtime.supervisor.parts``)
when the supervisor vanished before it could, and the logs of agents that no ``cpl
run`` started (``cpl.live``).
"""

from __future__ import annotations

import heapq
import json
from typing import Iterator

import attrs

from .clocks import SparseClocks
from .logtail import MAX_LINE, LogTail, bad_field, read_log, rest_of, _is_end, _not_event
from .msc import Event
from .unplaced import Halt, record, sent_in

__all__ = ["MAX_LINE", "LogTail", "Merging", "merge", "read_log"]


def merge(logs: dict, lifelines: tuple[str, ...], write, keep=None) -> dict:
    """Write every placeable event of ``logs`` (lifeline -> a ``LogTail``, or an iterable of
    events), in causal order with its ``vc``; returns what the trace's ``meta`` adds
    (``Merging.placed``), each line not placed handed to ``keep``."""
    absent = tuple(name for name in lifelines if name not in logs)
    merging = Merging(lifelines, write, {name: logs.get(name, ()) for name in lifelines},
                      absent)
    merging.step()
    return merging.placed(keep)


class _Listed:
    """Events handed over in memory, read as a ``LogTail`` is (no file, no lines)."""

    path = stop = None

    def __init__(self, lifeline: str, events):
        self.lifeline, self._events = lifeline, iter(events)
        self.where: tuple[int, None] | None = None
        self._current = None

    def take(self) -> dict | None:
        event = next(self._events, None)
        if event is None:
            return None
        self._current = event
        self.where = ((self.where[0] if self.where else 0) + 1, None)
        why = _not_event(event, self.lifeline)
        if why is not None:
            self.stop = _Stopped(self.where[0], why)
            return None
        return event

    def rest(self, halted: bool):
        current = self.where[0] if self.where else 0
        if halted and self._current is not None:
            yield current, None, self._current
        for number, event in enumerate(self._events, current + 1):
            yield number, None, event


class _Stopped:
    """Where events handed over in memory stop: at the ``line``-th, which is no event."""

    def __init__(self, line: int, why: str):
        self.line, self.offset, self.why = line, None, why


class Merging:
    """The merge of logs that may still grow: each ``step`` places every event that can be
    placed now, and ``placed()`` says what the trace's ``meta`` adds once the logs are done.

    ``sources`` give each lifeline's events (a ``LogTail``, or an iterable): ``take()`` is
    its next, or ``None`` when there is none yet: that lifeline is *dry*, asked again at
    the next step, while the others' events go on being placed.  Whatever a lifeline
    logs later cannot precede them causally: a lifeline logs each event before any
    message that makes it visible leaves (``runtime.lifeline.eventlog``), so a receive's send is
    in its log first.  A lifeline has one event out of its log at a time (the next to
    place, or the receive waiting for its send), so its source's ``where`` is that event's."""

    def __init__(self, lifelines, write, sources: dict, absent: tuple[str, ...] = ()):
        self._lifelines = tuple(lifelines)
        self._clocks = SparseClocks(self._lifelines)
        self._write = write
        self._sources = {name: source if hasattr(source, "take") else _Listed(name, source)
                         for name, source in sources.items()}
        self._absent = absent  # lifelines without a log
        self._waiting: dict[str, list] = {}  # msg id -> (lifeline, its next event) receiving it
        self._heads: list = []  # (time, order, lifeline, event) of placeable next events
        self._dry = set(self._lifelines)  # lifelines with no next event read
        self._halts: dict[str, Halt] = {}  # lifeline -> where its part stops
        self._order = 0
        self.count = 0  # events written

    def step(self, stop=None, every: int = 256) -> bool:
        """Place what can be placed now; with ``stop``, asked every ``every`` events, until
        it says so.  Whether everything placeable now was placed."""
        for name in sorted(self._dry):
            self._dry.discard(name)
            self._advance(name)
        heads, clocks, write = self._heads, self._clocks, self._write
        asked = 0
        while heads:
            if stop is not None and not asked % every and stop():
                return False
            asked += 1
            _, _, name, event = heapq.heappop(heads)
            kind, msg = event["kind"], event.get("msg")
            if kind == "recv" and not clocks.sent(msg):
                self._halt(name, event, f"is a second receive of {msg}")
                continue
            if kind == "send" and clocks.sent(msg):
                self._halt(name, event, f"is a second send of {msg}, the first not received")
                continue
            clock = clocks.next(name, kind, msg)
            event["vc"] = clocks.full(clock)
            try:
                write(Event(**event))
            except (TypeError, ValueError) as error:  # a value the trace cannot hold
                del event["vc"]
                self._halt(name, event, f"cannot be written: {error}")
                continue
            except BaseException:  # raised in the writer's wake (a stop): the event is
                self._placed(name, kind, msg, clock)  # the trace's, and its lifeline goes on
                raise
            self._placed(name, kind, msg, clock)
        return True

    def _placed(self, name: str, kind: str, msg, clock: dict) -> None:
        """``name``'s event is written: its clock kept, its receivers and its lifeline
        go on."""
        self._clocks.commit(name, kind, msg, clock)
        self.count += 1
        if kind == "send":
            for receiver, pending in self._waiting.pop(msg, ()):
                self._push(receiver, pending)
        self._advance(name)

    def placed(self, keep=None, whole: bool = True) -> dict:
        """What the trace's ``meta`` adds once the logs are done: ``in_transit`` (sends never
        received), ``unplaced`` (how many lines of the logs were not placed), and if any
        was, or a log could not be read to its end, ``incomplete``: the first cause (``Halt.
        to_meta``) and how many ``lifelines`` stop short.  Each line not placed goes to
        ``keep`` (``unplaced.record``).  ``whole`` false: the merge was cut short, the logs
        hold more, nothing is looked for past what was merged."""
        if not whole:
            return {"in_transit": self._clocks.in_transit, "unplaced": 0}
        for msg, receivers in self._waiting.items():
            for name, event in receivers:
                self._halt(name, event, f"is a receive of {msg}, whose send was not placed",
                           msg)
        unsent: set[str] = set()  # messages whose send is among the lines kept
        count = 0
        for name in self._lifelines:
            if hasattr(self._sources[name], "close"):
                self._sources[name].close()  # one open at a time while their rests are read
            for kept in self._rest(name):
                count += "line" in kept
                msg = sent_in(kept)
                if msg is not None:
                    unsent.add(msg)
                if keep is not None:
                    keep(kept)
        found = {"in_transit": self._clocks.in_transit, "unplaced": count}
        if self._halts:
            found["incomplete"] = {**self._first(unsent).to_meta(), "unplaced": count,
                                   "lifelines": len(self._halts)}
        return found

    def _first(self, unsent: set) -> Halt:
        """The first cause: the halt found first that no other causes (a receive whose
        send is among the lines not placed waits because of another)."""
        halts = sorted(self._halts.values(), key=lambda halt: halt.order)
        for halt in halts:
            if halt.msg is None:
                return halt
            if halt.msg not in unsent:
                missing = (f" (there is no log of {', '.join(self._absent[:3])}"
                           f"{' and more' if len(self._absent) > 3 else ''})"
                           if self._absent else "")
                return attrs.evolve(halt, why=f"is a receive of {halt.msg}, whose send is in "
                                    f"none of the logs{missing}")
        return halts[0]

    def _rest(self, name: str) -> Iterator[dict]:
        """The lines of ``name``'s log not placed, as ``unplaced.record``s: from its halt, or
        whatever follows where its log ended (past an agent's end line, a zero byte)."""
        source, halt = self._sources[name], self._halts.get(name)
        if isinstance(source, _Listed):
            rest = source.rest(halt is not None)
        elif halt is not None:
            if halt.line is None:  # nothing of it could be read: said, with no line to keep
                yield {"lifeline": name, "log": halt.log, "why": halt.why}
                return
            rest = rest_of(source.path, halt.offset, halt.line)
        else:
            rest = _past_end(source)
        first = True
        for line, offset, data, *_ in rest:
            if not first and isinstance(data, bytes) and _ends(data):
                continue  # an agent's end line: no event lost
            if halt is None:
                halt = self._halt(name, _event_of(data, name), "comes after where the log "
                                  "ended (an end line, or a zero byte)", at=(line, offset))
            yield record(halt, line, offset, data, first)
            first = False

    def _halt(self, name: str, event: dict | None, why: str, msg: str | None = None,
              at: tuple | None = None) -> Halt:
        source = self._sources[name]
        line, offset = at or source.where or (None, None)
        self._order += 1
        halt = Halt(name, getattr(source, "path", None), line, offset,
                    event.get("id") if isinstance(event, dict) else None, why, self._order,
                    msg)
        self._halts.setdefault(name, halt)
        return self._halts[name]

    def _push(self, name: str, event: dict) -> None:
        self._order += 1
        heapq.heappush(self._heads, (event.get("time") or 0.0, self._order, name, event))

    def _advance(self, name: str) -> None:
        source = self._sources[name]
        event = source.take()
        if event is None:
            stop = source.stop
            if stop is None:
                self._dry.add(name)
            else:
                self._halt(name, None, stop.why, at=(stop.line, stop.offset))
            return
        why = bad_field(event)
        if why is not None:
            self._halt(name, event, f"cannot be placed: {why}")
        elif event["kind"] == "recv" and not self._clocks.sent(event["msg"]):
            self._waiting.setdefault(event["msg"], []).append((name, event))
        else:
            self._push(name, event)


def _past_end(tail: LogTail) -> Iterator[tuple]:
    """What follows the last event a log gave, but for what may follow a log's end: its
    last line when no newline ends it (a crash cut it, or the next line was being written),
    and an agent's end line."""
    line, offset = tail.next_line
    ended = False
    for found in rest_of(tail.path, offset, line):
        number, at, data, whole = found
        if not whole:
            return  # the last line, cut or not yet written
        if number == line and at == offset and tail.where is not None:
            yield number, at, data  # more on the last event's line
            continue
        if not ended and data is not None and _ends(data):
            ended = True
            continue
        yield number, at, data


def _ends(data: bytes) -> bool:
    try:
        return _is_end(json.loads(data))
    except (ValueError, RecursionError):
        return False


def _event_of(data, lifeline: str) -> dict | None:
    if isinstance(data, dict):
        return data
    try:
        value = json.loads(data) if data is not None else None
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and not _not_event(value, lifeline) else None
