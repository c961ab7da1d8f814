"""A/B of P4's stream between source trees (a tool, not a row): interleaved, medians.

    python bench/p4_ab.py OLD_TREE NEW_TREE [--rounds 7] [--count 5000] [--insecure-only]

Each round runs ``cpl run bench/p4_stream.py`` once per tree and security setting,
in turn, with that tree first on ``PYTHONPATH`` and as the working directory (the
lifelines then import that tree), and reads the rate from the trace as
``p4_throughput`` does.  On a shared machine only interleaved medians say anything.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import p4_throughput as p4  # noqa: E402
from timing import median, run_to_end  # noqa: E402


def rate(tree: str, count: int, secure: bool) -> float:
    env = p4.environment()
    env["PYTHONPATH"] = tree
    with tempfile.TemporaryDirectory(prefix="cpl-p4ab-") as folder:
        trace = Path(folder) / "t.jsonl"
        run_to_end([sys.executable, "-m", "runtime.cli", "run", str(p4.CHOREO), "--arg",
                    f"count={count}", "--trace", str(trace)] + ([] if secure else ["--insecure"]),
                   p4.TIMEOUT, cwd=tree, env=env)
        meta, events = p4.read_trace(trace)
    assert meta["status"] == "ok", meta
    first = min(e["time"] for e in events if e["lifeline"] == "A" and e["kind"] == "send")
    received = [e["time"] for e in events if e["lifeline"] == "B" and e["kind"] == "recv"]
    assert len(received) == 2 * count + 1
    return len(received) / (max(received) - first)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("trees", nargs="+")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--insecure-only", action="store_true")
    args = parser.parse_args()
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
