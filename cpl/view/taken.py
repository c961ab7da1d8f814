"""What a label must keep clear of: text placed already, and arrows other than its own.

A whole trace has thousands of labels, each tried in many spots: ``Taken`` files
boxes and arrow segments by the cells of a grid they touch, so a spot is checked
against its neighbours only.
"""

from __future__ import annotations

from .text import PAD, Box


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
