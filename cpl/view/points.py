"""Where lanes and rows are on a picture, in points, y growing downward.

A ``Layout`` gives each event a lane and a row; here lane ``n`` becomes the x of
its lifeline and a row the y of its events, rows being as tall as the labels
placed between them need (``cpl.view.scene`` pulls them apart).
"""

from __future__ import annotations

from .layout import Arrow, Layout

COLUMN = 200.0  # points between lifelines
ROW = 30.0  # the least height of a row
MARGIN = 20.0
LEFT = MARGIN + 96  # lane 0's x: room for half a lifeline's head


def lane_x(lane: int) -> float:
    return LEFT + lane * COLUMN


class Rows:
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


def arrow_rows(arrow: Arrow, layout: Layout) -> tuple[float, float]:
    """The rows an arrow runs between: its send's and its receive's, or for an end cut
    at the window's edge, the edge's (just below the heads, just past the last row)."""
    return (layout.dots[arrow.send].row if arrow.send is not None else 0.6,
            layout.dots[arrow.recv].row if arrow.recv is not None else layout.rows + 1.2)


def segment(arrow: Arrow, layout: Layout, rows: Rows) -> tuple[float, float, float, float]:
    """Where an arrow runs, (x0, y0, x1, y1): from its sender's lane to its receiver's."""
    start, end = arrow_rows(arrow, layout)
    return lane_x(arrow.sender_lane), rows.y(start), lane_x(arrow.receiver_lane), rows.y(end)
