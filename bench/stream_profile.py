"""Profile one lifeline process of stream_throughput.py's stream (a tool, not a benchmark).

    python bench/stream_profile.py B [--count 5000] [--insecure] [--out b.prof]
    python bench/stream_profile.py --cpu [--count 5000] [--insecure]

Runs ``cpl run bench/stream_loop.py`` in this process with the lifeline named
(A or B) started as ``python -m cProfile -o OUT -m cpl_cli lifeline NAME
--stdin`` instead of ``cpl lifeline NAME --stdin`` (``runtime.supervisor.launchers``'
``lifeline_command`` is replaced here, for this process only), then prints
the top of the profile (cProfile slows the many small Python calls down: read the
shares, not the absolute times).  With ``--cpu``, no profiler: every lifeline
reports as it exits the CPU seconds of its whole process (all threads: ZeroMQ's
I/O thread, the heartbeat, CURVE's authenticator) and of its main thread (the
run loop); run it with two counts and divide the difference by the messages.
"""

from __future__ import annotations

import argparse
import pstats
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import runtime.supervisor.launchers as launchers  # noqa: E402
from cpl_cli import main as cpl  # noqa: E402


# ``cpl lifeline ...`` that prints its CPU seconds as it exits (whole process, main thread)
_CPU = """
import atexit, resource, sys, time
def report():
    u = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{sys.argv[2]}: CPU {u.ru_utime + u.ru_stime:.3f} s in all threads, "
          f"{time.thread_time():.3f} s in the main thread", file=sys.stderr)
atexit.register(report)
from cpl_cli import main
sys.exit(main(sys.argv[1:]))
"""


# ``cpl lifeline ...`` under cProfile, the profile written before its last report (once
# that is sent the supervisor ends the run, and the lifeline may be gone before an exit)
_PROFILED = """
import cProfile, sys
import runtime.lifeline as lifeline
profile = cProfile.Profile()
report = lifeline.LifelineProcess._report
def reported(self, control, state, probe=None, final=False):
    if final:
        profile.disable()
        profile.dump_stats(sys.argv[1])
    report(self, control, state, probe, final)
lifeline.LifelineProcess._report = reported
from cpl_cli import main
profile.enable()
sys.exit(main(sys.argv[2:]))
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("lifeline", choices=["A", "B"], nargs="?")
    parser.add_argument("--cpu", action="store_true", help="CPU seconds per process, no profile")
    parser.add_argument("--count", type=int, default=5000)
    parser.add_argument("--insecure", action="store_true")
    parser.add_argument("--out", default=None)
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    out = str(Path(args.out or f"stream-{args.lifeline}.prof").resolve())
    original = launchers.lifeline_command

    def command(name):
        if args.cpu:
            return [sys.executable, "-c", _CPU, "lifeline", name, "--stdin"]
        if name != args.lifeline:
            return original(name)
        return [sys.executable, "-c", _PROFILED, out, "lifeline", name, "--stdin"]

    launchers.lifeline_command = command
    code = cpl(["run", str(Path(__file__).resolve().parent / "stream_loop.py"), "--arg",
                f"count={args.count}"] + (["--insecure"] if args.insecure else []))
    if args.cpu:
        return code
    stats = pstats.Stats(out)
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)
    return code


if __name__ == "__main__":
    sys.exit(main())
