"""Where every mark of an MSC goes: shapes, lines and text in one coordinate system.

A ``Layout`` says which lane and row each event has; a ``Scene`` says where,
in points with y growing downward (``cpl.view.points``), each thing is drawn, and it
is what both writers read (``svg``: our own SVG, no graphviz; ``dot``: graphviz
pinned, for PNG and PDF).  All text placement is decided here, on estimated widths
(``cpl.view.text``): every label goes where it covers neither other text nor an arrow
other than its own (``cpl.view.labels``); where no such spot exists, the rows around
it are pulled apart and the labels are placed again (``scene``), so rows are as tall
as what they hold needs, and time still runs downward with every arrow slanting down.
Event ids and the values of acts and receives come last, only where they fit
(``fits``): they never move rows.
"""

from __future__ import annotations

import attrs

from .fits import ID, id_spot, value_spot
from .labels import Placement, Wording, event_lines, place
from .layout import Layout
from .marks import INK, LABEL, Group, Line, Scene, Shape, Text
from .points import COLUMN, MARGIN, ROW, Rows, lane_x, segment
from .taken import Taken
from .text import PAD, line_height, text_box, width, wrap

FONT = "Helvetica"
TRUE, FALSE, UNDECIDED = "#2e7d32", "#c62828", "#757575"
GREY, FRONTIER, FOCUS = "#c4c4c4", "#ef6c00", "#1565c0"
ID_INK = "#78909c"  # an event id's colour
HEAD_LINES = 3  # a lifeline's name takes at most this many lines in its head
PASSES = 40  # times the rows may be pulled apart to make room for labels
STALLED = 16  # passes without fewer labels left unplaced before giving up
WORK = 12_000  # labels placed over all passes: a busy or whole-trace picture gets fewer


def _ink(flag: bool | None, colour: str = INK) -> str:
    return GREY if flag is False else colour


def scene(layout: Layout) -> Scene:
    """Every mark of ``layout``, placed."""
    heads = [wrap(name, 10, COLUMN - 30, HEAD_LINES) for name in layout.lifelines]
    head_h = max((len(h) for h in heads), default=1) * line_height(10) + 8
    rows, placement = _rows_for_labels(layout, heads, head_h)
    return _draw(layout, heads, head_h, rows, placement)


