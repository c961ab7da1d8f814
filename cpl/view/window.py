"""The drawn window of a trace, chosen and collected as its events stream by.

A trace may hold millions of events; a picture draws at most ``max_rows`` rows.
Rows, folds of local acts, vector clocks and stores depend only on what came
before, so one pass computes them with state per lifeline and per message in
transit, and keeps only the events whose row can still fall in the window
(rows only grow, so an event more than ``max_rows`` rows above the lowest one
so far never will).  Without ``--highlight`` the window is the end of the run:
one pass.  With one, a first pass finds its row and its vector clock (which
events it saw), a second collects the window around it.

A pass also keeps the last ``RECENT`` events at or above the window's bottom
(``cpl.semantics.Recent``): the slice the page's explanations are computed on.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

import attrs

from ..errors import EXIT_USAGE, CplError
from ..lang import did_you_mean
from ..semantics import Recent
from ..trace import Event, Trace

RECENT = 4_096  # events a stream keeps for the page's explanations
_SUGGESTED = 10_000  # event ids remembered for "did you mean"


class NoSuchEvent(CplError, LookupError):
    """``--highlight`` names no event of the trace (the message says so)."""

    exit_code = EXIT_USAGE


class Seen(NamedTuple):
    """One event as the window keeps it: where it is, and the state after it.  A tuple:
    a pass builds one per event of the trace."""

    index: int  # in the trace
    event: Event
    lane: int
    local: int  # 0-based position on its lifeline
    row: int  # unfolded
    folded_row: int
    first: int  # trace index of the first act of its run of acts (itself if none)
    clock: tuple  # vc after it, per lane: how many of that lane's events reach it
    store: dict  # its lifeline's store after it (shared, never changed)

    def in_past(self, focus: tuple | None) -> bool | None:
        """Whether it is in the causal past of the event whose clock is ``focus``."""
        return None if focus is None else self.local < focus[self.lane]


class Message(NamedTuple):
    """A message whose send or receive the window kept; ``recv`` (trace index, lane,
    local position, id) once received, drawn or not."""

    send: Seen
    recv: tuple[int, int, int, str] | None = None


class Pass:
    """One pass over the events: rows, folds, clocks and stores; keeps the events
    ``window`` (top row, bottom row, folded) can draw, or while it is unknown (``None``)
    those that may still fall in the last ``max_rows`` rows."""

    def __init__(self, lifelines, init, max_rows: int, window=None, recent: int = 0):
        self.lanes = {name: n for n, name in enumerate(lifelines)}
        self.max_rows, self.window = max_rows, window
        self.stores = {name: dict(store) for name, store in (init or {}).items()}
        self.count = self.folded = self.below = 0
        self.max_row = self.max_folded = 0
        self.kept: list[Seen] = []
        self.messages: dict[str, Message] = {}
        self.sending: dict[str, Seen] = {}  # msg → its send, while in transit
        self.recent = Recent(lifelines, init, recent) if recent else None
        self.ids: list[str] = []
        self._last: dict[str, tuple] = {}  # lifeline → (Seen, start of its run of acts)
        self._pruned_at = 1024

    def feed(self, events: Iterable[Event], focus_id: str | None = None) -> Seen | None:
        """Read every event; the ``Seen`` of ``focus_id``, if it was met."""
        focus, zero, absent = None, (0,) * len(self.lanes), (None, None)
        for event in events:
            index, name, kind = self.count, event.lifeline, event.kind
            self.count += 1
            last, run = self._last.get(name, absent)
            if last is None:
                row = folded_row = local = 0
                clock = zero
            else:
                row, folded_row, clock = last.row, last.folded_row, last.clock
                local = last.local + 1
            row += 1
            if kind == "act" and run is not None:  # folds into its run's first act
                first = run
                self.folded += 1
            else:
                first = index
                folded_row += 1
            sent = self.sending.pop(event.msg, None) if kind == "recv" else None
            if sent is not None:
                row = max(row, sent.row + 1)
                folded_row = max(folded_row, sent.folded_row + 1)
                clock = tuple(map(max, clock, sent.clock))
            lane = self.lanes.get(name, -1)
            if lane >= 0:
                clock = clock[:lane] + (local + 1,) + clock[lane + 1:]
            if event.set:
                self.stores[name] = store = {**self.stores.get(name, {}), **event.set}
            else:
                store = self.stores.setdefault(name, {})
            seen = Seen(index, event, lane, local, row, folded_row, first, clock, store)
            self._last[name] = (seen, first if kind == "act" else None)
            self.max_row = max(self.max_row, row)
            self.max_folded = max(self.max_folded, folded_row)
            if kind == "send":
                self.sending[event.msg] = seen
            if event.id == focus_id:
                focus = seen
            elif focus_id is not None and focus is None and len(self.ids) <= _SUGGESTED:
                self.ids.append(event.id)
            self._keep(seen, sent)
        return focus

    def _keep(self, seen: Seen, sent: Seen | None) -> None:
        event, kept = seen.event, True
        if self.window is not None:
            top, bottom, folded = self.window
            row = seen.folded_row if folded else seen.row
            if row > bottom:
                self.below += 1
                if self.recent is not None:
                    self.recent.beyond(event)
                kept = False
            elif self.recent is not None:
                self.recent.push(event)
            if kept and row < top:
                kept = False
        elif self.recent is not None:
            self.recent.push(event)
        if kept:
            self.kept.append(seen)
        if event.kind == "send" and kept:
            self.messages[event.msg] = Message(seen)
        elif event.kind == "recv":
            message = self.messages.get(event.msg)
            received = (seen.index, seen.lane, seen.local, event.id)
            if message is not None and message.recv is None:
                self.messages[event.msg] = message._replace(recv=received)
            elif message is None and kept and sent is not None:
                self.messages[event.msg] = Message(sent, received)
        if self.window is None and len(self.kept) >= 2 * self._pruned_at:
            self._prune()

    def _prune(self) -> None:
        """Drop what can no longer fall in the last ``max_rows`` rows (rows only grow)."""
        if not self.max_rows:
            return
        folded = self.max_row > self.max_rows  # once true, for good
        lowest = (self.max_folded if folded else self.max_row) - self.max_rows + 1
        self.kept = [s for s in self.kept if (s.folded_row if folded else s.row) >= lowest]
        alive = {s.index for s in self.kept}
        self.messages = {msg: m for msg, m in self.messages.items() if m.send.index in alive
                         or (m.recv is not None and m.recv[0] in alive)}
        self._pruned_at = max(1024, len(self.kept))


@attrs.frozen
class Window:
    """What a picture of the trace draws, and what the page around it needs."""

    header: Trace  # the trace's header and meta, no events
    count: int  # events in the whole trace
    kept: tuple[Seen, ...]  # every event in the window's rows, in trace order
    messages: tuple[Message, ...]  # by send, in trace order
    top: int
    bottom: int
    last_row: int  # of the whole picture
    folded: bool
    folds: int  # acts folded, over the whole trace
    skipped_before: int
    skipped_after: int
    in_transit: int
    focus: Seen | None
    recent: Recent

    def row(self, seen: Seen) -> int:
        return seen.folded_row if self.folded else seen.row

    def first(self, seen: Seen) -> int:
        return seen.first if self.folded else seen.index


def collect(source, highlight: str | None, max_rows: int) -> Window:
    """The window of ``source`` (a ``Trace``, or a ``.jsonl`` reader whose events are not
    read yet) that ``layout`` draws; ``NoSuchEvent`` if ``highlight`` is not an event."""
    whole = isinstance(source, Trace)
    recent = len(source.events) if whole else RECENT  # a loaded trace is in memory anyway

    def events(again: bool):
        if whole:
            return source.events
        return source.again().events() if again else source.events()

    first = Pass(source.lifelines, source.init, max_rows, recent=0 if highlight else recent)
    focus = first.feed(events(False), highlight)
    if highlight is not None and focus is None:
        raise NoSuchEvent(f"the trace has no event {highlight!r}"
                          f"{did_you_mean(highlight, first.ids)}")
    folded = bool(max_rows) and first.max_row > max_rows
    last_row = first.max_folded if folded else first.max_row
    top, bottom = 1, last_row
    if max_rows and bottom > max_rows:
        focus_row = None if focus is None else (focus.folded_row if folded else focus.row)
        centre = focus_row + max_rows // 4 if focus is not None else bottom
        bottom = min(bottom, max(centre, max_rows))
        top = bottom - max_rows + 1
    final = first
    if highlight is not None:
        final = Pass(source.lifelines, source.init, max_rows, (top, bottom, folded), recent)
        final.feed(events(True))
    row = (lambda s: s.folded_row) if folded else (lambda s: s.row)
    kept = tuple(s for s in final.kept if top <= row(s) <= bottom)
    after = final.below if highlight is not None else 0
    header = Trace(source.lifelines, source.init, (), source.vars, source.symbols,
                   source.meta, predicates=source.predicates)
    messages = sorted(final.messages.values(), key=lambda m: m.send.index)
    return Window(header, first.count, kept, tuple(messages), top, bottom, last_row, folded,
                  first.folded if folded else 0, first.count - len(kept) - after, after,
                  len(first.sending), focus, final.recent)
