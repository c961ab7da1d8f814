"""A ``Layout`` drawn with graphviz: DOT text, and SVG/PNG/PDF from it.

Every node is pinned where the layout put it and graphviz only draws
(``neato -n2``): an MSC's geometry is ours to fix, graphviz's rank
heuristics would move events off their rows.  Text from the trace goes
through ``escaped`` — a lifeline called ``<b>`` or ``\\N`` is shown, never
interpreted, and a control character as its escape (``\\x00``, ``\\n``): a
NUL ends graphviz's string, and SVG's XML cannot hold the others — and node
names are our own (``e12``), never the trace's.
"""

from __future__ import annotations

import re

import attrs
import graphviz

from .layout import Arrow, Dot, Layout

COLUMN = 190.0  # points between lifelines
ROW = 30.0  # points between rows
MARGIN = 20.0
LINE = 11.0  # points a line of 9-point text takes
FONT = "Helvetica"
TRUE, FALSE, UNDECIDED = "#2e7d32", "#c62828", "#757575"
INK, GREY, FRONTIER, FOCUS = "#212121", "#c4c4c4", "#ef6c00", "#1565c0"
FORMATS = ("svg", "png", "pdf", "dot")
# What XML 1.0 cannot hold or a reader would not see: C0 and C1 controls, DEL, the line and
# paragraph separators, the bidirectional overrides, surrogates and two non-characters.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                        "\ud800-\udfff\ufffe\uffff]")


def visible(text: str) -> str:
    """``text`` with every character ``_INVISIBLE`` holds written as its Python escape."""
    return _INVISIBLE.sub(lambda found: repr(found[0])[1:-1], text)


def escaped(text: str) -> str:
    """Trace text as a graphviz label shows it, literally: ``visible``, then graphviz's escape."""
    return graphviz.escape(visible(text))


def _x(lane: int) -> float:
    return MARGIN + 60 + lane * COLUMN


def _y(layout: Layout, row: float) -> float:
    """Graphviz's y grows upward; row 0 is the heads, rows grow downward."""
    return (layout.rows + 2 - row) * ROW + MARGIN


def _pos(x: float, y: float) -> str:
    return f"{x:.1f},{y:.1f}!"


def _ink(flag: bool | None, colour: str = INK) -> str:
    """The colour of something in (or not in) the highlighted past."""
    return GREY if flag is False else colour


@attrs.frozen
class Box:
    """Where a label's text is, in graphviz points (y up)."""
    left: float
    bottom: float
    right: float
    top: float

    def covers(self, other: "Box", gap: float = 6.0) -> bool:
        """Whether the two come closer than ``gap`` (widths are only estimated)."""
        return (self.left < other.right + gap and other.left < self.right + gap
                and self.bottom < other.top + gap / 3 and other.bottom < self.top + gap / 3)


