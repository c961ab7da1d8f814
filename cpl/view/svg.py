"""A ``Scene`` written as SVG by us: no graphviz, no ``dot`` program.

Every piece of trace text is made ``visible`` (control characters, line
separators and bidirectional overrides as their escapes) and then XML-escaped
into the content of a ``<text>`` element: no trace text ever reaches an
attribute, a tag name or a comment, so none of it can become markup.  Ids and
classes are ours (``ev-12``, ``msg-3``; ``g.graph`` holds the drawing), as the
viewer's script and style expect.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from .dot import visible
from .layout import Layout
from .scene import FONT, Line, Scene, Shape, Text, scene

_HEAD, _HEAD_HALF = 7.0, 2.6  # an arrowhead's length and half width, in points


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _text(item: Text) -> str:
    anchor = f' text-anchor="{item.anchor}"'
    weight = ' font-weight="bold"' if item.bold else ""
    return "".join(
        f'<text x="{_n(item.x)}" y="{_n(y)}" font-size="{_n(item.size)}" fill="{item.colour}"'
        f'{anchor}{weight}>{escape(visible(line))}</text>'
        for line, y in zip(item.lines, item.baselines()))


def _line(item: Line) -> str:
    x0, y0, x1, y1 = item.x0, item.y0, item.x1, item.y1
    dash = ' stroke-dasharray="5,2"' if item.dashed else ""
    if not item.head:
        return (f'<path fill="none" stroke="{item.colour}" stroke-width="{_n(item.width)}"{dash}'
                f' d="M{_n(x0)},{_n(y0)} L{_n(x1)},{_n(y1)}"/>')
    dx, dy = x1 - x0, y1 - y0
    length = (dx * dx + dy * dy) ** 0.5 or 1.0
    ux, uy = dx / length, dy / length
    bx, by = x1 - ux * _HEAD, y1 - uy * _HEAD  # the head's base: the line ends there
    points = [(x1, y1), (bx - uy * _HEAD_HALF, by + ux * _HEAD_HALF),
              (bx + uy * _HEAD_HALF, by - ux * _HEAD_HALF)]
    return (f'<path fill="none" stroke="{item.colour}" stroke-width="{_n(item.width)}"{dash}'
            f' d="M{_n(x0)},{_n(y0)} L{_n(bx)},{_n(by)}"/>'
            f'<polygon fill="{item.colour}" stroke="{item.colour}" points="'
            + " ".join(f"{_n(x)},{_n(y)}" for x, y in points) + '"/>')


def _shape(item: Shape) -> str:
    fill = item.fill or "none"
    paint = f'fill="{fill}" stroke="{item.stroke}" stroke-width="{_n(item.pen)}"'
    x, y, w, h = item.cx, item.cy, item.w / 2, item.h / 2
    if item.kind == "circle":
        return f'<ellipse {paint} cx="{_n(x)}" cy="{_n(y)}" rx="{_n(w)}" ry="{_n(h)}"/>'
    if item.kind == "diamond":
        points = [(x, y - h), (x + w, y), (x, y + h), (x - w, y)]
    elif item.kind == "box":
        points = [(x - w, y - h), (x + w, y - h), (x + w, y + h), (x - w, y + h)]
    else:  # rounded: a path, as graphviz draws a rounded box
        r = min(6.0, w, h)
        return (f'<path {paint} d="M{_n(x - w + r)},{_n(y - h)} H{_n(x + w - r)} '
                f'Q{_n(x + w)},{_n(y - h)} {_n(x + w)},{_n(y - h + r)} V{_n(y + h - r)} '
                f'Q{_n(x + w)},{_n(y + h)} {_n(x + w - r)},{_n(y + h)} H{_n(x - w + r)} '
                f'Q{_n(x - w)},{_n(y + h)} {_n(x - w)},{_n(y + h - r)} V{_n(y - h + r)} '
                f'Q{_n(x - w)},{_n(y - h)} {_n(x - w + r)},{_n(y - h)} Z"/>')
    return f'<polygon {paint} points="' + " ".join(f"{_n(a)},{_n(b)}" for a, b in points) + '"/>'


_WRITE = {Text: _text, Line: _line, Shape: _shape}


def write(drawn: Scene) -> str:
    """The SVG document of a scene."""
    w, h = _n(drawn.width), _n(drawn.height)
    parts = ['<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n',
             f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}pt" height="{h}pt" '
             f'viewBox="0 0 {w} {h}">\n',
             f'<g id="graph0" class="graph" font-family="{FONT},Arial,sans-serif">\n',
             f'<polygon fill="white" stroke="none" points="0,0 {w},0 {w},{h} 0,{h}"/>\n']
    for group in drawn.groups:
        inner = "".join(_WRITE[type(item)](item) for item in group.items)
        parts.append(f'<g id="{group.id}" class="{group.cls}">{inner}</g>\n')
    parts.append("</g>\n</svg>\n")
    return "".join(parts)


def render(layout: Layout) -> bytes:
    return write(scene(layout)).encode("utf-8")
