"""Run the causal-guards benchmarks and print one table of medians, baselines and ratios.

    python bench/run.py                  # everything (about ten minutes on 2 cores)
    python bench/run.py --quick          # small sizes, one or two rounds: a smoke run
    python bench/run.py --only monitors_mixed,metadata_size  # any bench's file name, without
                                         # .py; and ray_launcher (only when asked)
    python bench/run.py --json out.json  # also write every individual measurement

Every ratio is against a baseline measured in the same run; see README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules, however run

import lifelines  # noqa: E402
import monitor_local  # noqa: E402
import monitors_mixed  # noqa: E402
import monitors_receive  # noqa: E402
import metadata_size  # noqa: E402
import metadata_scale  # noqa: E402
import stream_throughput  # noqa: E402
import simulate_runs  # noqa: E402
import eval_trace  # noqa: E402
import ray_launcher  # noqa: E402
import render  # noqa: E402
import startup  # noqa: E402
from timing import table  # noqa: E402

BENCHMARKS = {module.__name__: module.run for module in (
    monitors_mixed, monitor_local, monitors_receive, metadata_size, metadata_scale,
    simulate_runs, eval_trace, stream_throughput, startup, render, lifelines)}
# Run only when named in --only: they need more than this package (Ray) and start a
# cluster of their own.
ON_REQUEST = {"ray_launcher": ray_launcher.run}


def machine() -> dict:
    """What the numbers were measured on."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        load = []
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "implementation": platform.python_implementation(), "loadavg": load}


def select(only: str | None) -> list[str]:
    if not only:
        return list(BENCHMARKS)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    known = {name.lower(): name for name in [*BENCHMARKS, *ON_REQUEST]}
    unknown = [name for name in wanted if name.lower() not in known]
    if unknown:
        raise SystemExit(f"run.py: unknown benchmark(s) {', '.join(unknown)}; "
                         f"choose from {', '.join([*BENCHMARKS, *ON_REQUEST])}")
    return [known[name.lower()] for name in wanted]


def run(names: list[str], quick: bool) -> list:
    rows = []
    for name in names:
        print(f"… {name}", file=sys.stderr, flush=True)
        rows += {**BENCHMARKS, **ON_REQUEST}[name](quick=quick)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--only", metavar="LIST", help=f"comma-separated: {', '.join(BENCHMARKS)}"
                        f"; and, only when named, {', '.join(ON_REQUEST)}")
    parser.add_argument("--json", metavar="FILE", help="also write all measurements as JSON")
    args = parser.parse_args(argv)
    names = select(args.only)
    info = machine()
    rows = run(names, args.quick)
    print(f"machine: {info['cpu']}, {info['nproc']} cores, {info['implementation']} "
          f"{info['python']}, load {' '.join(info['loadavg'])}, {info['date']}"
          + ("  (--quick: sizes too small for the targets)" if args.quick else ""))
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"machine": info, "quick": args.quick,
             "rows": [dict(vars(r), ratio=r.ratio) for r in rows]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
