"""Metadata bytes per message as the run grows from 4 to 256 lifelines.

The full guard (owned by the Committer, reading TestRunner and Security) on
the mix of ``monitors_mixed.py`` over the paper's four lifelines plus workers that no
guard reads but that take part in the run (``workloads.scaled_trace``: the same number of
events per lifeline at every size).  The metadata carries the entries of the
lifelines some guard reads (``Program.carried``), so its size should not move.

Baseline, from the same messages: the layout before ``carried`` — an entry
for *every* lifeline: its full vector clock (the recorder's, ``cpl.trace.clocks``,
which is what the old monitors kept), the carried views and variable views
where they are, and an empty view (0) and variable view (``[]``) for every
other lifeline — msgpack-encoded exactly as ``Metadata.encode``.
"""

from __future__ import annotations

from functools import partial

import workloads as w
from cpl.trace import Clocks
from cpl.monitor import Metadata
from metadata_size import messages
from timing import Row, median

row = partial(Row, "metadata_scale")  # every row of this file is under its name

SIZES = (4, 16, 64, 256)


def sizes(trace, guards=(w.GUARD_FULL,)) -> tuple[list[int], list[int], tuple[str, ...]]:
    """Bytes of every message (send order): carried metadata, the carry-everything
    layout, and the carried lifelines."""
    sent, program = messages(trace, list(guards))
    lean = [len(metadata.encode()) for _, metadata in sent]
    before = everything(trace, program, [m for _, m in sent])
    return lean, [len(m.encode()) for m in before], program.carried


def send_clocks(trace) -> list[tuple[int, ...]]:
    """The full vector clock of every send (send order), as the recorder stamps it."""
    clocks, out = Clocks(trace.lifelines), []
    for event in trace.events:
        clock = clocks.stamp(event.lifeline, event.kind, event.msg)
        if event.kind == "send":
            out.append(tuple(clock.values()))
    return out


def everything(trace, program, sent) -> list[Metadata]:
    """``sent`` (carried metadata, send order) in the layout before ``carried``."""
    where = {name: i for i, name in enumerate(program.carried)}
    shape = [where.get(name) for name in trace.lifelines]
    return [Metadata(clock, tuple(0 if p is None else lean.views[p] for p in shape),
                     tuple(() if p is None else lean.vars[p] for p in shape))
            for clock, lean in zip(send_clocks(trace), sent, strict=True)]


def run(quick: bool = False) -> list[Row]:
    per_lifeline = 40 if quick else 400
    rows, medians, before = [], {}, {}
    for count in SIZES:
        trace = w.scaled_trace(count, per_lifeline)
        lean, old, carried = sizes(trace)
        medians[count], before[count] = median(lean), median(old)
        note = f"carried: {', '.join(carried)}" if count == SIZES[0] else ""
        rows.append(row(f"{count} lifelines, bytes/message, median "
                        f"({len(lean):,} msgs)", median(lean), "B", lean,
                        baseline="an entry per lifeline (before)",
                        baseline_value=median(old), note=note))
        rows.append(row(f"{count} lifelines, bytes/message, max", max(lean), "B",
                        baseline="an entry per lifeline (before), max",
                        baseline_value=max(old)))
    top, bottom = SIZES[-1], SIZES[0]
    rows.append(row(f"median at {top} lifelines vs at {bottom}", medians[top], "B",
                    baseline=f"median at {bottom} lifelines", baseline_value=medians[bottom],
                    target="≤ 1.25×", met=medians[top] <= 1.25 * medians[bottom]))
    rows.append(row(f"before: median at {top} lifelines vs at {bottom}",
                    before[top], "B", baseline=f"before: median at {bottom} lifelines",
                    baseline_value=before[bottom]))
    return rows
