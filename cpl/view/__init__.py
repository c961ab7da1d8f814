"""Seeing a run: an MSC drawn from a trace (graphviz, an HTML viewer) or a ShiViz log.

Pictures are drawn from the trace alone — never from the run that made it —
so a recorded, hand-written or failed run draws the same way.
"""

from __future__ import annotations

import shutil
from typing import Iterator

from .dot import NEEDS_DOT, NeedsDot
from .layout import MAX_ROWS, layout, placed
from .window import NoSuchEvent, collect

FORMATS = ("svg", "png", "pdf", "dot", "html", "shiviz")
_SUFFIXES = {**{form: form for form in FORMATS}, "htm": "html", "gv": "dot", "log": "shiviz"}


# What each form needs that pip does not install: graphviz's `dot` program draws PNG and PDF.
_NEEDS_DOT = frozenset({"png", "pdf"})


def missing(form: str) -> str | None:
    """What drawing ``form`` needs and this machine lacks, said with how to install it
    (``NEEDS_DOT``, the message ``NeedsDot`` carries too); ``None`` when nothing is missing.
    Checked before a run, not after it."""
    return NEEDS_DOT if form in _NEEDS_DOT and shutil.which("dot") is None else None


def render(source, form: str, highlight: str | None = None, max_rows: int = MAX_ROWS,
           predicates=None, values: bool | None = None, ids: bool | None = None) -> bytes:
    """The trace drawn in ``form`` (one of ``FORMATS``); ``highlight`` is an event id."""
    return b"".join(render_parts(source, form, highlight, max_rows, predicates, values, ids))


def render_parts(source, form: str, highlight: str | None = None, max_rows: int = MAX_ROWS,
                 predicates=None, values: bool | None = None,
                 ids: bool | None = None) -> Iterator[bytes]:
    """``render`` in parts, for writing as they come: ``source`` is a ``Trace`` or a
    ``.jsonl`` reader whose events are not read yet, and only the drawn window of it is
    kept (``cpl.view.window``); a ShiViz log is the whole trace, a line at a time.
    ``values``: message values on the arrows and acts' beside them — short ones
    (``None``), all, or none; ``ids``: event ids beside the events — where they fit
    (``None``), all, or none."""
    if form == "shiviz":
        from .shiviz import shiviz_lines
        for lines in _batches(shiviz_lines(source)):
            yield "".join(lines).encode("utf-8")
        return
    window = collect(source, highlight, max_rows)
    drawn = placed(window, values, ids)
    if form in ("svg", "html"):  # our own SVG: no graphviz at all
        from . import svg
        picture = svg.render(drawn)
        if form == "svg":
            yield picture
            return
        from .html import page
        schema = source.schema(predicates)  # the whole trace's, read: not the kept slice's
        yield page(window, drawn, picture.decode("utf-8"), predicates, schema).encode("utf-8")
    else:
        from . import dot
        yield dot.render(drawn, form)


def _batches(lines: Iterator[str], size: int = 4096) -> Iterator[list[str]]:
    batch = []
    for line in lines:
        batch.append(line)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def format_of(path: str) -> str | None:
    """The format a file name's suffix asks for, if it names one."""
    return _SUFFIXES.get(path.rsplit(".", 1)[-1].lower()) if "." in path else None


__all__ = ["FORMATS", "MAX_ROWS", "NEEDS_DOT", "NeedsDot", "NoSuchEvent", "format_of", "layout",
           "missing", "render", "render_parts"]
