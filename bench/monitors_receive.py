"""Events per second through monitors on a receive-heavy trace: eight lifelines,
45% recv, 45% send, 10% act.

Two deciders (Reviewer, Merger) each read ``@`` of three others, so most
receives copy view entries.  Baselines in the same run: the unpruned monitor
(every lifeline evaluates and ships every subformula and variable) and the
reference evaluator on a prefix.
"""

from __future__ import annotations

from functools import partial

import baselines
import workloads as w
from timing import Row, interleaved, median, rate, timed

row = partial(Row, "monitors_receive")  # every row of this file is under its name


def run(quick: bool = False) -> list[Row]:
    n, repeats, head = (5_000, 2, 300) if quick else (100_000, 9, 2_000)
    trace = w.receive_heavy_trace(n)
    counts = w.kind_counts(trace)
    noop_steps, messages = w.steps(trace, w.noop_handlers(trace.lifelines))

    def monitors(prune):
        def once():
            program, _ = w.compile_program(w.WIDE_GUARDS, trace.lifelines, w.WIDE_VARS, prune)
            _, handlers = w.monitor_handlers(program, trace.lifelines)
            step_list, _ = w.steps(trace, handlers)
            return timed(lambda: w.drive(step_list, messages))
        return once

    runs = interleaved({"driver": lambda: timed(lambda: w.drive(noop_steps, messages)),
                        "pruned": monitors(True), "unpruned": monitors(False)}, repeats)
    short = baselines.prefix(trace, head)

    def reference():
        return sum(baselines.reference_seconds(short, guard, owner)
                   for owner, guard in w.WIDE_GUARDS.items())

    reference_rate = rate(head, interleaved({"ref": reference}, 1 if quick else 3)["ref"])
    driver, pruned, unpruned = (rate(n, runs[k]) for k in ("driver", "pruned", "unpruned"))
    mix = ", ".join(f"{k} {100 * v / n:.0f}%" for k, v in counts.items() if v)
    return [
        row(f"driver loop alone (no-op steps), {n:,} events", median(driver), "events/s",
            driver, note=f"mix: {mix}; 8 lifelines, non-FIFO, seed 2027"),
        row("monitors (pruned)", median(pruned), "events/s", pruned,
            baseline="unpruned monitors", baseline_value=median(unpruned),
            target="≥ 1 M", met=median(pruned) >= 1e6),
        row("monitors (pruned)", median(pruned), "events/s", pruned,
            baseline=f"cpl.semantics.reference, {head}-event prefix",
            baseline_value=median(reference_rate)),
    ]
