"""verify: what one MSC of ``choreo.verify`` costs against one simulated run.

For the flagship (``examples/code_review.py``, at its default ``rounds=3`` and at
``rounds=1``) and the
anomaly twins (``examples/anomalies/*.py`` and ``examples/stale_publish.py``,
``guarded`` and ``unguarded``), all in this one process, each round times:

* ``choreo.verify(plan, detectors=None)`` against the simulator's loop as ``cpl
  explore`` runs it without detectors: ``Simulator(c).run(seed=k,
  schedule=explore.schedule_of(k))`` for k = 0, 1, … — CPU milliseconds per MSC
  against per run, and events per second;
* ``choreo.verify(plan)`` (the catalog's detectors) against
  ``choreo.exploration.explore.explore(plan, n, detectors=detect)``: the
  like-for-like figure.  ``stale_publish``'s bad outcome is no catalog
  anomaly: both get its own detector (``published_stale``) too, in process.

The target: one verified MSC costs ≤ 2× one simulated run.  A space the search
does not finish within ``--time-limit`` seconds (verify's own bound: wall clock)
or ``--runs`` MSCs is *bounded*: its rates are those of the MSCs it reached.  A space that finishes
in less than ``MIN_CPU`` is verified again until it has taken that long.

Then, for the unguarded twins: how many MSCs ``verify`` explores to its first
counterexample (``report.first[detector].index``) against how many runs ``cpl
explore`` (mixed schedules, seeds from 0, up to ``--first-runs``) makes to the
first run in which a detector fires.  And the peak RSS of a verify over the
largest spaces (:data:`MEMORY`), each in a fresh process, against that process
with the choreography loaded and no search; and the search's own peak Python
allocations (tracemalloc).

Medians of ``--repeats`` interleaved rounds (``--quick``: one round, small bounds).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

from timing import Row, median

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TARGET = 2.0  # one verified MSC costs at most this many simulated runs
MIN_CPU = 0.2  # seconds: a space verified faster than this is verified again
TWINS = ("causal_cascade", "lost_update", "phantom_tool", "stale_generation", "tool_reordering")
# case -> (file under examples/, --name, inputs)
CASES = {"code_review": ("code_review.py", None, {}),
         "code_review rounds=1": ("code_review.py", None, {"rounds": 1})} | {
    f"{twin} {name}": (f"anomalies/{twin}.py", name, {})
    for twin in TWINS for name in ("guarded", "unguarded")} | {
    f"stale_publish {name}": ("stale_publish.py", name, {}) for name in ("guarded", "unguarded")}
# Peak RSS: the largest spaces that complete (26,244 and 596 MSCs), and one bounded at
# 20 s: the seconds each search may take (the complete ones end well before).
MEMORY = {"code_review rounds=1": 300.0, "lost_update guarded": 300.0,
          "tool_reordering guarded": 20.0}


class Case(NamedTuple):
    plan: object  # choreo.execution.Plan, prepared once
    detectors: object  # the catalog's; stale_publish's own too
    values: dict


def load(case: str) -> Case:
    import choreo
    from choreo.execution import prepare
    from cpl.anomalies import detect

    file, name, values = CASES[case]
    plan = prepare(choreo.load_one(str(EXAMPLES / file), name))
    if file != "stale_publish.py":
        return Case(plan, detect, values)
    from choreo.exploration.user_detectors import load_detector  # as --detect loads it

    stale = load_detector(f"{EXAMPLES / file}:published_stale")  # run here, not in a child
    return Case(plan, (detect, {"published_stale": lambda trace: list(stale(trace))}), values)


def _verify(case: Case, detectors, runs: int, time_limit: float):
    """(MSCs, events, CPU seconds, the last report): verified again until MIN_CPU."""
    import choreo

    mscs = events = 0
    cpu = 0.0
    while True:
        gc.collect()
        start = time.process_time()
        report = choreo.verify(case.plan, values=case.values, detectors=detectors,
                               max_runs=runs, time_limit=time_limit, counterexample=None)
        cpu += time.process_time() - start
        mscs, events = mscs + report.mscs, events + report.work["events"]
        if cpu >= MIN_CPU or not report.complete or not report.mscs:
            return mscs, events, cpu, report


def _simulate(case: Case, runs: int, time_limit: float) -> tuple[int, int, float]:
    """(runs, events, CPU seconds) of seeds 0, 1, … as ``cpl explore`` runs them."""
    from choreo.execution import Simulator
    from choreo.exploration import explore

    simulator = Simulator.of(case.plan)
    gc.collect()
    events, cpu, start = 0, 0.0, time.process_time()
    k = 0
    while (k < runs or cpu < MIN_CPU) and cpu < time_limit:
        result = simulator.run(seed=k, values=case.values, schedule=explore.schedule_of(k))
        events += len(result.trace.events)
        k += 1
        cpu = time.process_time() - start
    return k, events, cpu


def _explore(case: Case, runs: int) -> tuple[int, int, float]:
    from choreo.exploration import explore

    gc.collect()
    start = time.process_time()
    found = explore.explore(case.plan, runs, values=case.values, detectors=case.detectors,
                            workers=1)
    return found.runs, found.work["events"], time.process_time() - start


def rates(name: str, repeats: int, runs: int, time_limit: float) -> list[Row]:
    """The case's rows: ms per MSC against ms per run, without and with detectors."""
    case = load(name)
    got: dict[str, list] = {"bare": [], "sim": [], "checked": [], "explore": []}
    report = None
    for _ in range(repeats):
        *bare, report = _verify(case, None, runs, time_limit)
        got["bare"].append(bare)
        got["sim"].append(_simulate(case, runs, time_limit))
        *checked, _ = _verify(case, case.detectors, runs, time_limit)
        got["checked"].append(checked)
        got["explore"].append(_explore(case, got["sim"][-1][0]))
    ms = {key: [1000 * cpu / n for n, _, cpu in values] for key, values in got.items()}
    per_s = {key: [events / cpu for _, events, cpu in values] for key, values in got.items()}
    space = (f"{report.mscs:,} MSCs, complete" if report.complete else
             f"bounded ({report.bound}) at {report.mscs:,} MSCs")
    size = f"{report.work['events'] / max(report.mscs, 1):.0f} events/MSC"
    rows = []
    for key, base, what, against in (
            ("bare", "sim", "no detectors", "one Simulator.run (mixed schedules)"),
            ("checked", "explore", "catalog detectors", "one explore() run, same detectors")):
        value, baseline = median(ms[key]), median(ms[base])
        rows.append(Row("verify", f"{name} [{space}, {size}]: one MSC, {what}", value, "ms",
                        ms[key], baseline=against, baseline_value=baseline,
                        target=f"≤ {TARGET:g}×", met=value <= TARGET * baseline))
    rows.append(Row("verify", f"{name}: verify events/s, no detectors", median(per_s["bare"]),
                    "events/s", per_s["bare"], baseline="Simulator.run events/s",
                    baseline_value=median(per_s["sim"])))
    return rows


