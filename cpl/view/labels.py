"""Where each label of a picture goes: beside its event, by its arrow, below a lifeline.

A label is wrapped to fit between two lifelines, never cut, and put in the first of
its spots that covers neither other text nor an arrow other than its own
(``cpl.view.taken``).  One that finds none says which rows, pulled apart, would
make room (``Placement.crowded``): ``cpl.view.scene`` pulls them apart and places
every label again, until none asks or that stops helping — then, on the ``final``
pass, each label takes its least covered spot.
"""

from __future__ import annotations

import attrs

from .layout import Dot, End, Layout
from .marks import LABEL
from .points import COLUMN, LEFT, Rows, arrow_rows, lane_x, segment
from .taken import Taken, crosses
from .text import PAD, Box, line_height, text_box, width, wrap

GUARD_LINES = 120  # a guard is drawn whole up to ~4,000 characters: a hostile one stays a picture


def event_lines(dot: Dot, text: str | None = None) -> list[str]:
    """An event's label: its text (placed as ``bare``, see ``scene._with_values``), and a
    choice's whole guard under it."""
    text = dot.bare if text is None and dot.bare is not None else text or dot.text
    lines = wrap(text, LABEL, COLUMN - 30) if text else []
    if dot.kind == "choice" and dot.guard:
        lines += wrap(dot.guard, LABEL, COLUMN - 30, most=GUARD_LINES)
    return lines


def end_text(end: End) -> str:
    return f"✕ {end.text}"


@attrs.frozen
class Wording:
    """Every label's text, the same on every pass: an event's lines by its place in
    ``Layout.dots`` (none: no label), and an arrow's text by its number, wrapped where
    it goes."""
    events: tuple[tuple[str, ...], ...]
    messages: tuple[str, ...]

    @classmethod
    def of(cls, layout: Layout) -> Wording:
        return cls(tuple(tuple(event_lines(dot)) for dot in layout.dots),
                   tuple(arrow.text + (" (in transit)" if arrow.in_transit else "")
                         for arrow in layout.arrows))


@attrs.frozen
class Label:
    """A label placed: ``of`` whom (its end's, event's or arrow's number in the
    ``Layout``), its box and its lines there."""
    of: int
    box: Box
    lines: tuple[str, ...]


@attrs.frozen
class Placement:
    """Every label of a picture placed at one set of row heights (``place``)."""
    taken: Taken  # all the text placed, and the arrows: what text placed later keeps clear of
    ends: tuple[Label, ...]  # how lifelines ended, each below its last event
    events: tuple[Label, ...]  # in the order placed: right of their events first
    messages: tuple[Label, ...]  # none for an arrow drawn straight down
    # the rows to pull apart for labels that found no free spot: (row, points to add to
    # the gap above it); row -1: a label left where it is, since its trouble is an arrow
    # cut at the window's edge. Empty when every label is free.
    crowded: tuple[tuple[int, float], ...]


def place(layout: Layout, rows: Rows, wording: Wording, fixed: list[Box],
          final: bool) -> Placement:
    """The labels of ``layout`` at these row heights, clear of the text placed before them
    (``fixed``, in the order given), of each other and of the arrows; where no spot is
    free, each takes its first and says which rows to pull apart — unless ``final``: then
    each takes its least covered spot."""
    segments = [segment(arrow, layout, rows) for arrow in layout.arrows]
    taken = Taken([s if s[0] != s[2] else None for s in segments])
    for box in fixed:
        taken.add(box)
    placing = _Pass(layout, rows, taken, final)
    ends = tuple(placing.end(number, end) for number, end in enumerate(layout.ends))
    events = placing.events(wording.events)
    messages = placing.messages(segments, wording.messages)
    return Placement(taken, ends, events, messages, tuple(placing.crowded))


