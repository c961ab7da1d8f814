"""What a cpl.live agent costs per event, in-process, against the bare monitor in the same run.

The flagship guard (``@TestRunner(status != failed S status == passed) &&
@TestRunner.candidate == candidate``, owned by Committer) over three agents.
Each operation is timed as ``calls`` calls in a row, ``rounds`` times,
interleaved with its baseline: the bare ``cpl.monitor.Monitor`` step with the
same guard, which is what ``cpl run``'s Runner pays for the monitor alone.
The live calls are timed without a log and with one (a folder under a
temporary directory; no fsync).  Tokens are sent before their receives are
timed, so a receive pays for reading its token (an object, or its text), the
checks and the monitor, not for the send.  Times are CPU seconds
(``timing.timed``); the medians are printed in µs per call, with the ratio
to the baseline.

    PYTHONPATH=$PWD python bench/embed_core.py [--quick]
"""

from __future__ import annotations

import os
import sys
import tempfile

from cpl.live import System
from cpl.monitor import Monitor
from timing import interleaved, median, timed

LIFELINES = ["Author", "TestRunner", "Committer"]
GUARD = ("@TestRunner(status != failed S status == passed) && "
         "@TestRunner.candidate == candidate")
TARGETS = {False: 3.0, True: 10.0}  # µs per act/send/receive: without, with a log


def system() -> System:
    return System(LIFELINES, {"merge": ("Committer", GUARD)}, ["status", "candidate"],
                  init={"Committer": {"candidate": "abc"}})


def bare(calls: int) -> dict:
    """The baseline: the same steps on bare monitors, one closure per operation."""
    flagship = system()
    program, primitive = flagship.program, flagship.guards["merge"][1].primitive
    runner = Monitor(program, "TestRunner")
    runner.act({"status": "passed", "candidate": "abc"})

    def receive():
        committer = Monitor(program, "Committer", {"candidate": "abc"})
        metadata = [runner.send() for _ in range(calls)]
        step = committer.receive
        return timed(lambda: [step(m, None) for m in metadata])

    def decide():
        committer = Monitor(program, "Committer", {"candidate": "abc"})
        choice, value = committer.choice, committer.value
        return timed(lambda: [(choice(), value(primitive)) for _ in range(calls)])

    update = {"status": "passed"}
    return {"act": lambda: timed(lambda: [runner.act(update) for _ in range(calls)]),
            "send": lambda: timed(lambda: [runner.send() for _ in range(calls)]),
            "receive token": receive, "receive text": receive, "decide": decide}


def live(calls: int, folder: str | None) -> dict:
    """The same operations through ``cpl.live`` agents, logging into ``folder`` if given."""
    flagship = system()
    rounds = iter(range(10**9))

    def agents():
        log = None if folder is None else os.path.join(folder, f"r{next(rounds)}") + os.sep
        return flagship.agent("TestRunner", log=log), flagship.agent("Committer", log=log)

    def act():
        runner, _ = agents()
        act = runner.act
        return timed(lambda: [act(status="passed") for _ in range(calls)])

    def send():
        runner, _ = agents()
        send = runner.send
        return timed(lambda: [send("Committer") for _ in range(calls)])

    def receive(text: bool):
        def once():
            runner, committer = agents()
            runner.act(status="passed", candidate="abc")
            tokens = [runner.send("Committer") for _ in range(calls)]
            given = [t.text for t in tokens] if text else tokens
            take = committer.receive
            return timed(lambda: [take(t) for t in given])
        return once

    def decide():
        _, committer = agents()
        decide = committer.decide
        return timed(lambda: [decide("merge") for _ in range(calls)])

    return {"act": act, "send": send, "receive token": receive(False),
            "receive text": receive(True), "decide": decide}


def run(quick: bool = False) -> list[tuple]:
    calls, rounds = (2_000, 5) if quick else (20_000, 7)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        baseline, plain, logged = bare(calls), live(calls, None), live(calls, folder)
        for operation in baseline:
            times = interleaved({"bare": baseline[operation], "live": plain[operation],
                                 "logged": logged[operation]}, rounds)
            per_call = {k: 1e6 * median(v) / calls for k, v in times.items()}
            rows.append((operation, per_call["bare"], per_call["live"], per_call["logged"]))
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    rows = run(quick)
    print(f"cpl.live per call, flagship guard, µs (median CPU time; bare = cpl.monitor.Monitor "
          f"steps, same run{', quick' if quick else ''})")
    print(f"{'operation':<14}{'bare':>8}{'live':>8}{'ratio':>8}{'logged':>9}{'ratio':>8}"
          f"   targets (act/send/receive): live <= {TARGETS[False]:g}, logged <= "
          f"{TARGETS[True]:g}")
    for operation, base, plain, logged in rows:
        checked = operation != "decide"
        verdict = "" if not checked else "  " + " ".join(
            "ok" if cost <= TARGETS[log] else "MISSED" for log, cost in ((False, plain),
                                                                        (True, logged)))
        print(f"{operation:<14}{base:8.2f}{plain:8.2f}{plain / base:7.1f}x{logged:9.2f}"
              f"{logged / base:7.1f}x{verdict}")


if __name__ == "__main__":
    main()
