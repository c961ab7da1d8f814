"""The marks a ``Scene`` is made of — text, lines, shapes, in groups — placed in points,
y growing downward: what ``cpl.view.scene`` decides and the writers (``svg``, ``dot``)
draw, nothing else."""

from __future__ import annotations

import attrs

from .text import Box, line_height

INK = "#212121"
LABEL = 9.0  # label text size


@attrs.frozen
class Text:
    """Lines of text whose box is ``box``; ``anchor`` is how each line sits on ``x``."""
    x: float
    box: Box
    lines: tuple[str, ...]
    size: float = LABEL
    colour: str = INK
    anchor: str = "start"  # start | middle | end
    bold: bool = False

    def baselines(self) -> list[float]:
        step = line_height(self.size)
        return [self.box.top + step * n + self.size * 0.95 for n in range(len(self.lines))]


@attrs.frozen
class Line:
    x0: float
    y0: float
    x1: float
    y1: float
    colour: str = INK
    width: float = 1.0
    dashed: bool = False
    head: bool = False  # an arrowhead at (x1, y1)


@attrs.frozen
class Shape:
    kind: str  # circle | diamond | box | rounded
    cx: float
    cy: float
    w: float
    h: float
    fill: str | None = None
    stroke: str = INK
    pen: float = 1.0


@attrs.frozen
class Group:
    """Marks drawn together under one id (the viewer finds them by it)."""
    id: str
    cls: str
    items: tuple


@attrs.frozen
class Scene:
    width: float
    height: float
    groups: tuple[Group, ...]
    title: str = ""


__all__ = ["INK", "LABEL", "Group", "Line", "Scene", "Shape", "Text"]
