"""The Runner's per-step cost on stream_loop.py, in process, without sockets (a tool, no row).

    python bench/runner_steps.py [--count 20000] [--repeat 7] [--profile A|B] [--log]
    python bench/runner_steps.py --simulate [--repeat 9]

A lifeline process of ``cpl run bench/stream_loop.py`` drives its one Runner with
:class:`choreo.execution.drive.Driver` (a ``Background`` for actions: each act sees a
snapshot of the store) and hands each event to its log.  Here A and B are
driven the same way, each on its own: A's messages are collected instead of
sent, then fed to B one before each of B's steps (``until``), as B's socket
drain does in a steady stream.  ``--log`` adds ``event.to_dict()`` per event
(what the JSON log line starts from).  Prints µs per message (A takes 4 events
a message: choice, control send, act, data send; B 2: two receives), medians
and minimums of ``--repeat`` runs, and with ``--profile`` the top of a cProfile.
``--simulate``: CPU µs per simulated run of the code review (300 seeds a repeat, one
``Simulator``), the same loop as simulate_runs.py's first row without its harness: quick to A/B.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # after PYTHONPATH: an A/B runs this against another tree

from choreo.execution.drive import Driver, complete  # noqa: E402
from choreo.authoring.load import load_one  # noqa: E402
from choreo.execution.plan import prepare  # noqa: E402


class _Inline:
    """A Background that is never given an awaitable: the stream's action is plain (snapshot on)."""

    def submit(self, awaitable):  # pragma: no cover - the stream has no async action
        raise AssertionError("the stream's action is synchronous")


def _setup():
    choreography = load_one(str(ROOT / "bench" / "stream_loop.py"), None)
    return prepare(choreography)


def _runner(plan, name: str, count: int):
    inputs = plan.inputs(values={"count": count})
    return plan.runner(name, plan.stores(inputs)[name], 1)


def run_a(plan, count: int, log: bool):
    """A's whole run: (seconds, messages it posted)."""
    runner = _runner(plan, "A", count)
    posted = []
    emit = (lambda event: event.to_dict()) if log else (lambda event: None)
    driver = Driver([runner], lambda options: options[0], emit, posted.append,
                    background=_Inline())
    start = time.thread_time()  # CPU: the machine is shared
    complete(driver.run(lambda steps: False))
    return time.thread_time() - start, posted


def run_b(plan, count: int, messages, log: bool, idle: bool = False) -> float:
    """B's whole run, one message delivered before each step (a drain of the socket); with
    ``idle``, one message and then a run of the driver to its end (B waiting for A)."""
    runner = _runner(plan, "B", count)
    feed = iter(messages)
    emit = (lambda event: event.to_dict()) if log else (lambda event: None)

    def between(steps: int) -> bool:
        message = next(feed, None)
        if message is not None:
            runner.deliver(message)
        return False
    driver = Driver([runner], lambda options: options[0], emit, None, background=_Inline())
    start = time.thread_time()  # CPU: the machine is shared
    if idle:
        for message in messages:
            runner.deliver(message)
            complete(driver.run(lambda steps: False))
        return time.thread_time() - start
    while not runner.done:  # an empty inbox ends a run: the next drain starts another
        between(0)
        complete(driver.run(between))
    return time.thread_time() - start


def simulated(repeat: int) -> None:
    from choreo.execution.simulate import Simulator

    simulator = Simulator(load_one(str(ROOT / "examples" / "code_review.py"), None))
    times = []
    for _ in range(repeat):
        start = time.thread_time()
        for seed in range(300):
            simulator.run(seed=seed, values={"rounds": 1})
        times.append((time.thread_time() - start) / 300 * 1e6)
    print(f"simulated runs: {statistics.median(times):.0f} µs/run median, {min(times):.0f} min "
          f"({repeat} x 300 seeds)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--profile", choices=["A", "B"])
    parser.add_argument("--log", action="store_true", help="to_dict() each event")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--idle", action="store_true", help="B: a run of the driver a message")
    parser.add_argument("--simulate", action="store_true",
                        help="simulated code-review runs instead")
    args = parser.parse_args()
    if args.simulate:
        simulated(args.repeat)
        return 0
    plan = _setup()
    count = args.count
    if args.profile:
        profile = cProfile.Profile()
        if args.profile == "A":
            profile.runcall(run_a, plan, count, args.log)
        else:
            _, messages = run_a(plan, count, False)
            profile.runcall(run_b, plan, count, messages, args.log, args.idle)
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(args.top)
        return 0
    a_times, b_times = [], []
    gc.disable()  # what a step allocates, not when the collector happens to run
    for _ in range(args.repeat):
        seconds, messages = run_a(plan, count, args.log)
        assert len(messages) == 2 * count + 1, len(messages)
        a_times.append(seconds)
        b_times.append(run_b(plan, count, messages, args.log, args.idle))
        gc.collect()
    scale = 1e6 / count
    for name, times in (("A", a_times), ("B", b_times)):
        print(f"{name}: {statistics.median(times) * scale:.2f} µs/message median, "
              f"{min(times) * scale:.2f} min ({args.repeat} runs of {count}"
              f"{', to_dict' if args.log else ''}{', idle B' if args.idle else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
