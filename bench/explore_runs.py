"""explore: 1,000 explored code-review runs (``cpl explore``'s library).

``choreo.exploration.explore.explore_file(examples/code_review.py, 1000, …)`` as ``cpl
explore --runs 1000`` calls it: the mixed schedules (random, late, lifo,
starve by seed), every run's trace recorded in memory and handed to the
detectors (``cpl.anomalies.detect`` when it imports, else none), decisions
and work counted.  Two input sizes: ``rounds=1`` (39 events a run, as simulate_runs.py)
and the example's default ``rounds=3``.

* *simulator time*: the CPU seconds spent inside the runs (``Simulator.run``),
  summed over the workers — the target, ≤ 1 s for 1,000 runs;
* *detectors*: the CPU seconds of the detectors on those traces;
* *wall time* with one worker and with two (forked processes, seeds in
  chunks): what a user waits, pool start-up included, choreography loading
  excluded.  On a machine shared with other jobs the two-worker time is the
  one that suffers: it needs both cores at once.  So each round also times
  the machine itself: the same pure-Python loop twice in one process, then
  once in each of two forked processes — the speed-up two cores gave at
  that moment, which bounds what two workers could.

Medians of 3 interleaved rounds (``--quick``: 100 runs, 1 round).
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from timing import Row, interleaved, median

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = str(ROOT / "examples" / "code_review.py")
TARGET = 1.0  # simulator seconds for 1,000 runs


def _detectors():
    try:
        from cpl.anomalies import detect
    except Exception:  # noqa: BLE001 - not there yet: explore without
        return None
    return detect


def _burn(n: int) -> int:
    total = 0
    for i in range(n):
        total += i
    return total


def _cores(n: int = 2_000_000) -> tuple[float, float]:
    """Wall seconds of two loops in this process, then of one in each of two processes."""
    import multiprocessing
    import time

    start = time.perf_counter()
    _burn(n)
    _burn(n)
    serial = time.perf_counter() - start
    with multiprocessing.get_context("fork").Pool(2) as pool:
        pool.map(_burn, [1, 1])  # started
        start = time.perf_counter()
        pool.map(_burn, [n, n], chunksize=1)
        return serial, time.perf_counter() - start


def run(quick: bool = False) -> list[Row]:
    from choreo.exploration.explore import explore_file

    runs, repeats = (100, 1) if quick else (1_000, 3)
    detect = _detectors()
    rows = []
    for rounds in (1, 3):
        found = {}

        def measure(workers, rounds=rounds, found=found):
            def once():
                gc.collect()
                result = explore_file(EXAMPLE, runs, values={"rounds": rounds},
                                      detectors=detect, workers=workers, counters=("merges",))
                assert result.failed == 0 and result.workers == workers
                found.setdefault(workers, []).append(result)
                return result.seconds["wall"]
            return once

        cores = []

        def machine(cores=cores):
            cores.append(_cores())
            return 0.0

        walls = interleaved({1: measure(1), 2: measure(2), "cores": machine}, repeats)
        one, two = found[1], found[2]
        assert all(r.to_json()["decisions"] == one[0].to_json()["decisions"] for r in one + two)
        simulate = [r.seconds["simulate"] for r in one]
        detect_s = [r.seconds["detect"] for r in one]
        events = one[0].work["events"] / runs
        what = f"{runs:,} runs, rounds={rounds}{' (default)' if rounds == 3 else ''}, " \
               f"{events:.0f} events/run"
        rows += [
            Row("explore", f"{what}: simulator time, 1 worker", median(simulate), "s",
                simulate, target=f"≤ {TARGET:g} s" if not quick else "",
                met=median(simulate) <= TARGET if not quick else None),
            Row("explore", f"{what}: detectors' time" + ("" if detect else " (none: "
                "cpl.anomalies not importable)"), median(detect_s), "s", detect_s),
            Row("explore", f"{what}: wall, 1 worker", median(walls[1]), "s", walls[1]),
            Row("explore", f"{what}: wall, 2 workers (fork)", median(walls[2]), "s", walls[2],
                baseline="1 worker", baseline_value=median(walls[1])),
            Row("explore", "  the machine meanwhile: a loop in 2 processes vs 2 loops in 1",
                median([two for _, two in cores]), "s", [two for _, two in cores],
                baseline="2 loops in 1 process", baseline_value=median([one for one, _ in cores])),
        ]
    return rows


if __name__ == "__main__":
    from timing import table

    print(table(run(quick="--quick" in sys.argv)))