class _Pass:
    """One pass of placing: ``taken`` grows with each label placed, and ``crowded`` with
    the rows to pull apart for each that found no free spot."""

    def __init__(self, layout: Layout, rows: Rows, taken: Taken, final: bool):
        self.layout, self.rows, self.taken, self.final = layout, rows, taken, final
        self.crowded: list[tuple[int, float]] = []
        self.spans = [(*arrow_rows(arrow, layout), arrow.send is None or arrow.recv is None)
                      for arrow in layout.arrows]  # rows each arrow runs between; cut or not

    def end(self, number: int, end: End) -> Label:
        """Below the lifeline's last event, clear of arrows if it can be."""
        text, x, y = end_text(end), lane_x(end.lane), self.rows.y(end.row)
        box = choose([(text_box([text], 10, x, y + 12 * k, "middle"), None) for k in range(4)],
                     self.taken, None, True)[0]
        self.taken.add(box)
        return Label(number, box, (text,))

    def events(self, wording: tuple[tuple[str, ...], ...]) -> tuple[Label, ...]:
        """Right of its event first for every event; left of it only where that is taken."""
        layout, placed, later = self.layout, [], []
        for first in (True, False):
            for n, dot in (enumerate(layout.dots) if first else later):
                lines = wording[n]
                if not lines:
                    continue
                x, y = lane_x(dot.lane), self.rows.y(dot.row)
                off = 14 if dot.frontier else 12  # clear of its ring
                spots = [(text_box(lines, LABEL, x + off, y, "start"), lines)]
                if dot.lane > 0:
                    spots.append((text_box(lines, LABEL, x - off, y, "end"), lines))
                chosen = choose(spots[:1] if first else spots, self.taken, None,
                                self.final and not first)
                if chosen is None and first:
                    later.append((n, dot))
                    continue
                if chosen is None:
                    self._crowded_event(dot, spots)
                    chosen = spots[0]
                box, lines = chosen
                self.taken.add(box)
                placed.append(Label(n, box, lines))
        return tuple(placed)

    def _crowded_event(self, dot: Dot, spots: list) -> None:
        """The rows to pull apart for an event's label: for the side needing it least;
        where only text is in the way (None) pulling rows apart may not help: the right
        side's default then."""
        ways = [room_for(spot[0], dot.row, self.taken, self.spans) for spot in spots]
        pick = min(range(len(ways)), key=lambda k: (
            ways[k] is None and k > 0, sum(a for _, a in ways[k] or ())))
        self.crowded.extend([(dot.row, 12.0), (dot.row + 1, 12.0)] if ways[pick] is None
                            else ways[pick] or [(-1, 0.0)])  # []: only cut arrows

    def messages(self, segments: list[tuple], texts: tuple[str, ...]) -> tuple[Label, ...]:
        """By its arrow (``arrow_spots``); none for an arrow drawn straight down."""
        placed = []
        for number, arrow in enumerate(self.layout.arrows):
            if segments[number][0] == segments[number][2]:  # straight down: no room by it
                continue
            chosen = choose(arrow_spots(segments[number], texts[number]), self.taken, number,
                            self.final)
            box, lines = chosen or next(arrow_spots(segments[number], texts[number]))
            if chosen is None and (arrow.send is None or arrow.recv is None):
                self.crowded.append((-1, 0.0))  # cut at the window's edge: no help
            elif chosen is None:
                send, recv = self.layout.dots[arrow.send].row, self.layout.dots[arrow.recv].row
                self.crowded.extend((row, 16.0) for row in {send + 1, recv})
            self.taken.add(box)
            placed.append(Label(number, box, tuple(lines)))
        return tuple(placed)


def choose(spots, taken: Taken, own: int | None, final: bool):
    """The first free spot of ``spots`` (an iterable of (box, lines) pairs, looked at only
    as far as needed); if none is, the least covered one when ``final``, else None."""
    best, least = None, None
    for spot in spots:
        if not final:
            if taken.free(spot[0], own):
                return spot
            continue
        cost = taken.cost(spot[0], own)
        if cost == 0:
            return spot
        if least is None or cost < least:
            best, least = spot, cost
    return best if final else None


