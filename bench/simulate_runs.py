"""Simulated code-review runs per second (``examples/code_review.py``, ``rounds=1``).

What one run is, and what is counted: the choreography is loaded, validated,
projected and its guards compiled **once** (``choreo.execution.simulate.Simulator``:
none of it depends on the seed or the inputs, and ``cpl run --sim`` would
reuse it for a sweep); that one-off cost is its own row.  Each run then
counts, per seed: reading the inputs, building the four CPL monitors and
lifeline machines and the seeded scheduler, simulating to completion
(every event through its monitor, the actions, non-FIFO delivery) and
building the ``cpl-msc/1`` ``Trace`` object in memory (then dropped, as a
sweep that checks or writes each one would).  Writing it to a file is not
counted.  Times are CPU seconds, with the recorded traces the replay needs
frozen out of the collector's way (``timing.timed``).

Baselines, timed interleaved with the simulation over the same seeds:

* replay (the ratio's denominator): the traces those runs recorded, fed
  through fresh monitors by ``cpl.monitor.offline.replay`` — the monitoring work
  of the very same events with no scheduling, no machines, no actions and no
  trace building.  The ratio says what a simulated run costs over the
  monitoring it must do anyway.
* scheduler floor: per seed a ``random.Random(seed)`` picking uniformly,
  ``randrange`` by ``randrange``, from a plain list of as many events as the
  run has — the bare cost of a seeded interleaving in Python.

Memory: ``cpl run --sim`` without ``--trace`` keeps no events, so peak RSS
must not grow with ``rounds``; the last rows compare a short and a long run
(each a ``cpl`` subprocess whose peak RSS a small wrapper reports), and the
long run again with its trace streamed to a ``.jsonl`` file (≤ 64 MiB).
"""

from __future__ import annotations

import random
import sys
import tempfile
from functools import partial
from pathlib import Path

from timing import (Row, cpu_seconds, interleaved, median, timed,
                    peak_rss_kib as peak_rss_kib_of)

row = partial(Row, "simulate_runs")  # every row of this file is under its name

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "code_review.py"
TARGET = 2_000  # runs/s

def _simulate_all(simulator, seeds, inputs, record: bool = True) -> int:
    """Each run's trace is built and then dropped, as a sweep that writes or checks each
    would: keeping 2,000 traces alive made the collector's full passes 15% of the time."""
    events = 0
    for seed in seeds:
        events += len(simulator.run(seed=seed, values=inputs, record=record).trace.events)
    return events


def _replay_all(traces, program) -> None:
    from cpl.monitor import replay

    for trace in traces:
        for _ in replay(trace, program):
            pass


def _schedule_all(seeds, lengths) -> None:
    for seed, length in zip(seeds, lengths):
        rng = random.Random(seed)
        waiting, order = list(range(length)), []
        while waiting:
            order.append(waiting.pop(rng.randrange(len(waiting))))


def peak_rss_kib(rounds: int, trace: Path | None = None) -> int:
    """Peak RSS of ``cpl run examples/code_review.py --sim --arg rounds=N [--trace T]``."""
    command = [sys.executable, "-m", "cpl_cli", "run", str(EXAMPLE), "--sim", "--seed", "1",
               "--arg", f"rounds={rounds}"] + (["--trace", str(trace)] if trace else [])
    return peak_rss_kib_of(command, cwd=ROOT)


def run(quick: bool = False) -> list[Row]:
    import choreo
    from choreo.execution.simulate import Simulator, simulate

    n, repeats, full_n = (200, 2, 20) if quick else (2_000, 7, 200)
    short, long = (100, 2_000) if quick else (1_000, 100_000)
    seeds = range(n)
    inputs = {"rounds": 1}
    c = choreo.load_one(str(EXAMPLE))
    setup = [cpu_seconds(lambda: Simulator(c)) for _ in range(repeats)]
    simulator = Simulator(c)
    traces = [simulator.run(seed=seed, values=inputs).trace for seed in seeds]
    assert all(t.meta["status"] == "ok" for t in traces)
    lengths = [len(t.events) for t in traces]
    runs = interleaved({
        "simulate": lambda: timed(lambda: _simulate_all(simulator, seeds, inputs)),
        "unrecorded": lambda: timed(lambda: _simulate_all(simulator, seeds, inputs, False)),
        "replay": lambda: timed(lambda: _replay_all(traces, simulator.plan.monitors)),
        "schedule": lambda: timed(lambda: _schedule_all(seeds, lengths)),
        "uncached": lambda: timed(lambda: [simulate(c, seed=s, values=inputs)
                                                 for s in range(full_n)]),
    }, repeats)
    per = {name: [(full_n if name == "uncached" else n) / s for s in values]
           for name, values in runs.items()}
    sim, replay, floor = median(per["simulate"]), median(per["replay"]), median(per["schedule"])
    events = sum(lengths) / n
    rows = [
        row(f"simulated runs, rounds=1, {n:,} seeds ({events:.1f} events/run)", sim,
            "runs/s", per["simulate"], baseline="offline.replay of the same traces",
            baseline_value=replay, target=f"≥ {TARGET:,}", met=sim >= TARGET),
        row("the same runs vs the scheduler floor", sim, "runs/s", per["simulate"],
            baseline="random.Random(seed).randrange over a plain list", baseline_value=floor),
        row("the same runs with record=False (no Event, empty Trace)",
            median(per["unrecorded"]), "runs/s", per["unrecorded"]),
        row(f"simulate() per run incl. validate+project+compile, {full_n} seeds",
            median(per["uncached"]), "runs/s", per["uncached"]),
        row("Simulator(c) once: validate + project + compile guards", median(setup), "s",
            setup),
    ]
    rss = {rounds: peak_rss_kib(rounds) for rounds in (short, long)}
    rows += [row(f"peak RSS, cpl run --sim rounds={rounds:,}, no --trace", kib / 1024,
                 "MiB", [kib / 1024]) for rounds, kib in rss.items()]
    rows[-1].baseline, rows[-1].baseline_value = f"rounds={short:,}", rss[short] / 1024
    rows[-1].target, rows[-1].met = "bounded", rss[long] <= 1.25 * rss[short]
    with tempfile.TemporaryDirectory() as folder:  # the streamed trace: several hundred MB
        streamed = peak_rss_kib(long, Path(folder) / "t.jsonl") / 1024
    rows.append(row(f"peak RSS, cpl run --sim rounds={long:,} --trace t.jsonl", streamed,
                    "MiB", [streamed], target="≤ 64 MiB", met=streamed <= 64))
    return rows


if __name__ == "__main__":
    from timing import table

    print(table(run(quick="--quick" in sys.argv)))
