"""readers: peak memory and time of `cpl eval`, `cpl render` and `cpl explain` on one trace.

    python bench/readers.py TRACE.jsonl EVENT [--runs 3]
    python bench/readers.py --make /tmp/t.jsonl --rounds 100000   # the trace, by a real run

Each command runs as a child process of its own, one after another, ``--runs`` times
interleaved (eval, render html, render png, explain, eval, …); a child's peak RSS is
``ru_maxrss`` of its own ``wait4``, its time the wall seconds until it exited (graphviz
is a child of the child, so the wall clock is what a user waits).  Printed: the median
of each, and each command's median time over `cpl eval`'s (the target: ≤ 2×,
and ≤ 256 MiB peak RSS).  The trace measured is ``examples/code_review.py
--sim --seed 1 --arg rounds=100000`` streamed to ``.jsonl`` (3.2 M events, 806 MB).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "code_review.py"
TARGET_MIB, TARGET_RATIO = 256, 2.0


def measure(arguments: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of ``python -m cpl_cli ARGUMENTS``."""
    environment = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "cpl_cli", *arguments], cwd=ROOT,
                             env=environment, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    error = child.stderr.read().decode("utf-8", "replace")
    child.stderr.close()
    if child.returncode != 0:
        raise SystemExit(f"cpl {' '.join(arguments)} failed ({child.returncode}): {error}")
    return seconds, usage.ru_maxrss / 1024


def commands(trace: str, event: str, folder: str) -> dict[str, list[str]]:
    return {"cpl eval": ["eval", trace],
            "cpl render -o x.html": ["render", trace, "-o", f"{folder}/x.html"],
            "cpl render -o x.png": ["render", trace, "-o", f"{folder}/x.png"],
            "cpl explain": ["explain", trace, event]}


def run(trace: str, event: str, runs: int) -> None:
    found: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as folder:
        table = commands(trace, event, folder)
        for _ in range(runs):
            for name, arguments in table.items():
                found.setdefault(name, []).append(measure(arguments))
                print(f"  {name}: {found[name][-1][0]:.1f} s, {found[name][-1][1]:.0f} MiB",
                      file=sys.stderr, flush=True)
    size = os.path.getsize(trace) / 1e6
    machine = platform.processor() or platform.machine()
    print(f"{trace} ({size:.0f} MB), {runs} run(s) each; {machine}"
          f", {os.cpu_count()} cores, Python {platform.python_version()}, load "
          f"{os.getloadavg()[0]:.1f}")
    eval_seconds = statistics.median(s for s, _ in found["cpl eval"])
    print("| command | time (median) | × eval | peak RSS (median) | max RSS | met |")
    print("|---|---|---|---|---|---|")
    for name, rows in found.items():
        seconds = statistics.median(s for s, _ in rows)
        memory = statistics.median(m for _, m in rows)
        ratio = seconds / eval_seconds
        met = "—" if name == "cpl eval" else (
            "yes" if ratio <= TARGET_RATIO and max(m for _, m in rows) <= TARGET_MIB else "no")
        print(f"| `{name}` | {seconds:.1f} s | {ratio:.2f}× | {memory:.0f} MiB | "
              f"{max(m for _, m in rows):.0f} MiB | {met} |")


def make(path: str, rounds: int) -> None:
    """The trace by a real simulated run of the flagship example, streamed to ``path``."""
    subprocess.run([sys.executable, "-m", "cpl_cli", "run", str(EXAMPLE), "--sim", "--seed",
                    "1", "--arg", f"rounds={rounds}", "--trace", path], cwd=ROOT, check=True,
                   env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", nargs="?")
    parser.add_argument("event", nargs="?", help="the event `cpl explain` explains")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--make", metavar="OUT.jsonl", help="write the trace first")
    parser.add_argument("--rounds", type=int, default=100_000)
    args = parser.parse_args()
    if args.make:
        make(args.make, args.rounds)
        print(f"wrote {args.make}")
    if args.trace:
        if not args.event:
            parser.error("give the EVENT to explain (a choice of the trace)")
        run(args.trace, args.event, args.runs)


if __name__ == "__main__":
    main()
