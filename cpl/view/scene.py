"""Where every mark of an MSC goes: shapes, lines and text in one coordinate system.

A ``Layout`` says which lane and row each event has; a ``Scene`` says where,
in points with y growing downward, each thing is drawn, and it is what both
writers read (``svg``: our own SVG, no graphviz; ``dot``: graphviz pinned, for
PNG and PDF).  All text placement is decided here, on estimated widths
(``width``): a label is wrapped to fit between two lifelines, never cut, and
put where it covers neither other text nor an arrow other than its own; where
no such spot exists, the rows around it are pulled apart and the labels are
placed again (``scene``), so rows are as tall as what they hold needs, and
time still runs downward with every arrow slanting down.  Event ids and the values
of acts and receives come last, only where they fit (``fits``): they never move rows.
"""

from __future__ import annotations

import attrs

from .fits import ID, id_spot, value_spot
from .labels import (GUARD_LINES, PAD, Box, Taken, choose, line_height, room_for, text_box,
                     width, wrap)
from .layout import Layout
from .marks import INK, LABEL, Group, Line, Scene, Shape, Text

COLUMN = 200.0  # points between lifelines
ROW = 30.0  # the least height of a row
MARGIN = 20.0
LEFT = MARGIN + 96  # lane 0's x: room for half a lifeline's head
FONT = "Helvetica"
TRUE, FALSE, UNDECIDED = "#2e7d32", "#c62828", "#757575"
GREY, FRONTIER, FOCUS = "#c4c4c4", "#ef6c00", "#1565c0"
ID_INK = "#78909c"  # an event id's colour
HEAD_LINES = 3  # a lifeline's name takes at most this many lines in its head
PASSES = 40  # times the rows may be pulled apart to make room for labels
STALLED = 16  # passes without fewer labels left unplaced before giving up
WORK = 12_000  # labels placed over all passes: a busy or whole-trace picture gets fewer


def _lane_x(lane: int) -> float:
    return LEFT + lane * COLUMN


def _ink(flag: bool | None, colour: str = INK) -> str:
    return GREY if flag is False else colour


class _Rows:
    """The height of each row: ``y(row)`` for a row number, fractions between rows."""

    def __init__(self, first: float, gaps: list[float]):
        self.ys = [first]
        for gap in gaps:
            self.ys.append(self.ys[-1] + gap)

    def y(self, row: float) -> float:
        whole = int(row)
        if whole + 1 < len(self.ys):
            return self.ys[whole] + (row - whole) * (self.ys[whole + 1] - self.ys[whole])
        return self.ys[-1] + (row - len(self.ys) + 1) * ROW


