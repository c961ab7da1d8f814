"""Prevention twins: each example of examples/anomalies/, unguarded against guarded.

    python bench/prevention.py [--runs 200]     # prints the table of docs/anomalies.md

Per example and twin, ``cpl explore``'s library call over seeds 0..N-1 (mixed
adversarial schedules): the runs in which the example's own anomaly fired, the
failed runs, the work done (commits, aborts, retries summed over runs), the
messages per run — the guard's cost in extra messages — and the mean metadata
bytes per message (``len(Metadata.encode())``: the clock entries and views the
guards need) over the seed-0 run, replayed through the plan's monitors.  The
totals are deterministic (seeded), so tests/test_anomaly_guide.py checks the
guide's table against this output.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = (("stale_generation", "stale_generation"), ("phantom_tool", "phantom_tool"),
            ("causal_cascade", "causal_cascade"), ("tool_reordering", "tool_effect_reordering"),
            ("lost_update", "lost_update"))
HEADER = ("| example | twin | runs | anomaly runs | failed | commits | aborts | retries "
          "| messages / run | metadata B / msg |")


def metadata_bytes(plan) -> float:
    """Mean encoded metadata per message of the seed-0 run, through fresh monitors."""
    from choreo.execution.simulate import Simulator
    from cpl.monitor import Monitor
    trace = Simulator.of(plan).run(seed=0, values=plan.inputs([])).trace
    monitors = {name: Monitor(plan.monitors, name, trace.init.get(name))
                for name in trace.lifelines}
    in_flight, sizes = {}, []
    for event in trace.events:
        monitor = monitors[event.lifeline]
        if event.kind == "send":
            in_flight[event.msg] = metadata = monitor.send()
            sizes.append(len(metadata.encode()))
        elif event.kind == "recv":
            monitor.receive(in_flight.pop(event.msg), event.set)
        elif event.kind == "act":
            monitor.act(event.set)
        else:
            monitor.choice()
    return statistics.fmean(sizes) if sizes else 0.0


def rows(runs: int = 200) -> list[str]:
    """One markdown row per example and twin."""
    from choreo import load_one
    from choreo.exploration.explore import Source, explore
    from choreo.execution.plan import prepare
    from cpl.anomalies import detect

    found = []
    for example, anomaly in EXAMPLES:
        path = ROOT / "examples" / "anomalies" / f"{example}.py"
        for twin in ("unguarded", "guarded"):
            plan = prepare(load_one(str(path), twin))
            result = explore(plan, runs, detectors=detect, source=Source(str(path), twin))
            work = result.work
            failed = sum(n for status, n in result.statuses.items() if status != "ok")
            found.append(
                f"| {example} | {twin} | {result.runs} | {result.anomalies.get(anomaly, 0)} "
                f"| {failed} | {work.get('commits', 0)} | {work.get('aborts', 0)} "
                f"| {work.get('retries', 0)} | {work['messages'] / result.runs:.1f} "
                f"| {metadata_bytes(plan):.1f} |")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args(argv)
    print(HEADER)
    print("|" + "---|" * HEADER.count(" | ") + "---|")
    for row in rows(args.runs):
        print(row)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