def first(name: str, runs: int, time_limit: float, explore_runs: int, chunk: int = 500) -> Row:
    """MSCs to verify's first counterexample against runs to ``cpl explore``'s first."""
    import choreo
    from choreo.exploration import explore

    case = load(name)
    report = choreo.verify(case.plan, values=case.values, detectors=case.detectors,
                           max_runs=runs, time_limit=time_limit, counterexample=None)
    found = None
    done = 0
    while done < explore_runs and not found:
        result = explore.explore(case.plan, min(chunk, explore_runs - done), seed=done,
                                 values=case.values, detectors=case.detectors, workers=1)
        done += result.runs
        found = result.first["anomalies"]
    seed = min((seed for seed, _, _ in found.values()), default=None) if found else None
    fired = min(found, key=lambda name: found[name][0]) if found else None
    explored = seed + 1 if seed is not None else None
    baseline = (f"cpl explore: runs to the first ({fired}, seed {seed})" if found else
                f"cpl explore: none in {done:,} runs")
    if report.first:
        c = min(report.first.values(), key=lambda c: c.index)
        return Row("verify", f"{name}: MSCs to the first counterexample ({c.detector}, path "
                   f"{c.path or 'root'})", c.index, "MSCs", [c.index], baseline=baseline,
                   baseline_value=explored)
    space = "complete" if report.complete else f"bounded: {report.bound}"
    return Row("verify", f"{name}: verify found none in {report.mscs:,} MSCs ({space})",
               report.mscs, "MSCs", [report.mscs], baseline=baseline, baseline_value=explored)


_PEAK = """
import json, sys, tracemalloc
sys.path.insert(0, {bench!r})
import verify as bench
case = bench.load({case!r})
report = None
if {mode!r} != "loaded":
    import choreo
    if {mode!r} == "traced":  # one MSC first: what it imports is not the search's
        choreo.verify(case.plan, values=case.values, detectors=case.detectors, max_runs=1,
                      counterexample=None)
        tracemalloc.start()
    report = choreo.verify(case.plan, values=case.values, detectors=case.detectors,
                           time_limit={limit!r}, counterexample=None)
print(json.dumps({{"traced": tracemalloc.get_traced_memory()[1],
                  "mscs": report and report.mscs, "complete": report and report.complete}}))
"""
# Linux keeps a process's peak RSS across exec: a child forked from this bench would
# start with the bench's RSS as its peak.  So a small parent of its own starts it, and
# reads its peak when it has ended (as timing.peak_rss_kib does), with its output.
_PARENT = ("import json, resource, subprocess, sys; "
           "out = subprocess.run(sys.argv[1:], check=True, capture_output=True, text=True); "
           "print(json.dumps(dict(json.loads(out.stdout.splitlines()[-1]), "
           "kib=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)))")