class _Placed:
    """Boxes filed by the band of height ``ROW`` their middle is in, so a free spot is
    looked for among the neighbouring bands only (a 5,000-event trace has thousands of
    labels).  A label is at most two lines (22 points) high, so a box that comes within
    ``covers``'s gap of another is filed in the same band or the next one."""

    def __init__(self):
        self.bands: dict[int, list[Box]] = {}

    @staticmethod
    def _band(box: Box) -> int:
        return int((box.bottom + box.top) / 2 // ROW)

    def add(self, box: Box) -> None:
        self.bands.setdefault(self._band(box), []).append(box)

    def _near(self, box: Box):
        band = self._band(box)
        for near in (band - 1, band, band + 1):
            yield from self.bands.get(near, ())

    def free(self, box: Box) -> bool:
        return not any(box.covers(other) for other in self._near(box))

    def overlap(self, box: Box) -> float:
        """How much of ``box`` other text covers."""
        return sum(max(0.0, min(box.right, o.right) - max(box.left, o.left))
                   * max(0.0, min(box.top, o.top) - max(box.bottom, o.bottom))
                   for o in self._near(box))


def _label_width(text: str, size: float) -> float:
    return 0.58 * size * len(text)  # Helvetica's average advance, near enough to place text


def graph(layout: Layout) -> graphviz.Digraph:
    """The DOT graph of a layout (``.source`` is the DOT text)."""
    g = graphviz.Digraph("msc", engine="neato")
    g.attr(splines="line", outputorder="edgesfirst", bgcolor="white", pad="0.2",
           fontname=FONT, fontsize="11", labelloc="t", label=escaped(layout.title))
    g.attr("node", fontname=FONT, fontsize="10")
    g.attr("edge", fontname=FONT, fontsize="9", arrowsize="0.6")
    bottom = layout.rows + 1.5
    for lane, name in enumerate(layout.lifelines):
        x = _x(lane)
        g.node(f"h{lane}", escaped(name), shape="box", style="rounded,filled",
               fillcolor="#eceff1", color="#90a4ae", pos=_pos(x, _y(layout, 0)),
               id=f"lifeline-{lane}", margin="0.12,0.04")
        g.node(f"f{lane}", "", shape="point", width="0.01", color="#90a4ae",
               pos=_pos(x, _y(layout, bottom)))
        g.edge(f"h{lane}", f"f{lane}", arrowhead="none", color="#b0bec5", penwidth="1.2",
               id=f"line-{lane}")
    if layout.skipped_before:
        _note(g, layout, "above", -0.75, f"⋮ {layout.skipped_before} earlier events not shown")
    if layout.skipped_after:
        _note(g, layout, "below", bottom + 0.4, f"⋮ {layout.skipped_after} later events not shown")
    taken = _Placed()  # the text placed so far, which a message label must not cover
    for number, dot in enumerate(layout.dots):
        _dot(g, layout, number, dot, taken)
    for number, arrow in enumerate(layout.arrows):
        _arrow(g, layout, number, arrow, taken)
    for end in layout.ends:
        g.node(f"end{end.lane}", escaped(f"✕ {end.text}"), shape="plaintext",
               fontcolor=FALSE, fontsize="10", pos=_pos(_x(end.lane), _y(layout, end.row)),
               id=f"end-{end.lane}")
    if layout.highlight is not None:
        _note(g, layout, "legend", bottom + 0.9, "black: the highlighted event's causal past · "
              "orange ring: the latest event of each lifeline it saw · grey: not visible to it")
    return g


def _note(g, layout: Layout, name: str, row: float, text: str) -> None:
    width = _label_width(text, 9)
    g.node(f"note-{name}", escaped(text), shape="plaintext", fontsize="9",
           fontcolor="#616161", pos=_pos(MARGIN + width / 2, _y(layout, row)))


def _dot(g, layout: Layout, number: int, dot: Dot, taken: "_Placed") -> None:
    x, y = _x(dot.lane), _y(layout, dot.row)
    focus = layout.highlight == dot.index
    ink = _ink(dot.past)
    common = dict(pos=_pos(x, y), id=f"ev-{dot.index}", label="", fixedsize="true")
    if dot.kind == "choice":
        fill = {True: TRUE, False: FALSE}.get(dot.outcome, UNDECIDED)
        g.node(f"e{number}", shape="diamond", width="0.26", height="0.26", style="filled",
               fillcolor=_ink(dot.past, fill), color=FOCUS if focus else _ink(dot.past, fill),
               penwidth="3" if focus else "1", **common)
    elif dot.kind == "fold":
        g.node(f"e{number}", shape="box", width="0.16", height="0.16", style="filled",
               fillcolor="white", color=ink, **common)
    else:
        g.node(f"e{number}", shape="circle", width="0.13" if not focus else "0.2",
               style="filled", fillcolor=FOCUS if focus else ink, color=FOCUS if focus else ink,
               **common)
    if dot.frontier:
        g.node(f"r{number}", "", shape="circle", width="0.34", fixedsize="true",
               color=FRONTIER, penwidth="2", pos=_pos(x, y), id=f"seen-{dot.index}")
    lines = [dot.text] if dot.text else []
    if dot.kind == "choice" and dot.guard:
        lines.append(_short_guard(dot.guard))
    if lines:
        width = max(_label_width(line, 9) for line in lines)
        taken.add(Box(x + 12, y - LINE * len(lines) / 2, x + 12 + width,
                         y + LINE * len(lines) / 2))
        text = "\n".join(escaped(line) for line in lines)
        g.node(f"t{number}", text.replace("\n", "\\l") + "\\l", shape="plaintext",
               fontsize="9", fontcolor=_ink(dot.past, "#37474f"), margin="0",
               width="0", height="0", pos=_pos(x + 12 + width / 2, y),
               id=f"label-{dot.index}")


def _short_guard(guard: str, limit: int = 48) -> str:
    return guard if len(guard) <= limit else guard[:limit - 1] + "…"


def _arrow(g, layout: Layout, number: int, arrow: Arrow, taken: "_Placed") -> None:
    ink = _ink(arrow.past)
    tail = f"e{arrow.send}" if arrow.send is not None else _stub(
        g, layout, f"a{number}", arrow.sender_lane, 0.6)
    if arrow.recv is not None:
        head = f"e{arrow.recv}"
    else:  # in transit, or received below the window: to the bottom edge
        head = _stub(g, layout, f"z{number}", arrow.receiver_lane, layout.rows + 1.2)
    text = arrow.text + (" (in transit)" if arrow.in_transit else "")
    g.edge(tail, head, color=FALSE if arrow.in_transit and arrow.past is not False else ink,
           style="dashed" if arrow.in_transit or arrow.recv is None else "solid",
           id=f"msg-{number}")
    _arrow_label(g, layout, number, arrow, text, ink, taken)


def _arrow_label(g, layout: Layout, number: int, arrow: Arrow, text: str, ink: str,
                 taken: "_Placed") -> None:
    """The label sits by its arrow, inside one gap between lifelines (graphviz
    would put it at the middle, on top of whatever lifeline a long arrow crosses there):
    the first spot that covers no text already placed — the middles of the gaps from
    the sender on, each gap's end nearer the receiver, the ends nearer the sender —
    above the arrow, else below it; where none is free, the least covered one."""
    x0, x1 = _x(arrow.sender_lane), _x(arrow.receiver_lane)
    y0 = _y(layout, layout.dots[arrow.send].row if arrow.send is not None else 0.6)
    y1 = _y(layout, layout.dots[arrow.recv].row if arrow.recv is not None else layout.rows + 1.2)
    if x0 == x1:
        return
    half = _label_width(text, 9) / 2
    room = max(0.0, COLUMN / 2 - half - 8)  # how far off a gap's middle the label still fits
    step = COLUMN if x1 > x0 else -COLUMN
    ahead = room if x1 > x0 else -room  # towards the receiver
    middles = [x0 + step * (gap + 0.5) for gap in range(round(abs(x1 - x0) / COLUMN))]
    spots = [x for middle in middles for x in (middle, middle + ahead)] + \
        [middle - ahead for middle in middles]
    boxes = [_box(x, y0 + (y1 - y0) * (x - x0) / (x1 - x0) + lift, half)
             for lift in (7, -8) for x in spots]  # above the arrow, else below it
    box = next((b for b in boxes if taken.free(b)), None) or min(boxes, key=taken.overlap)
    taken.add(box)
    g.node(f"m{number}", escaped(text), shape="plaintext", fontsize="9",
           fontcolor=ink, margin="0", width="0", height="0",
           pos=_pos((box.left + box.right) / 2, (box.bottom + box.top) / 2),
           id=f"msglabel-{number}")


def _box(x: float, y: float, half: float) -> "Box":
    return Box(x - half, y - LINE / 2, x + half, y + LINE / 2)


def _stub(g, layout: Layout, name: str, lane: int, row: float) -> str:
    g.node(name, "", shape="point", width="0.01", style="invis",
           pos=_pos(_x(lane), _y(layout, row)))
    return name


def render(layout: Layout, form: str) -> bytes:
    """The picture in ``form`` (one of ``FORMATS``)."""
    g = graph(layout)
    if form == "dot":
        return g.source.encode("utf-8")
    return g.pipe(format=form, neato_no_op=2, quiet=True)
