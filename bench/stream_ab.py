"""A/B of stream_throughput.py's stream between source trees (a tool): interleaved, medians.

    python bench/stream_ab.py OLD_TREE NEW_TREE [--rounds 7] [--count 5000] [--insecure-only]
    python bench/stream_ab.py OLD_TREE NEW_TREE --cpu [--rounds 5] [--count 5000]

Each round runs ``cpl run bench/stream_loop.py`` once per tree and security setting,
in turn, with that tree first on ``PYTHONPATH`` and as the working directory (the
lifelines then import that tree), and reads the rate from the trace as
``stream_throughput`` does.  On a shared machine only interleaved medians say anything.
With ``--cpu``, the CPU each lifeline process spent (all its threads, as it sends its
final report) per message B received, at ``count`` and at ``count // 10``: the
difference divided by the difference in messages leaves start-up out.  CPU time is
far steadier than rates when other work shares the cores.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import stream_throughput as stream  # noqa: E402
from timing import median, run_to_end  # noqa: E402


def rate(tree: str, count: int, secure: bool) -> float:
    """``tree`` may end in ``+NAME=VALUE``: that variable set in the run's environment."""
    env = stream.environment()
    tree, _, setting = tree.partition("+")
    if setting:
        name, _, value = setting.partition("=")
        env[name] = value
    env["PYTHONPATH"] = tree
    with tempfile.TemporaryDirectory(prefix="cpl-p4ab-") as folder:
        trace = Path(folder) / "t.jsonl"
        run_to_end([sys.executable, "-m", "cpl_cli", "run", str(stream.CHOREO), "--arg",
                    f"count={count}", "--trace", str(trace)] + ([] if secure else ["--insecure"]),
                   stream.TIMEOUT, cwd=tree, env=env)
        meta, events = stream.read_trace(trace)
    assert meta["status"] == "ok", meta
    first = min(e["time"] for e in events if e["lifeline"] == "A" and e["kind"] == "send")
    received = [e["time"] for e in events if e["lifeline"] == "B" and e["kind"] == "recv"]
    assert len(received) == 2 * count + 1
    return len(received) / (max(received) - first)


# run ``cpl run`` in a child whose lifelines print their CPU seconds at their final report
_LIFELINE = """
import resource, sys, time
import runtime.lifeline as lifeline
report = lifeline.LifelineProcess._report
def reported(self, control, state, probe=None, final=False):
    if final:
        used = resource.getrusage(resource.RUSAGE_SELF)
        print(f"CPU {self.c.lifeline} {used.ru_utime + used.ru_stime:.4f} "
              f"{time.thread_time():.4f}", file=sys.stderr, flush=True)
    report(self, control, state, probe, final)
lifeline.LifelineProcess._report = reported
from cpl_cli import main
sys.exit(main(sys.argv[1:]))
"""
_CPU_RUN = """
import sys
import runtime.supervisor.launchers as launchers
LIFELINE = sys.argv.pop(1)
launchers.lifeline_command = lambda name: [sys.executable, "-c", LIFELINE, "lifeline", name,
                                           "--stdin"]
from cpl_cli import main
sys.exit(main(sys.argv[1:]))
"""


def cpu(tree: str, count: int, secure: bool, tries: int = 3) -> dict:
    """{lifeline: (CPU s of its process, of its main thread)} of one run.  A run where a
    lifeline was stopped before it printed (the supervisor ends the run at the final
    reports: now and then one is gone first) is run again."""
    env = stream.environment()
    env["PYTHONPATH"] = tree
    for _ in range(tries):
        done = subprocess.run([sys.executable, "-c", _CPU_RUN, _LIFELINE, "run",
                               str(stream.CHOREO), "--arg", f"count={count}"]
                              + ([] if secure else ["--insecure"]), cwd=tree, env=env,
                              capture_output=True, text=True, timeout=stream.TIMEOUT)
        found = {name: (float(process), float(main_thread)) for name, process, main_thread
                 in re.findall(r"CPU (\w+) (\d+\.\d{4}) (\d+\.\d{4})", done.stderr)}
        if set(found) == {"A", "B"}:
            return found
    raise AssertionError(done.stderr)


def per_message(tree: str, count: int, secure: bool) -> dict:
    """µs of CPU per message B receives: {A, A main, B, B main}."""
    small, large = cpu(tree, count // 10, secure), cpu(tree, count, secure)
    messages = 2 * (count - count // 10)
    return {f"{name}{' main' if which else ''}": (large[name][which] - small[name][which])
            / messages * 1e6 for name in ("A", "B") for which in (0, 1)}


def cpu_main(args) -> int:
    settings = (False,) if args.insecure_only else (False, True)
    found = {(tree, secure): [] for tree in args.trees for secure in settings}
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    for _ in range(args.rounds):
        for secure in settings:
            for tree in args.trees:
                found[tree, secure].append(per_message(tree, args.count, secure))
    print(f"load {os.getloadavg()[0]:.2f}")
    for (tree, secure), runs in found.items():
        print(f"{tree:28} {'CURVE' if secure else 'insecure':9} CPU µs/msg, medians: " + ", ".join(
            f"{key} {median([run[key] for run in runs]):.1f}" for key in runs[0]))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--insecure-only", action="store_true")
    parser.add_argument("--cpu", action="store_true", help="CPU µs per message, per process")
    args = parser.parse_args()
    if args.cpu:
        return cpu_main(args)
    settings = (False,) if args.insecure_only else (False, True)
    rates = {(tree, secure): [] for tree in args.trees for secure in settings}
    print(f"load {os.getloadavg()[0]:.2f}", flush=True)
    for _ in range(args.rounds):
        for secure in settings:
            for tree in args.trees:
                rates[tree, secure].append(rate(tree, args.count, secure))
    print(f"load {os.getloadavg()[0]:.2f}")
    for (tree, secure), values in rates.items():
        print(f"{tree:28} {'CURVE' if secure else 'insecure':9} median {median(values):9.0f} "
              f"msgs/s  [{min(values):.0f} – {max(values):.0f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
