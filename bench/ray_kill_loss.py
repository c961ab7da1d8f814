"""What a kill -9 of a Ray actor loses of its lifeline's log.

A lifeline on Ray ships its log lines to the supervisor (before each message it
sends, when it idles, every 256 lines); the lines it logged since its last
shipment, and a shipment still in its sockets' queues, die with it.  This
counts them: ``--kills`` runs of the code review (100,000 rounds, so it is
still going), on one Ray started here on 127.0.0.1; in each, one lifeline in
turn has its worker process killed with -9 at a random moment 0.5–2 s after
it logged its first line.  Each actor also writes every line it logs to a file of
its own (one ``os.write`` a line, which a kill -9 does not undo): the lines
lost are those in that file and not in the run's merged trace.

    PYTHONPATH=. python bench/ray_kill_loss.py [--kills 20] [--seed 18]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE_REVIEW = str(ROOT / "examples" / "code_review.py")

from choreo import load_one  # noqa: E402 - after the path above is known
from choreo.execution.plan import prepare  # noqa: E402
from runtime.supervisor.ray_launcher import CplLifeline, RayActors  # noqa: E402
from runtime.supervisor.supervisor import Supervisor  # noqa: E402


class RecordingLifeline(CplLifeline):
    """A lifeline that also keeps every line it logs in ``<folder>/<lifeline>.jsonl``."""

    folder = ""

    def record(self, folder: str) -> None:
        self.folder = folder

    def serve(self, connection: str) -> int:
        from runtime.lifeline import process as lifeline
        name = connection.split('"lifeline": "', 1)[1].split('"', 1)[0]
        kept = os.open(os.path.join(self.folder, f"{name}.jsonl"),
                       os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        write = lifeline.ShippedLog.write

        def recorded(log, event) -> None:
            write(log, event)
            os.write(kept, b".\n")  # one line logged: only the count matters
        lifeline.ShippedLog.write = recorded
        return super().serve(connection)


class Recording(RayActors):
    actor = RecordingLifeline

    def __init__(self, lifelines, folder: str):
        super().__init__(lifelines)
        self.folder = folder

    def _spawn(self):
        fresh = not self.found
        found = super()._spawn()
        if fresh:
            import ray
            ray.get([actor.record.remote(self.folder) for actor in self.actors.values()])
        return found


def one_kill(plan, victim: str, delay: float, folder: str) -> tuple[int, int, str]:
    """(lines the victim logged, lines of it in the trace, how the run ended)."""
    launcher = Recording(plan.lifelines, folder)
    events: list = []
    kept = os.path.join(folder, f"{victim}.jsonl")

    def killer() -> None:  # once the victim has logged its first line: it is under way
        while not os.path.exists(kept) or not os.path.getsize(kept):
            time.sleep(0.01)
        time.sleep(delay)
        os.kill(launcher.found[victim][3], signal.SIGKILL)
    threading.Thread(target=killer, daemon=True).start()
    supervisor = Supervisor(plan, CODE_REVIEW, None, plan.inputs(["rounds=100000"]), 0,
                            launchers=[launcher])
    meta = supervisor.run(events.append)
    with open(kept, "rb") as handle:
        logged = sum(1 for _ in handle)
    merged = sum(1 for event in events if event.lifeline == victim)
    return logged, merged, meta.get("error", meta["status"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    from runtime.supervisor import ray_session
    plan = prepare(load_one(CODE_REVIEW))
    rng = random.Random(args.seed)
    lost = []
    with ray_session("local"):
        for kill in range(args.kills):
            victim = plan.lifelines[kill % len(plan.lifelines)]
            with tempfile.TemporaryDirectory(prefix="cpl-kill-") as folder:
                logged, merged, ended = one_kill(plan, victim, rng.uniform(0.5, 2.0), folder)
            lost.append(logged - merged)
            print(f"kill {kill + 1:2}: {victim:12} logged {logged:6}, in the trace {merged:6}, "
                  f"lost {logged - merged:4}  ({ended[:70]})", flush=True)
    print(f"{len(lost)} kills: {sum(lost)} lines lost in all; per kill median "
          f"{sorted(lost)[len(lost) // 2]}, max {max(lost)}, none lost in "
          f"{sum(1 for n in lost if n == 0)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
