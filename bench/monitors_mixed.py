"""Events per second through the four monitors of the paper's workflow on a
100,000-event mixed trace.

The monitors are driven by ``workloads.drive`` over pre-built event tuples
(bound steps looked up once per lifeline); the same loop over do-nothing
steps is timed in the same rounds, so the loop's own share is visible.
"""

from __future__ import annotations

from functools import partial

import baselines
import workloads as w
from timing import Row, interleaved, median, rate, timed

row = partial(Row, "monitors_mixed")  # every row of this file is under its name

GUARDS = {"guard 1": w.GUARD_TESTS, "full guard": w.GUARD_FULL}
ZIPPERGEN = 0.09e6  # ZipperGen 0.1.0a5 on this workload: a quoted figure, not measured here


def run(quick: bool = False) -> list[Row]:
    n, repeats, head = (5_000, 2, 300) if quick else (100_000, 9, 2_000)
    trace = w.mixed_trace(n)
    counts = w.kind_counts(trace)
    noop_steps, messages = w.steps(trace, w.noop_handlers(trace.lifelines))

    def monitors(guard):
        def once():
            program, _ = w.compile_program({"Committer": guard}, trace.lifelines, w.PAPER_VARS)
            _, handlers = w.monitor_handlers(program, trace.lifelines)
            step_list, _ = w.steps(trace, handlers)
            return timed(lambda: w.drive(step_list, messages))
        return once

    candidates = {"driver": lambda: timed(lambda: w.drive(noop_steps, messages))}
    candidates.update({name: monitors(guard) for name, guard in GUARDS.items()})
    runs = interleaved(candidates, repeats)

    short = baselines.prefix(trace, head)
    reference_runs = interleaved(
        {name: (lambda g=guard: baselines.reference_seconds(short, g, "Committer"))
         for name, guard in GUARDS.items()}, max(1, repeats // 2 if not quick else 1))
    log_runs = interleaved(
        {name: (lambda g=guard: baselines.global_log_seconds(short, g, "Committer"))
         for name, guard in GUARDS.items()}, max(1, repeats // 2 if not quick else 1))

    mix = ", ".join(f"{k} {100 * v / n:.0f}%" for k, v in counts.items())
    driver = rate(n, runs["driver"])
    rows = [row(f"driver loop alone (no-op steps), {n:,} events", median(driver), "events/s",
                driver, note=f"mix: {mix}; 4 lifelines, non-FIFO, seed 2026")]
    for name in GUARDS:
        values = rate(n, runs[name])
        reference = rate(head, reference_runs[name])
        log = rate(head, log_runs[name])
        net = [(m - d) / n * 1e9 for m, d in zip(runs[name], runs["driver"])]
        first = name == "guard 1"
        rows.append(row(f"monitors, {name}", median(values), "events/s", values,
                        baseline=f"cpl.semantics.reference, {head}-event prefix",
                        baseline_value=median(reference),
                        target="≥ 2.5 M" if first else "",
                        met=median(values) >= 2.5e6 if first else None))
        rows.append(row(f"monitors, {name}", median(values), "events/s", values,
                        baseline=f"naive global log, {head}-event prefix",
                        baseline_value=median(log)))
        rows.append(row(f"monitor work per event, {name} (minus driver)", median(net),
                        "ns/event", net))
    rows.append(row("ZipperGen 0.1.0a5, guard 1 (quoted figure)", ZIPPERGEN, "events/s",
                    note="quoted, not measured by us"))
    return rows
