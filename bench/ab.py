"""A/B of two source trees on this machine: the monitors, the simulator and start-up.

    python bench/ab.py --a OLD_TREE --b NEW_TREE [--rounds 3] [--only NAME,...] [--quick]

A refactoring that should change no behaviour should change no figure either: this
runs ``monitors_mixed.py``, ``monitor_local.py``, ``simulate_runs.py`` and
``startup.py`` of each tree, the trees taking turns (A, B, then B, A, ...: a drift in
the machine's load hits both sides alike), ``--rounds`` times, each in a fresh
process with that tree as its working directory and alone on ``PYTHONPATH`` (so the
tree's own bench files measure the tree's own packages).  Prints, per row the two
trees have in common, the median over the rounds on each side, its spread on A
(max - min over median: what noise looks like here) and B / A.  For rates (``/s``)
a B / A under 1 is slower; for seconds, bytes and ns over 1 is slower.

A tree from before the benches were named by what they measure has them under
their old names (``p1_mixed.py``, ``p1_local.py``, ``p5_simulate.py``); they are
found under those too.

What the trees' difference cannot move is left out unless ``--all-rows``: the
baselines of the monitor benches (the reference evaluator on a prefix, seconds a
run) and the peak-memory rows of the simulator (100,000-round runs, minutes a run)
are replaced, in the child only, by functions that return at once, and their rows
are not printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# each bench by its name, then the names it had before in older trees
BENCHES = {"monitors_mixed": ("monitors_mixed", "p1_mixed"),
           "monitor_local": ("monitor_local", "p1_local"),
           "simulate_runs": ("simulate_runs", "p5_simulate"),
           "startup": ("startup",)}
TIMEOUT = 1800.0  # seconds for one bench in one tree
# (module, function) the child replaces by one returning the value, unless --all-rows:
# "" is the bench itself; and the units of the rows that then mean nothing
SKIPPED = {"monitors_mixed": ([("baselines", "reference_seconds", 1.0),
                               ("baselines", "global_log_seconds", 1.0)], ()),
           "monitor_local": ([("baselines", "reference_seconds", 1.0)], ()),
           "simulate_runs": ([("", "peak_rss_kib", 1)], ("MiB",)),
           "startup": ([], ())}

# Run in the child, in the tree: import the bench under the first name it has there,
# replace what is skipped, run it, and write its rows as JSON to the file named by argv[1].
CHILD = """
import importlib, json, sys
from pathlib import Path
sys.path.insert(0, "bench")
out, quick, skipped, names = sys.argv[1], sys.argv[2] == "quick", sys.argv[3], sys.argv[4:]
name = next(n for n in names if Path("bench", n + ".py").is_file())
bench = importlib.import_module(name)
for module, function, value in json.loads(skipped):
    setattr(sys.modules[module] if module else bench, function, lambda *_, v=value, **__: v)
rows = bench.run(quick=quick)
Path(out).write_text(json.dumps([[r.what, r.value, r.unit] for r in rows]))
"""


def measure(tree: Path, bench: str, quick: bool, every: bool) -> dict[tuple[str, str], float]:
    """One run of ``bench`` in ``tree``: {(what, unit): value}; ``every``: nothing skipped."""
    names = [n for n in BENCHES[bench] if (tree / "bench" / f"{n}.py").is_file()]
    if not names:
        raise SystemExit(f"ab.py: {tree} has no bench/{BENCHES[bench][0]}.py "
                         f"(nor {', '.join(BENCHES[bench][1:]) or 'an older name'})")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryDirectory(prefix="cpl-ab-") as folder:
        out = Path(folder) / "rows.json"
        stubs, units = ([], ()) if every else SKIPPED[bench]
        command = [sys.executable, "-c", CHILD, str(out), "quick" if quick else "full",
                   json.dumps(stubs), *names]
        done = subprocess.run(command, cwd=tree, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
        if done.returncode != 0 or not out.is_file():
            raise SystemExit(f"ab.py: {bench} failed in {tree} (exit {done.returncode}):\n"
                             f"{done.stderr[-2000:]}")
        return {(what, unit): value for what, value, unit in json.loads(out.read_text())
                if unit not in units}


def spread(values: list[float]) -> float:
    middle = statistics.median(values)
    return (max(values) - min(values)) / middle if middle else 0.0


def report(bench: str, runs: dict[str, list[dict]]) -> list[str]:
    """The table's lines for one bench: rows both trees measured, in A's order."""
    lines = []
    for key in runs["A"][0]:
        if not all(key in run for side in "AB" for run in runs[side]):
            continue
        a = [run[key] for run in runs["A"]]
        b = [run[key] for run in runs["B"]]
        if len(set(a + b)) == 1:
            continue  # a constant (a quoted figure): nothing measured
        what, unit = key
        ratio = statistics.median(b) / statistics.median(a) if statistics.median(a) else 0.0
        lines.append(f"| {bench} | {what} | {unit} | {statistics.median(a):.4g} "
                     f"| {statistics.median(b):.4g} | {spread(a):.0%} | {ratio:.3f} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, type=Path, help="the tree before (A)")
    parser.add_argument("--b", required=True, type=Path, help="the tree after (B)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each bench per tree")
    parser.add_argument("--only", metavar="LIST", help=f"comma-separated: {', '.join(BENCHES)}")
    parser.add_argument("--quick", action="store_true", help="the benches' small sizes: a check")
    parser.add_argument("--all-rows", action="store_true",
                        help="run the benches whole: their baselines and memory rows too")
    args = parser.parse_args(argv)
    benches = [b.strip() for b in args.only.split(",")] if args.only else list(BENCHES)
    unknown = [b for b in benches if b not in BENCHES]
    if unknown or args.rounds < 1:
        parser.error(f"unknown bench(es) {', '.join(unknown)}; choose from {', '.join(BENCHES)}"
                     if unknown else "--rounds must be at least 1")
    trees = {"A": args.a.resolve(), "B": args.b.resolve()}
    for side, tree in trees.items():
        if not (tree / "bench").is_dir():
            parser.error(f"--{side.lower()} {tree}: not a source tree (no bench/)")
    runs: dict[str, dict[str, list[dict]]] = {b: {"A": [], "B": []} for b in benches}
    load = os.getloadavg()[0]
    for number in range(args.rounds):
        order = "AB" if number % 2 == 0 else "BA"
        for bench in benches:
            for side in order:
                print(f"… round {number + 1}/{args.rounds}: {bench}, {side}", file=sys.stderr,
                      flush=True)
                runs[bench][side].append(measure(trees[side], bench, args.quick, args.all_rows))
    print(f"A = {trees['A']}\nB = {trees['B']}\n{args.rounds} rounds, medians; load average "
          f"{load:.1f} before, {os.getloadavg()[0]:.1f} after"
          + ("  (--quick: sizes too small to judge)" if args.quick else ""))
    print("| bench | measurement | unit | A | B | A's spread | B / A |")
    print("|---|---|---|---|---|---|---|")
    for bench in benches:
        print("\n".join(report(bench, runs[bench])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
