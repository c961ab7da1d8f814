"""Text on a picture: its estimated size, and wrapping it to fit.

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
