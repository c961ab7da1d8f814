"""A ``Scene`` drawn by graphviz: DOT text, and PNG/PDF from it.

Graphviz only draws here: every mark of the scene (``cpl.view.scene``, where
all geometry and label placement is decided) becomes a node pinned where the
scene put it (``neato -n2``), a line an edge between two pinned points.  SVG
and the HTML viewer do not come through here (``cpl.view.svg``): only PNG,
PDF and DOT need graphviz, and PNG and PDF its ``dot`` program
(``NeedsDot`` says so, and how to install it).  Text from the trace goes
through ``escaped`` — a lifeline called ``<b>`` or ``\\N`` is shown, never
interpreted, and a control character as its escape (``\\x00``, ``\\n``): a
NUL ends graphviz's string, and XML cannot hold the others — and node names
are our own (``n12``), never the trace's.
"""

from __future__ import annotations

import re
import shutil

from ..errors import EXIT_USAGE, CplError, TraceError
from .layout import Layout
from .points import COLUMN, MARGIN, ROW
from .scene import FALSE, FONT, GREY, INK, TRUE, Line, Scene, Shape, scene

FORMATS = ("svg", "png", "pdf", "dot")
NEEDS_DOT = ("graphviz's 'dot' program is needed for PNG and PDF and is not installed "
             "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; "
             "conda: conda install -c conda-forge graphviz); SVG and HTML need nothing")
# What XML 1.0 cannot hold or a reader would not see: C0 and C1 controls, DEL, the line and
# paragraph separators, the bidirectional overrides, surrogates and two non-characters.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                        "\ud800-\udfff\ufffe\uffff]")
_POINT = 72.0  # graphviz's sizes are in inches


class NeedsDot(CplError):
    """PNG or PDF asked for where graphviz's ``dot`` program is missing (the message says
    how to install it)."""

    exit_code = EXIT_USAGE


def visible(text: str) -> str:
    """``text`` with every character ``_INVISIBLE`` holds written as its Python escape."""
    return _INVISIBLE.sub(lambda found: repr(found[0])[1:-1], text)


def escaped(text: str) -> str:
    """Trace text as a graphviz label shows it, literally: ``visible``, then graphviz's escape."""
    import graphviz
    return graphviz.escape(visible(text))


def graph(layout: Layout | Scene):
    """The DOT graph (a ``graphviz.Digraph``; ``.source`` is the DOT text) of a layout's
    scene, every node pinned.  Its statements are written here, one a line, rather than
    through ``Digraph.node`` (a whole trace has tens of thousands); only labels hold text
    that is not ours, and they go through ``escaped`` and graphviz's own quoting."""
    import graphviz
    from graphviz.quoting import quote
    drawn = layout if isinstance(layout, Scene) else scene(layout)
    g = graphviz.Digraph("msc", engine="neato")
    g.attr(splines="line", outputorder="edgesfirst", bgcolor="white", pad="0")
    g.attr("node", fontname=FONT, margin="0", width="0", height="0", fixedsize="true",
           label="")
    g.attr("edge", arrowsize="0.6", fontname=FONT)
    height, body = drawn.height, g.body

    def pos(x: float, y: float) -> str:  # graphviz's y grows upward
        return f'pos="{x:.1f},{height - y:.1f}!"'

    for corner, (x, y) in enumerate(((0.0, 0.0), (drawn.width, drawn.height))):
        body.append(f"\tcorner{corner} [shape=point style=invis {pos(x, y)}]\n")
    count = 0
    for group in drawn.groups:
        ident = f'id="{group.id}"'  # ours: ev-12, msg-3, lifeline-0
        for item in group.items:
            count += 1
            name = f"n{count}"
            if isinstance(item, Line):
                body.append(f"\t{name}a [shape=point style=invis {pos(item.x0, item.y0)}]\n")
                body.append(f"\t{name}b [shape=point style=invis {pos(item.x1, item.y1)}]\n")
                body.append(f'\t{name}a -> {name}b [{ident} color="{item.colour}" '
                            f"penwidth={item.width:g} "
                            f"arrowhead={'normal' if item.head else 'none'} "
                            f"style={'dashed' if item.dashed else 'solid'}]\n")
            elif isinstance(item, Shape):
                shape = {"circle": "ellipse", "rounded": "box"}.get(item.kind, item.kind)
                style = "rounded,filled" if item.kind == "rounded" else (
                    "filled" if item.fill else "solid")
                body.append(f'\t{name} [shape={shape} {ident} {pos(item.cx, item.cy)} '
                            f"width={item.w / _POINT:.3f} height={item.h / _POINT:.3f} "
                            f'style="{style}" fillcolor="{item.fill or "none"}" '
                            f'color="{item.stroke}" penwidth={item.pen:g}]\n')
            else:
                end = {"start": "\\l", "end": "\\r"}.get(item.anchor, "\\n")
                label = quote("".join(escaped(line) + end for line in item.lines))
                box = item.box
                body.append(f"\t{name} [label={label} shape=plaintext {ident} "
                            f'fontsize={item.size:g} fontcolor="{item.colour}" '
                            f"width={(box.right - box.left) / _POINT:.3f} "
                            f"height={(box.bottom - box.top) / _POINT:.3f} "
                            f"{pos((box.left + box.right) / 2, (box.top + box.bottom) / 2)}]\n")
    return g


def render(layout: Layout, form: str) -> bytes:
    """The picture in ``form``: ``dot`` (the DOT text), or what graphviz draws of it."""
    g = graph(layout)
    if form == "dot":
        return g.source.encode("utf-8")
    import graphviz
    if shutil.which("dot") is None:
        raise NeedsDot(NEEDS_DOT)
    try:  # the whole text at once: a dot that stops reading early is its failure, not EPIPE
        return graphviz.pipe(g.engine, form, g.source.encode("utf-8"), neato_no_op=2,
                             quiet=True)
    except graphviz.ExecutableNotFound:
        raise NeedsDot(NEEDS_DOT) from None
    except graphviz.CalledProcessError as error:  # its last line says why, not a traceback
        detail = (error.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise TraceError("graphviz failed to draw the trace"
                         + (f": {detail[-1]}" if detail else "")) from None


__all__ = ["COLUMN", "FALSE", "FORMATS", "GREY", "INK", "MARGIN", "NEEDS_DOT", "NeedsDot",
           "ROW", "TRUE", "escaped", "graph", "render", "visible"]
