"""Seeing a run: an MSC drawn from a trace (graphviz, an HTML viewer) or a ShiViz log.

Pictures are drawn from the trace alone — never from the run that made it —
so a recorded, hand-written or failed run draws the same way.
"""

from __future__ import annotations

from ..trace import Trace
from .layout import MAX_ROWS, layout

FORMATS = ("svg", "png", "pdf", "dot", "html", "shiviz")
_SUFFIXES = {**{form: form for form in FORMATS}, "htm": "html", "gv": "dot", "log": "shiviz"}


def render(trace: Trace, form: str, highlight: str | None = None, max_rows: int = MAX_ROWS,
           predicates=None) -> bytes:
    """The trace drawn in ``form`` (one of ``FORMATS``); ``highlight`` is an event id."""
    if form == "shiviz":
        from .shiviz import shiviz_log
        return shiviz_log(trace).encode("utf-8")
    placed = layout(trace, highlight, max_rows)
    from . import dot
    if form == "html":
        from .html import page
        svg = dot.render(placed, "svg").decode("utf-8")
        return page(trace, placed, svg, predicates).encode("utf-8")
    return dot.render(placed, form)


def format_of(path: str) -> str | None:
    """The format a file name's suffix asks for, if it names one."""
    return _SUFFIXES.get(path.rsplit(".", 1)[-1].lower()) if "." in path else None


__all__ = ["FORMATS", "MAX_ROWS", "format_of", "layout", "render"]
