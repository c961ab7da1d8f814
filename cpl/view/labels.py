"""Text on a picture: its estimated size, wrapping it, and free spots for labels.

Widths are estimated, not measured (no font is read): ``CHAR`` ems a character,
Helvetica's average and a little generous, so text placed by the estimate
clears what it must in the fonts a browser or graphviz picks for Helvetica.
"""

from __future__ import annotations

import re

import attrs

CHAR = 0.58  # a character's advance in ems: Helvetica's average, a little generous
LEADING = 1.25  # a line of text takes its size × this
PAD = 3.0  # the least room between a label and anything else
GUARD_LINES = 120  # a guard is drawn whole up to ~4,000 characters: a hostile one stays a picture


def width(text: str, size: float) -> float:
    """The estimated width of one line of ``text`` at ``size`` points."""
    return CHAR * size * len(text)


def line_height(size: float) -> float:
    return LEADING * size


@attrs.frozen
class Box:
    left: float
    top: float
    right: float
    bottom: float

    def meets(self, other: "Box", gap: float = PAD) -> bool:
        return (self.left < other.right + gap and other.left < self.right + gap
                and self.top < other.bottom + gap and other.top < self.bottom + gap)


def wrap(text: str, size: float, room: float, most: int | None = None,
         whole: bool = False) -> list[str] | None:
    """``text`` in lines of at most ``room`` points, broken after spaces, else after
    punctuation or operators, else anywhere — or, with ``whole``, ``None`` rather than
    inside a word; with ``most``, the last line kept ends in …"""
    limit = max(6, int(room / (CHAR * size)))
    pieces = []
    for word in re.findall(r"\S+\s*|\s+", text):
        while len(word) > limit:
            cut = max((m.end() for m in re.finditer(r"[,;(&|=<>!)\]}]+", word[:limit])),
                      default=None)
            if cut is None and whole:
                return None
            cut = cut or limit
            pieces.append(word[:cut])
            word = word[cut:]
        pieces.append(word)
    lines, line = [], ""
    for piece in pieces:
        if line and len(line) + len(piece.rstrip()) > limit:
            lines.append(line.rstrip())
            line = ""
        line += piece
    if line.strip() or not lines:
        lines.append(line.rstrip())
    if most is not None and len(lines) > most:
        lines = lines[:most]
        lines[-1] = lines[-1][:limit - 1] + "…"
    return lines


def text_box(lines, size: float, x: float, y: float, anchor: str) -> Box:
    """The box of ``lines`` whose middle is at height ``y``, sitting on ``x`` as ``anchor``."""
    w = max((width(line, size) for line in lines), default=0.0)
    h = line_height(size) * len(lines)
    left = {"start": x, "end": x - w}.get(anchor, x - w / 2)
    return Box(left, y - h / 2, left + w, y + h / 2)


def crosses(box: Box, line: tuple, pad: float = PAD) -> bool:
    """Whether the segment ``line`` (x0, y0, x1, y1) passes within ``pad`` of ``box``."""
    x0, y0, x1, y1 = line
    low, high = 0.0, 1.0
    for start, delta, lo, hi in ((x0, x1 - x0, box.left - pad, box.right + pad),
                                 (y0, y1 - y0, box.top - pad, box.bottom + pad)):
        if delta == 0:
            if not lo <= start <= hi:
                return False
            continue
        a, b = (lo - start) / delta, (hi - start) / delta
        low, high = max(low, min(a, b)), min(high, max(a, b))
        if low > high:
            return False
    return True