def scene(layout: Layout) -> Scene:
    """Every mark of ``layout``, placed."""
    heads = [wrap(name, 10, COLUMN - 30, HEAD_LINES) for name in layout.lifelines]
    head_h = max((len(h) for h in heads), default=1) * line_height(10) + 8
    top = MARGIN + (18 if layout.title else 0) + (14 if layout.skipped_before else 0)
    head_y = top + head_h / 2
    dot_lines = {n: _dot_lines(dot) for n, dot in enumerate(layout.dots)}
    arrow_lines = [_arrow_text(a) for a in layout.arrows]
    rows = layout.rows
    need = [0.0] * (rows + 3)  # the half height the labels of each row need
    for n, dot in enumerate(layout.dots):
        if dot_lines[n]:
            need[dot.row] = max(need[dot.row], line_height(LABEL) * len(dot_lines[n]) / 2)
    extra = [0.0] * (rows + 3)
    least, stalled = None, 0
    labels = len(layout.arrows) + sum(1 for lines in dot_lines if lines)
    for _ in range(max(2, min(PASSES, WORK // max(1, labels)))):
        gaps = [head_h / 2 + max(ROW * 0.9, need[1] + 2 * PAD) + extra[1]] + [
            max(ROW, need[r - 1] + need[r] + 2 * PAD) + extra[r] for r in range(2, rows + 3)]
        placed = _place(layout, _Rows(head_y, gaps), heads, head_h, dot_lines, arrow_lines,
                        final=False)
        wants = [want for want in placed[1] if want[0] >= 0]
        if not placed[1]:
            break
        if not wants:  # labels in the way of arrows cut at the window's edge: no help
            placed = _place(layout, _Rows(head_y, gaps), heads, head_h, dot_lines,
                            arrow_lines, final=True)
            break
        # pulling apart that stops helping is given up: a picture stays a sane height
        least, stalled = (len(placed[1]), 0) if least is None or len(placed[1]) < least \
            else (least, stalled + 1)
        if stalled >= STALLED:
            placed = _place(layout, _Rows(head_y, gaps), heads, head_h, dot_lines,
                            arrow_lines, final=True)
            break
        for row, amount in wants:
            extra[max(1, min(row, rows + 2))] += amount
    else:
        placed = _place(layout, _Rows(head_y, gaps), heads, head_h, dot_lines, arrow_lines,
                        final=True)
    return placed[0]()


def _dot_lines(dot, text: str | None = None) -> list[str]:
    """An event's label: its text (placed as ``bare``, see ``_with_values``), and a
    choice's whole guard under it."""
    text = dot.bare if text is None and dot.bare is not None else text or dot.text
    lines = wrap(text, LABEL, COLUMN - 30) if text else []
    if dot.kind == "choice" and dot.guard:
        lines += wrap(dot.guard, LABEL, COLUMN - 30, most=GUARD_LINES)
    return lines


def _arrow_text(arrow) -> str:
    return arrow.text + (" (in transit)" if arrow.in_transit else "")


def _place(layout: Layout, rows: _Rows, heads, head_h, dot_lines, arrow_lines, final: bool):
    """The placement at these row heights (a function making its scene, ``_finish``), and
    the rows to pull apart for labels that found no free spot (unless ``final``: then
    each takes its least covered spot)."""
    bottom = layout.rows + 1.5
    y_bottom = rows.y(bottom)
    groups: list[Group] = []
    texts: list[Group] = []
    crowded: list[tuple[int, float]] = []  # (row, points to add to the gap above it); row
    # -1: a label left where it is, since its trouble is an arrow cut at the window's edge
    if layout.title:
        groups.append(Group("title", "title", (Text(
            MARGIN, text_box([layout.title], 11, MARGIN, MARGIN + 7, "start"),
            (layout.title,), 11, INK),)))
    notes = []
    if layout.skipped_before:
        notes.append(("above", rows.y(0) - head_h / 2 - 9,
                      f"⋮ {layout.skipped_before} earlier events not shown"))
    if layout.skipped_after:
        notes.append(("below", y_bottom + 12, f"⋮ {layout.skipped_after} later events not shown"))
    if layout.highlight is not None:
        notes.append(("legend", y_bottom + (26 if layout.skipped_after else 14),
                      "black: the highlighted event's causal past · orange ring: the latest "
                      "event of each lifeline it saw · grey: not visible to it"))
    for name, y, text in notes:
        groups.append(Group(f"note-{name}", "note", (Text(
            MARGIN, text_box([text], LABEL, MARGIN, y, "start"), (text,), LABEL, "#616161"),)))
    for lane, lines in enumerate(heads):
        x, y = _lane_x(lane), rows.y(0)
        w = max(width(line, 10) for line in lines) + 16
        groups.append(Group(f"line-{lane}", "edge", (Line(
            x, y + head_h / 2, x, y_bottom, "#b0bec5", 1.2),)))
        groups.append(Group(f"lifeline-{lane}", "node", (
            Shape("rounded", x, y, w, head_h, "#eceff1", "#90a4ae"),
            Text(x, text_box(lines, 10, x, y, "middle"), tuple(lines), 10, INK, "middle"))))
    # arrows: from the edge of the send's dot to the edge of the receive's
    segments: list[tuple | None] = []
    arrow_rows: list[tuple[float, float]] = []
    for arrow in layout.arrows:
        x0, x1 = _lane_x(arrow.sender_lane), _lane_x(arrow.receiver_lane)
        y0 = rows.y(layout.dots[arrow.send].row if arrow.send is not None else 0.6)
        y1 = rows.y(layout.dots[arrow.recv].row if arrow.recv is not None else layout.rows + 1.2)
        segments.append((x0, y0, x1, y1))
        arrow_rows.append((layout.dots[arrow.send].row if arrow.send is not None else 0.6,
                           layout.dots[arrow.recv].row if arrow.recv is not None
                           else layout.rows + 1.2, arrow.send is None or arrow.recv is None))
    taken = Taken([s if s[0] != s[2] else None for s in segments])
    for lane, lines in enumerate(heads):
        taken.add(text_box(lines, 10, _lane_x(lane), rows.y(0), "middle"))
    for group in groups:
        for item in group.items:
            if isinstance(item, Text):
                taken.add(item.box)
    ends = []
    for end in layout.ends:
        text = f"✕ {end.text}"  # below the lifeline's last event, clear of arrows if it can be
        box = _choose([(text_box([text], 10, _lane_x(end.lane), rows.y(end.row) + 12 * k,
                                 "middle"), None) for k in range(4)], taken, None, True)[0]
        taken.add(box)
        ends.append(Group(f"end-{end.lane}", "node", (
            Text(_lane_x(end.lane), box, (text,), 10, FALSE, "middle"),)))
    for number, arrow in enumerate(layout.arrows):
        groups.append(_arrow_group(number, arrow, segments[number], layout))
    for dot in layout.dots:
        groups.extend(_dot_groups(dot, layout, _lane_x(dot.lane), rows.y(dot.row)))
    later = []  # right of its dot first for every event; left of it only where that is taken
    label_boxes: dict[int, tuple] = {}  # dot index -> its label's box and lines
    label_at: dict[int, int] = {}  # dot index -> its label's place in texts
    for first in (True, False):
        for n, dot in (enumerate(layout.dots) if first else later):
            lines = dot_lines[n]
            if not lines:
                continue
            x, y = _lane_x(dot.lane), rows.y(dot.row)
            off = 14 if dot.frontier else 12  # clear of its ring
            spots = [(text_box(lines, LABEL, x + off, y, "start"), lines)]
            if dot.lane > 0:
                spots.append((text_box(lines, LABEL, x - off, y, "end"), lines))
            box = _choose(spots[:1] if first else spots, taken, None, final and not first)
            if box is None and first:
                later.append((n, dot))
                continue
            if box is None:
                # the side needing the rows pulled apart least; where only text is in the
                # way (None) pulling rows apart may not help: the right side's default then
                ways = [room_for(spot[0], dot.row, taken, arrow_rows) for spot in spots]
                pick = min(range(len(ways)), key=lambda k: (
                    ways[k] is None and k > 0, sum(a for _, a in ways[k] or ())))
                crowded.extend([(dot.row, 12.0), (dot.row + 1, 12.0)] if ways[pick] is None
                               else ways[pick] or [(-1, 0.0)])  # []: only cut arrows
                box = spots[0]
            box, lines = box
            taken.add(box)
            label_boxes[dot.index] = (box, lines)
            label_at[dot.index] = len(texts)
            texts.append(Group(f"label-{dot.index}", "node", (Text(
                box.left, box, tuple(lines), LABEL, _ink(dot.past, "#37474f")),)))
    for number, arrow in enumerate(layout.arrows):
        x0, y0, x1, y1 = segments[number]
        if x0 == x1:
            continue
        chosen = _choose(_arrow_spots(segments[number], arrow_lines[number]), taken, number,
                         final)
        box, lines = chosen or next(_arrow_spots(segments[number], arrow_lines[number]))
        if chosen is None:
            send = layout.dots[arrow.send].row if arrow.send is not None else 1
            recv = layout.dots[arrow.recv].row if arrow.recv is not None else layout.rows + 1
            crowded.extend([(-1, 0.0)] if arrow.send is None or arrow.recv is None
                           else [(row, 16.0) for row in {send + 1, recv}])
        taken.add(box)
        ink = _ink(arrow.past)
        texts.append(Group(f"msglabel-{number}", "node", (Text(
            (box.left + box.right) / 2, box, tuple(lines), LABEL, ink, "middle"),)))
    return lambda: _finish(layout, rows, groups, texts, ends, taken, label_boxes, label_at,
                           y_bottom), crowded


def _finish(layout: Layout, rows: _Rows, groups, texts, ends, taken, label_boxes, label_at,
            y_bottom: float) -> Scene:
    """The scene of the placement kept (done once, not on every pass): with the values
    acts and receives set and the event ids, where they fit (``cpl.view.fits``)."""
    lanes = len(layout.lifelines)
    for dot in layout.dots:
        if dot.bare is not None and (dot.index in label_at or not dot.bare):
            _with_values(dot, rows.y(dot.row), label_boxes, taken, texts,
                         label_at.get(dot.index))
    if layout.ids is not False:
        for dot in layout.dots:
            placed = _id_text(dot, rows.y(dot.row), label_boxes.get(dot.index), taken,
                              layout.ids, lanes)
            if placed is not None:
                taken.add(placed.box)
                texts.append(Group(f"id-{dot.index}", "node", (placed,)))
    groups = groups + texts + ends
    right = max([_lane_x(lanes - 1) + COLUMN / 2 if lanes else MARGIN * 2]
                + [item.box.left + 1.15 * (item.box.right - item.box.left) + MARGIN
                   for g in groups for item in g.items if isinstance(item, Text)])
    height = max([y_bottom + MARGIN + 6] + [item.box.bottom + MARGIN for g in groups
                                             for item in g.items if isinstance(item, Text)])
    return Scene(right, height, tuple(groups), layout.title)


def _with_values(dot, y: float, label_boxes: dict, taken: Taken, texts: list,
                 at: int | None) -> None:
    """By default values are shown where they fit (``cpl.view.fits``): an act's label
    placed without them (``dot.bare``) becomes its whole text (``dot.text``), a
    receive's values (``at`` None: it has no label) get a label of their own."""
    x, off = _lane_x(dot.lane), 14 if dot.frontier else 12
    whole = _dot_lines(dot, dot.text)
    old = None if at is None else label_boxes[dot.index][0]
    spot = value_spot(whole, LABEL, x, y, off, dot.lane > 0, old, taken)
    if spot is None:
        return
    taken.add(spot)
    label_boxes[dot.index] = (spot, whole)
    item = Text(spot.left, spot, tuple(whole), LABEL, _ink(dot.past, "#37474f"))
    if at is None:
        texts.append(Group(f"label-{dot.index}", "node", (item,)))
    else:
        texts[at] = attrs.evolve(texts[at], items=(item,))


def _id_text(dot, y: float, label: tuple | None, taken: Taken, ids: bool | None,
             lanes: int) -> Text | None:
    """The id of ``dot`` where it fits (``cpl.view.fits``), or None."""
    off = {"choice": 13.0, "fold": 10.0}.get(dot.kind, 9.0) + (6.0 if dot.frontier else 0.0)
    x = _lane_x(dot.lane)
    chosen = id_spot(dot.ident, x, y, off, label and (*label, LABEL), taken, ids,
                     [_lane_x(lane) for lane in range(lanes)], MARGIN / 2, COLUMN - 30)
    if chosen is None:
        return None
    box, lines = chosen
    anchor = "end" if box.right <= x else "start"
    return Text(box.right if anchor == "end" else box.left, box, tuple(lines), ID,
                _ink(dot.past, ID_INK), anchor)


_choose = choose  # a name of this module: a test swaps it for a careless placement


def _arrow_spots(segment: tuple, text: str):
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


def _arrow_group(number: int, arrow, segment: tuple, layout: Layout) -> Group:
    x0, y0, x1, y1 = segment
    if arrow.send is not None:
        x0, y0 = _clip(x0, y0, x1, y1, _radius(layout.dots[arrow.send]))
    if arrow.recv is not None:
        x1, y1 = _clip(x1, y1, x0, y0, _radius(layout.dots[arrow.recv]))
    colour = FALSE if arrow.in_transit and arrow.past is not False else _ink(arrow.past)
    return Group(f"msg-{number}", "edge", (Line(
        x0, y0, x1, y1, colour, 1.0, arrow.in_transit or arrow.recv is None, True),))


def _radius(dot) -> float:
    return {"choice": 9.4, "fold": 5.8}.get(dot.kind, 4.7)


def _clip(x: float, y: float, towards_x: float, towards_y: float, by: float):
    """(x, y) moved ``by`` points along the line to (towards_x, towards_y)."""
    dx, dy = towards_x - x, towards_y - y
    length = (dx * dx + dy * dy) ** 0.5 or 1.0
    by = min(by, length / 3)
    return x + dx * by / length, y + dy * by / length


def _dot_groups(dot, layout: Layout, x: float, y: float) -> list[Group]:
    focus = layout.highlight == dot.index
    ink = _ink(dot.past)
    if dot.kind == "choice":
        fill = _ink(dot.past, {True: TRUE, False: FALSE}.get(dot.outcome, UNDECIDED))
        shape = Shape("diamond", x, y, 18.7, 18.7, fill, FOCUS if focus else fill,
                      3 if focus else 1)
    elif dot.kind == "fold":
        shape = Shape("box", x, y, 11.5, 11.5, "white", ink)
    else:
        size = 14.4 if focus else 9.4
        shape = Shape("circle", x, y, size, size, FOCUS if focus else ink, FOCUS if focus else ink)
    found = [Group(f"ev-{dot.index}", "node", (shape,))]
    if dot.frontier:
        found.append(Group(f"seen-{dot.index}", "node", (
            Shape("circle", x, y, 24.5, 24.5, None, FRONTIER, 2),)))
    return found
