"""Repeat-and-median timing, and the result rows every benchmark returns.

The machine has two cores shared with other work, so one number means
little: every candidate is timed ``repeats`` times, *interleaved* with its
baseline (so a burst of noise hits both), and the median is quoted.

Times are CPU seconds of this process (``time.process_time``; for a
subprocess, its user + system time): on a shared machine wall-clock time also
counts the time other processes held the core, which made wall-clock medians
swing by 2× between runs here.  Long-lived benchmark data (the pre-built
events) is moved out of the collector's way with ``gc.freeze()`` before
timing; the collector stays on, so the monitors pay for the garbage they make
themselves.
"""

from __future__ import annotations

import gc
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable


def timed(function: Callable[[], object]) -> float:
    """Seconds for one call, with everything allocated so far frozen out of the GC."""
    gc.collect()
    gc.freeze()
    try:
        start = time.process_time()
        function()
        return time.process_time() - start
    finally:
        gc.unfreeze()


def cpu_seconds(function: Callable[[], object]) -> float:
    """CPU seconds for one call, without freezing (the call builds its own data)."""
    gc.collect()
    start = time.process_time()
    function()
    return time.process_time() - start


def children_cpu() -> float:
    """User + system CPU seconds of every subprocess waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child_cpu_seconds(run_child: Callable[[], object]) -> float:
    """User + system CPU seconds of the subprocesses that ``run_child`` waits for."""
    before = children_cpu()
    run_child()
    return children_cpu() - before


# Runs a command and prints the peak RSS (KiB on Linux) of the command alone: a fresh
# parent, so no earlier child of the benchmark process can count.
_PEAK_RSS = ("import resource, subprocess, sys; "
             "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def peak_rss_kib(command: list[str], cwd=None) -> int:
    """Peak RSS (KiB) of ``command``, run to its end under a fresh parent of its own."""
    out = subprocess.run([sys.executable, "-c", _PEAK_RSS, *command], cwd=cwd, check=True,
                         capture_output=True, text=True).stdout
    return int(out.split()[-1])


def run_to_end(command: list[str], timeout: float, **popen) -> tuple[float, float]:
    """Run ``command`` (output discarded, standard error kept for the message) to its
    end: (wall time just before it started, wall time it ended); a non-zero exit
    raises.  One that outlives ``timeout`` is stopped: SIGTERM (``cpl run`` stops its
    lifelines), then SIGKILL (the lifelines leave when their standard input closes)."""
    start = time.time()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, **popen)
    try:
        _, err = process.communicate(timeout=timeout)
        end = time.time()
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    if process.returncode:
        raise RuntimeError(f"{' '.join(command)} exited {process.returncode}: {err}")
    return start, end


def interleaved(candidates: dict[str, Callable[[], float]], repeats: int) -> dict[str, list[float]]:
    """Run every candidate once per round, ``repeats`` rounds; each returns its own seconds."""
    runs: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(repeats):
        for name, run in candidates.items():
            runs[name].append(run())
    return runs


def median(values) -> float:
    return statistics.median(values)


@dataclass
class Row:
    """One line of the results table.  ``ratio`` is always median / baseline median."""

    bench: str
    what: str
    value: float
    unit: str
    runs: list = field(default_factory=list)  # the individual measurements
    baseline: str = ""
    baseline_value: float | None = None
    target: str = ""
    met: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.baseline_value in (None, 0):
            return None
        return self.value / self.baseline_value


def rate(events: int, seconds: list[float]) -> list[float]:
    """Events per second for each run."""
    return [events / s for s in seconds]


def fmt(value: float | None, unit: str = "") -> str:
    """Readable numbers: M/k for rates, plain for bytes and ratios."""
    if value is None:
        return "—"
    if unit == "events/s":
        if value >= 1e6:
            return f"{value / 1e6:.2f} M"
        if value >= 1e3:
            return f"{value / 1e3:.1f} k"
        return f"{value:.0f}"
    if unit == "s":
        return f"{value:.3f}"
    if unit in ("ns/event",):
        return f"{value:.0f}"
    if unit == "B":
        return f"{value:.0f}"
    return f"{value:.3g}"


def table(rows: list[Row]) -> str:
    """A Markdown table, also readable in a terminal."""
    head = ["bench", "measurement", "median", "unit", "runs: min – max", "baseline (same run)",
            "baseline median", "ratio", "target", "met"]
    lines = []
    for r in rows:
        ratio = r.ratio
        spread = (f"{fmt(min(r.runs), r.unit)} – {fmt(max(r.runs), r.unit)} ({len(r.runs)})"
                  if len(r.runs) > 1 else "—")
        lines.append([r.bench, r.what, fmt(r.value, r.unit), r.unit, spread, r.baseline or "—",
                      fmt(r.baseline_value, r.unit) if r.baseline_value is not None else "—",
                      _times(ratio), r.target or "—",
                      {True: "yes", False: "NO", None: "—"}[r.met]])
    widths = [max(len(str(x)) for x in column) for column in zip(head, *lines)]

    def row(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    out = [row(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [row(cells) for cells in lines]
    notes = [f"- {r.bench} {r.what}: {r.note}" for r in rows if r.note]
    return "\n".join(out + ([""] + notes if notes else []))


def _times(ratio: float | None) -> str:
    if ratio is None:
        return "—"
    return f"{ratio:,.0f}×" if ratio >= 1000 else f"{ratio:.3g}×"