def _rows_for_labels(layout: Layout, heads: list, head_h: float) -> tuple[Rows, Placement]:
    """Row heights at which every label has a free spot, and the labels placed there: the
    rows are pulled apart where labels ask, and all placed again, until none asks — or
    that stops helping, or could help only labels over arrows cut at the window's edge:
    then each label takes its least covered spot (``final``) at the heights reached."""
    wording = Wording.of(layout)
    top = MARGIN + (18 if layout.title else 0) + (14 if layout.skipped_before else 0)
    head_y = top + head_h / 2
    rows = layout.rows
    need = [0.0] * (rows + 3)  # the half height the labels of each row need
    for n, dot in enumerate(layout.dots):
        if wording.events[n]:
            need[dot.row] = max(need[dot.row], line_height(LABEL) * len(wording.events[n]) / 2)
    extra = [0.0] * (rows + 3)
    # every event but the first is counted, labelled or not: what has always been counted
    # here (the labelled ones were meant), kept so that pictures stay the same
    labels = len(layout.arrows) + max(0, len(layout.dots) - 1)
    passes = max(2, min(PASSES, WORK // max(1, labels)))
    least, stalled, final = None, 0, False
    while True:
        gaps = [head_h / 2 + max(ROW * 0.9, need[1] + 2 * PAD) + extra[1]] + [
            max(ROW, need[r - 1] + need[r] + 2 * PAD) + extra[r] for r in range(2, rows + 3)]
        at = Rows(head_y, gaps)
        fixed = _fixed(layout, heads, head_h, at)
        boxes = [text_box(lines, 10, lane_x(lane), at.y(0), "middle")
                 for lane, lines in enumerate(heads)]
        # then all of the fixed text, the heads again among it: a label on a head counts
        # it twice where spots are compared by what they cover
        boxes += [item.box for group in fixed for item in group.items if isinstance(item, Text)]
        placement = place(layout, at, wording, boxes, final)
        if final or not placement.crowded:
            return at, placement
        passes -= 1
        wants = [want for want in placement.crowded if want[0] >= 0]
        # pulling apart that stops helping is given up: a picture stays a sane height
        least, stalled = (len(placement.crowded), 0) \
            if least is None or len(placement.crowded) < least else (least, stalled + 1)
        if not wants or stalled >= STALLED or passes == 0:
            final = True  # placed once more at these same heights, each label where it can
            continue
        for row, amount in wants:
            extra[max(1, min(row, rows + 2))] += amount


def _fixed(layout: Layout, heads: list, head_h: float, rows: Rows) -> list[Group]:
    """What is drawn before any label, where it is: the title, the notes above and below
    the window, and each lifeline's head and line."""
    y_bottom = rows.y(layout.rows + 1.5)
    groups: list[Group] = []
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
        x, y = lane_x(lane), rows.y(0)
        w = max(width(line, 10) for line in lines) + 16
        groups.append(Group(f"line-{lane}", "edge", (Line(
            x, y + head_h / 2, x, y_bottom, "#b0bec5", 1.2),)))
        groups.append(Group(f"lifeline-{lane}", "node", (
            Shape("rounded", x, y, w, head_h, "#eceff1", "#90a4ae"),
            Text(x, text_box(lines, 10, x, y, "middle"), tuple(lines), 10, INK, "middle"))))
    return groups


def _draw(layout: Layout, heads: list, head_h: float, rows: Rows,
          placement: Placement) -> Scene:
    """The scene of the placement kept (done once, not on every pass): with the values
    acts and receives set and the event ids, where they fit (``cpl.view.fits``)."""
    groups = _fixed(layout, heads, head_h, rows)
    for number, arrow in enumerate(layout.arrows):
        groups.append(_arrow_group(number, arrow, segment(arrow, layout, rows), layout))
    for dot in layout.dots:
        groups.extend(_dot_groups(dot, layout, lane_x(dot.lane), rows.y(dot.row)))
    texts = []
    for label in placement.events:
        dot = layout.dots[label.of]
        texts.append(Group(f"label-{dot.index}", "node", (Text(
            label.box.left, label.box, label.lines, LABEL, _ink(dot.past, "#37474f")),)))
    for label in placement.messages:
        box = label.box
        texts.append(Group(f"msglabel-{label.of}", "node", (Text(
            (box.left + box.right) / 2, box, label.lines, LABEL,
            _ink(layout.arrows[label.of].past), "middle"),)))
    _where_they_fit(layout, rows, placement, texts)
    ends = [Group(f"end-{layout.ends[label.of].lane}", "node", (Text(
        lane_x(layout.ends[label.of].lane), label.box, label.lines, 10, FALSE, "middle"),))
        for label in placement.ends]
    groups = groups + texts + ends
    lanes = len(layout.lifelines)
    right = max([lane_x(lanes - 1) + COLUMN / 2 if lanes else MARGIN * 2]
                + [item.box.left + 1.15 * (item.box.right - item.box.left) + MARGIN
                   for g in groups for item in g.items if isinstance(item, Text)])
    height = max([rows.y(layout.rows + 1.5) + MARGIN + 6]
                 + [item.box.bottom + MARGIN for g in groups
                    for item in g.items if isinstance(item, Text)])
    return Scene(right, height, tuple(groups), layout.title)


def _where_they_fit(layout: Layout, rows: Rows, placement: Placement, texts: list) -> None:
    """The values acts and receives set, and the event ids, added to ``texts`` (labels of
    events first, in the order placed) where they fit (``cpl.view.fits``)."""
    lanes, taken = len(layout.lifelines), placement.taken
    label_boxes = {layout.dots[label.of].index: (label.box, label.lines)
                   for label in placement.events}
    label_at = {layout.dots[label.of].index: at for at, label in enumerate(placement.events)}
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



def _with_values(dot, y: float, label_boxes: dict, taken: Taken, texts: list,
                 at: int | None) -> None:
    """By default values are shown where they fit (``cpl.view.fits``): an act's label
    placed without them (``dot.bare``) becomes its whole text (``dot.text``), a
    receive's values (``at`` None: it has no label) get a label of their own."""
    x, off = lane_x(dot.lane), 14 if dot.frontier else 12
    whole = event_lines(dot, dot.text)
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
    x = lane_x(dot.lane)
    chosen = id_spot(dot.ident, x, y, off, label and (*label, LABEL), taken, ids,
                     [lane_x(lane) for lane in range(lanes)], MARGIN / 2, COLUMN - 30)
    if chosen is None:
        return None
    box, lines = chosen
    anchor = "end" if box.right <= x else "start"
    return Text(box.right if anchor == "end" else box.left, box, tuple(lines), ID,
                _ink(dot.past, ID_INK), anchor)



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
