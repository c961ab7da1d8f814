"""render: drawing a ~5,000-event MSC, against graphviz drawing a bare graph as big.

The trace is ``examples/code_review.py`` simulated in this process with
``rounds=156``, seed 1 (5,008 events over 4 lifelines; ``--quick``: 5 rounds).
Each measurement is *wall* time (for PNG, graphviz runs as a child process, ``dot
-Kneato -n2``, through the ``graphviz`` package as ``cpl.view`` calls it; SVG is
written by ``cpl.view.svg`` itself), a median of interleaved rounds:

* layout alone (``cpl.view.layout``), with the default window (``max_rows=150``:
  acts folded, then only the last 150 rows drawn) and of the whole trace
  (``max_rows=0``);
* ``cpl.view.render`` to SVG and PNG with the default window, and of the whole
  trace;
* the whole trace's DOT text (``render(..., "dot", max_rows=0)``: layout and
  building the graph, no graphviz) — the Python share of the whole-trace
  pictures;
* ``render(..., "shiviz")`` (vector clocks and the log text; no graphviz).

Baseline, in the same rounds: graphviz alone drawing, in the same format, a graph
with as many nodes and edges as the whole-trace picture (counted from
``cpl.view.dot.graph``), every node a labelless point pinned on a grid over the
same canvas, every edge a straight line between two of them, through the same
``graphviz`` package and ``neato -n2``.  The ratio says what our layout, labels
and styling cost over graphviz's own drawing (for SVG: our whole drawing against
graphviz drawing a bare graph).

Without graphviz's ``dot`` on ``PATH`` only the rows that need no graphviz are
measured (layout, DOT text, ShiViz).
"""

from __future__ import annotations

import gc
import math
import re
import shutil
import time
from pathlib import Path
from typing import Callable

from timing import Row, interleaved, median

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "code_review.py"
ROUNDS, QUICK_ROUNDS = 156, 5  # 156 rounds: 5,008 events (32 a round)
_NODE = re.compile(r"\t(?!(?:graph|node|edge) \[)\S+ \[")  # a node statement of graph.body


def wall_seconds(function: Callable[[], object]) -> float:
    """Wall seconds for one call (it waits for its graphviz child)."""
    gc.collect()
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def review_trace(rounds: int):
    from choreo import load_one
    from choreo.execution.plan import prepare
    from choreo.execution.simulate import Simulator

    plan = prepare(load_one(str(EXAMPLE), None))
    return Simulator.of(plan).run(seed=1, values=plan.inputs([f"rounds={rounds}"])).trace


def counts(graph) -> tuple[int, int]:
    """(nodes, edges) of a ``graphviz.Digraph``: its body has one statement a line."""
    edges = sum(1 for line in graph.body if " -> " in line)
    nodes = sum(1 for line in graph.body if " -> " not in line and _NODE.match(line))
    return nodes, edges


def bare_graph(nodes: int, edges: int, width: float, height: float):
    """``nodes`` labelless points pinned on a grid over ``width`` × ``height`` points, and
    ``edges`` straight lines, each from a point to the one a row below and a column on."""
    import graphviz

    columns = max(1, round(math.sqrt(nodes * width / height)))
    rows = math.ceil(nodes / columns)
    g = graphviz.Digraph("bare", engine="neato")
    g.attr(splines="line", bgcolor="white")
    g.attr("node", shape="point", width="0.1", label="")
    g.attr("edge", arrowsize="0.6")
    for k in range(nodes):
        x = 20 + (k % columns) * width / columns
        y = 20 + (k // columns) * height / rows
        g.node(f"n{k}", pos=f"{x:.1f},{y:.1f}!")
    for k in range(edges):
        g.edge(f"n{k % nodes}", f"n{(k % nodes + columns + 1) % nodes}")
    return g


def run(quick: bool = False) -> list[Row]:
    import cpl.view as view
    from cpl.view import dot

    rounds, repeats = (QUICK_ROUNDS, 1) if quick else (ROUNDS, 7)
    trace = review_trace(rounds)
    events = len(trace.events)
    whole = view.layout(trace, max_rows=0)
    window = view.layout(trace)
    nodes, edges = counts(dot.graph(whole))
    width = 2 * dot.MARGIN + 60 + len(whole.lifelines) * dot.COLUMN
    height = 2 * dot.MARGIN + (whole.rows + 3) * dot.ROW
    has_dot = shutil.which("dot") is not None

    candidates = {
        "layout": lambda: wall_seconds(lambda: view.layout(trace)),
        "layout whole": lambda: wall_seconds(lambda: view.layout(trace, max_rows=0)),
        "dot whole": lambda: wall_seconds(lambda: view.render(trace, "dot", max_rows=0)),
        "shiviz": lambda: wall_seconds(lambda: view.render(trace, "shiviz")),
    }
    if has_dot:
        bare = bare_graph(nodes, edges, width, height)
        for form in ("svg", "png"):
            candidates.update({
                form: lambda form=form: wall_seconds(lambda: view.render(trace, form)),
                f"{form} whole": lambda form=form: wall_seconds(
                    lambda: view.render(trace, form, max_rows=0)),
                f"bare {form}": lambda form=form: wall_seconds(
                    lambda: bare.pipe(format=form, neato_no_op=2, quiet=True)),
            })
        view.render(review_trace(1), "svg")  # warm: imports, the first graphviz start
    runs = interleaved(candidates, repeats)

    size = f"{events:,} events"
    shown = (f"{window.rows} rows of {whole.rows:,}, {len(window.dots)} dots "
             f"({window.folded:,} acts folded, {window.skipped_before:,} events above)")
    picture = (f"{whole.rows:,} rows, {len(whole.dots):,} dots, {len(whole.arrows):,} arrows: "
               f"{nodes:,} graphviz nodes, {edges:,} edges")
    bare_what = f"graphviz alone: {nodes:,} labelless pinned points, {edges:,} lines"
    rows = [
        Row("render", f"layout, default window (max_rows=150), {size}", median(runs["layout"]),
            "s", runs["layout"], note=shown),
        Row("render", "layout, whole trace (max_rows=0)", median(runs["layout whole"]), "s",
            runs["layout whole"], note=picture),
    ]
    if has_dot:
        for form in ("svg", "png"):
            base = median(runs[f"bare {form}"])
            rows += [
                Row("render", f"{form.upper()}, default window", median(runs[form]), "s",
                    runs[form]),
                Row("render", f"{form.upper()}, whole trace", median(runs[f"{form} whole"]), "s",
                    runs[f"{form} whole"], baseline=f"{bare_what}, {form.upper()}",
                    baseline_value=base),
            ]
        if height * 96 / 72 > 32_767:  # graphviz's PNG is 96 dpi
            rows[-1].note = ("graphviz's cairo bitmaps stop at 32,767 px: the whole trace's "
                             "PNG comes out scaled down (so does the baseline's)")
    rows += [
        Row("render", ("  of which " if has_dot else "") + "layout + DOT text, whole trace "
            "(no graphviz)",
            median(runs["dot whole"]), "s", runs["dot whole"]),
        Row("render", "ShiViz log, whole trace", median(runs["shiviz"]), "s", runs["shiviz"]),
    ]
    if not has_dot:
        rows[0].note += "; graphviz `dot` not found: SVG and PNG not measured"
    return rows