def room_for(box: Box, row: int, taken: Taken, spans) -> list[tuple[int, float]] | None:
    """How to pull rows apart so that the arrows crossing an event's label at ``box`` (on
    ``row``) pass by it: lengthening the rows between an arrow's send and the label moves
    the label down faster than the arrow (it passes above), lengthening those between the
    label and the receive moves the arrow down (it passes below) — whichever needs less;
    None if no arrow crosses it, [] if only arrows cut at the window's edge do; ``spans``:
    each arrow's rows and whether it is cut there."""
    ways = []  # per crossing arrow: (points to pass above, points to pass below)
    cut = False
    for thing in taken.grid.near(box):
        if thing[0] != "arrow" or not crosses(box, thing[2]):
            continue
        x0, y0, x1, y1 = thing[2]
        start, end, edge = spans[thing[1]]
        if edge:  # it runs to the window's edge: pulling rows apart stretches it along
            cut = True
            continue
        near, far = sorted(min(1.0, max(0.0, (x - x0) / (x1 - x0))) for x in (box.left, box.right))
        y_near, y_far = y0 + near * (y1 - y0), y0 + far * (y1 - y0)  # where the box's sides cut it
        ways.append(((y_far - box.top + 2 * PAD) / (1 - far) if start < row and far < 1 else None,
                     (box.bottom + 2 * PAD - y_near) / near if end > row and near > 0 else None))
    if not ways:
        return [] if cut else None
    options = [(max(way[side] for way in ways), row + side) for side in (0, 1)
               if all(way[side] is not None for way in ways)]
    options = [min(options)] if options else [  # no one way clears them all: each its own
        min((a, row + side) for side, a in enumerate(way) if a is not None)
        for way in ways if way != (None, None)]
    return [(grow, min(max(amount, 12.0), 20000.0)) for amount, grow in options]


def arrow_spots(segment: tuple, text: str):
    """Where a message's label may sit, and its lines there: by its arrow inside one gap
    between lifelines — the gaps' middles from the sender on, then nearer the receiver,
    then nearer the sender — above the arrow, else below it; wrapped to the gap, else to
    half of it (beside where another arrow crosses this one)."""
    x0, y0, x1, y1 = segment
    for room in (COLUMN - 28, (COLUMN - 28) / 2):
        lines = wrap(text, LABEL, room, whole=room < COLUMN - 28)
        if lines is None:
            continue
        w = max(width(line, LABEL) for line in lines)
        h = line_height(LABEL) * len(lines)
        slack = max(0.0, COLUMN / 2 - w / 2 - 12)
        step = COLUMN if x1 > x0 else -COLUMN
        ahead = slack if x1 > x0 else -slack
        middles = [x0 + step * (gap + 0.5)  # the six gaps nearest the sender at most
                   for gap in range(min(6, round(abs(x1 - x0) / COLUMN)))]
        xs = [m + ahead * k for k in (0, 1, -1, 0.5, -0.5, 0.75, -0.75, 0.25, -0.25)
              for m in middles]
        for above in (True, False):
            for x in xs:
                left, right = x - w / 2, x + w / 2
                at = [y0 + (y1 - y0) * (e - x0) / (x1 - x0) for e in (left, right)]
                if above:
                    box = Box(left, min(at) - PAD - 1 - h, right, min(at) - PAD - 1)
                else:
                    box = Box(left, max(at) + PAD + 1, right, max(at) + PAD + 1 + h)
                yield box, lines
    yield from _corner_spots(segment, text)


def _corner_spots(segment: tuple, text: str):
    """More spots, for a steep arrow above all: a corner of the label on a point of the
    arrow, the label on either side of it, inside the gap that point is in."""
    x0, y0, x1, y1 = segment
    right = x1 > x0
    narrow = [(COLUMN - 28) / k for k in (2, 3, 4)]
    # narrower wraps that keep words whole first; one that cuts a word only as a last resort
    for room, whole in [(r, True) for r in narrow] + [(COLUMN - 28, False)] + \
            [(r, False) for r in narrow]:
        lines = wrap(text, LABEL, room, whole=whole)
        if lines is None:
            continue
        w = max(width(line, LABEL) for line in lines)
        h = line_height(LABEL) * len(lines)
        for t in (0.5, 0.3, 0.7, 0.15, 0.85, 0.05, 0.95):
            x, y = x0 + (x1 - x0) * t, y0 + (y1 - y0) * t
            lane = int((x - LEFT) // COLUMN)
            low, high = LEFT + lane * COLUMN + 10, LEFT + (lane + 1) * COLUMN - 10
            # the side of the arrow the label's corner may touch it from
            for left, top in ((x + PAD, y - PAD - h), (x - PAD - w, y + PAD)) if right else \
                    ((x - PAD - w, y - PAD - h), (x + PAD, y + PAD)):
                if low <= left and left + w <= high:
                    yield Box(left, top, left + w, top + h), lines