def peak(case: str, time_limit: float, mode: str = "search") -> dict:
    """A fresh process that loads ``case`` and verifies it for ``time_limit`` seconds:
    its peak RSS in KiB ("kib"; mode "loaded": no search), or, in mode "traced", the peak
    of the search's own Python allocations in bytes ("traced", from tracemalloc)."""
    code = _PEAK.format(bench=str(Path(__file__).resolve().parent), case=case, mode=mode,
                        limit=time_limit)
    out = subprocess.run([sys.executable, "-c", _PARENT, sys.executable, "-c", code], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def memory(cases: dict, traced_limit: float) -> list[Row]:
    """Peak RSS of each case's search (``cases``: case -> seconds) against its process
    before the search, and the search's own peak allocations (``traced_limit`` seconds:
    tracemalloc slows it down; a depth-first search keeps one path, not the MSCs)."""
    rows = []
    for case, time_limit in cases.items():
        loaded, searched = peak(case, time_limit, "loaded"), peak(case, time_limit)
        traced = peak(case, traced_limit, "traced")
        space = (f"{searched['mscs']:,} MSCs, complete" if searched["complete"] else
                 f"bounded at {searched['mscs']:,} MSCs ({time_limit:g} s)")
        rows.append(Row("verify", f"peak RSS, verify {case} ({space})",
                        searched["kib"] / 1024, "MiB", [searched["kib"] / 1024],
                        baseline="the same process, loaded, no search",
                        baseline_value=loaded["kib"] / 1024))
        rows.append(Row("verify", f"  its search's own peak allocations (tracemalloc, "
                        f"{traced['mscs']:,} MSCs)", traced["traced"] / 2**20, "MiB",
                        [traced["traced"] / 2**20]))
    return rows


def profile(case: str, runs: int, time_limit: float, top: int = 25) -> str:
    """cProfile's top functions (by own time) of one verify without detectors."""
    import cProfile
    import io
    import pstats

    import choreo

    plan, _, values = load(case)
    profiler = cProfile.Profile()
    profiler.runcall(choreo.verify, plan, values=values, detectors=None, max_runs=runs,
                     time_limit=time_limit, counterexample=None)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def run(quick: bool = False, cases=None, repeats: int | None = None, runs: int | None = None,
        time_limit: float | None = None, first_runs: int | None = None,
        peaks=MEMORY) -> list[Row]:
    repeats = repeats or (1 if quick else 3)
    runs = runs or (50 if quick else 1_000)
    time_limit = time_limit or (0.5 if quick else 1.0)
    first_runs = first_runs or (200 if quick else 20_000)
    cases = list(cases or CASES)
    rows = []
    for case in cases:
        print(f"… {case}", file=sys.stderr, flush=True)
        rows += rates(case, repeats, runs, time_limit)
    for case in cases:
        if case.endswith("unguarded"):
            rows.append(first(case, first_runs, 10 * time_limit, first_runs))
    if quick:
        peaks = {case: 2 * time_limit for case in peaks}
    return rows + memory(peaks, 2 * time_limit)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small bounds, one round")
    parser.add_argument("--only", metavar="LIST",
                        help=f"comma-separated cases: {', '.join(CASES)}")
    parser.add_argument("--repeats", type=int, help="rounds (medians): default 3")
    parser.add_argument("--runs", type=int, help="MSCs (and runs) per call: default 1,000")
    parser.add_argument("--time-limit", type=float,
                        help="seconds per call: default 1 (first counterexample: 10×; "
                             "the tracemalloc runs: 2×)")
    parser.add_argument("--first-runs", type=int,
                        help="explore runs (and verify MSCs) to look for the first "
                             "counterexample in: default 20,000")
    parser.add_argument("--profile", metavar="CASE", help="print cProfile's top lines of one "
                        "verify of CASE (no detectors) instead")
    args = parser.parse_args(argv)
    cases = [c.strip() for c in args.only.split(",")] if args.only else list(CASES)
    unknown = [c for c in cases + ([args.profile] if args.profile else []) if c not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    if args.profile:
        print(profile(args.profile, args.runs or 1_000, args.time_limit or 5.0))
        return 0
    from timing import table

    peaks = {case: limit for case, limit in MEMORY.items() if case in cases}
    print(table(run(args.quick, cases, args.repeats, args.runs, args.time_limit,
                    args.first_runs, peaks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