class Grid:
    """Text boxes and arrow segments filed by the cells of a grid they touch, so a spot
    is checked against its neighbours only (a whole trace has thousands of labels)."""
    CELL = 64.0

    def __init__(self):
        self.cells: dict[tuple[int, int], list] = {}

    def _keys(self, left, top, right, bottom):
        c = self.CELL
        for i in range(int(left // c), int(right // c) + 1):
            for j in range(int(top // c), int(bottom // c) + 1):
                yield i, j

    def add(self, thing, left, top, right, bottom) -> None:
        for key in self._keys(left, top, right, bottom):
            self.cells.setdefault(key, []).append(thing)

    def add_segment(self, thing, x0, y0, x1, y1) -> None:
        """A segment filed in the cells it passes through, column by column — not in every
        cell of its bounding box, which for a long slanting arrow is hundreds."""
        c = self.CELL
        if x0 > x1:
            x0, y0, x1, y1 = x1, y1, x0, y0
        slope = (y1 - y0) / (x1 - x0) if x1 != x0 else 0.0
        for i in range(int(x0 // c), int(x1 // c) + 1):
            a = y0 + slope * (max(x0, i * c) - x0)
            b = y0 + slope * (min(x1, (i + 1) * c) - x0) if x1 != x0 else y1
            for j in range(int(min(a, b) // c), int(max(a, b) // c) + 1):
                self.cells.setdefault((i, j), []).append(thing)

    def near(self, box: Box, once: bool = True):
        """What is filed in the cells around ``box``; each thing once only if ``once``."""
        seen = set()
        cells = self.cells
        for key in self._keys(box.left - PAD, box.top - PAD, box.right + PAD, box.bottom + PAD):
            for thing in cells.get(key, ()):
                if not once:
                    yield thing
                elif id(thing) not in seen:
                    seen.add(id(thing))
                    yield thing


class Taken:
    """What a label must keep clear of: placed text, and arrows other than its own."""

    def __init__(self, arrows: list[tuple]):
        self.grid = Grid()
        for number, line in enumerate(arrows):
            if line is not None:
                x0, y0, x1, y1 = line
                self.grid.add_segment(("arrow", number, line), x0, y0, x1, y1)

    def add(self, box: Box) -> None:
        self.grid.add(("text", box), box.left, box.top, box.right, box.bottom)

    def remove(self, box: Box) -> None:
        """Take back a text placed with ``add`` (to try it larger)."""
        for key in self.grid._keys(box.left, box.top, box.right, box.bottom):
            cell = self.grid.cells.get(key, [])
            for k, thing in enumerate(cell):
                if thing[0] == "text" and thing[1] is box:
                    del cell[k]
                    break

    def free(self, box: Box, own: int | None = None) -> bool:
        """Whether ``box`` keeps clear of all text and of every arrow but ``own``."""
        for thing in self.grid.near(box, once=False):
            if thing[0] == "text":
                if box.meets(thing[1]):
                    return False
            elif thing[1] != own and crosses(box, thing[2]):
                return False
        return True

    def cost(self, box: Box, own: int | None = None) -> float:
        """0 when ``box`` is free; else how much it covers (text area, and arrows)."""
        found = 0.0
        for thing in self.grid.near(box):
            if thing[0] == "text" and box.meets(thing[1]):
                o = thing[1]
                found += 1 + max(0.0, min(box.right, o.right) - max(box.left, o.left)) * \
                    max(0.0, min(box.bottom, o.bottom) - max(box.top, o.top))
            elif thing[0] == "arrow" and thing[1] != own and crosses(box, thing[2]):
                found += 50
        return found


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



def room_for(box: Box, row: int, taken: Taken, arrow_rows) -> list[tuple[int, float]] | None:
    """How to pull rows apart so that the arrows crossing an event's label at ``box`` (on
    ``row``) pass by it: lengthening the rows between an arrow's send and the label moves
    the label down faster than the arrow (it passes above), lengthening those between the
    label and the receive moves the arrow down (it passes below) — whichever needs less;
    None if no arrow crosses it, [] if only arrows cut at the window's edge do."""
    ways = []  # per crossing arrow: (points to pass above, points to pass below)
    cut = False
    for thing in taken.grid.near(box):
        if thing[0] != "arrow" or not crosses(box, thing[2]):
            continue
        x0, y0, x1, y1 = thing[2]
        start, end, edge = arrow_rows[thing[1]]
        if edge:  # it runs to the window's edge: pulling rows apart stretches it along
            cut = True
            continue
        near, far = sorted(min(1.0, max(0.0, (x - x0) / (x1 - x0))) for x in (box.left, box.right))
        at = lambda f: y0 + f * (y1 - y0)  # noqa: E731
        ways.append(((at(far) - box.top + 2 * PAD) / (1 - far) if start < row and far < 1 else None,
                     (box.bottom + 2 * PAD - at(near)) / near if end > row and near > 0 else None))
    if not ways:
        return [] if cut else None
    options = [(max(way[side] for way in ways), row + side) for side in (0, 1)
               if all(way[side] is not None for way in ways)]
    options = [min(options)] if options else [  # no one way clears them all: each its own
        min((a, row + side) for side, a in enumerate(way) if a is not None)
        for way in ways if way != (None, None)]
    return [(grow, min(max(amount, 12.0), 20000.0)) for amount, grow in options]
