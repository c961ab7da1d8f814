"""How fast ``cpl run`` over processes stops: Ctrl-C and ``--timeout``.

    python bench/stops.py [--tries 20] [--seed 1] [--root DIR] [--busy N]
                          [--only ctrl-c|timeout|ctrl-c-from-start]

Runs ``python -m cpl_cli run bench/stops_loop.py --arg pause=3`` (two
lifelines in a loop, each action holding its lifeline's thread for 3 s, as a
synchronous tool call does) in a fresh process group, as a terminal does,
with the code under ``--root`` (default: this checkout; give another checkout
to measure old code):

* **Ctrl-C**: SIGINT to the whole process group at a random moment, 0–4 s
  after the trace file appears (the run's start-up — lifelines loading — is
  its first second or so; nearly every later moment finds a lifeline inside
  an action); seconds from the signal to the exit;
* **--timeout T**: T drawn from 1–3 s; seconds from the process's start to
  its exit, minus T;
* **Ctrl-C from the start**: ``examples/code_review.py --arg
  rounds=100000``, four lifelines in a busy loop logging tens of thousands of
  events a second, SIGINT at a moment drawn from 0–3 s after the process
  started (its imports, the lifelines' start-up and the run alike); seconds
  from the signal to the exit.  The trace, if the run got as far as opening
  it, must say ``interrupted``.

``--busy N`` runs N processes burning CPU for the whole bench (4 on a 2-core
machine: a heavily shared machine), ended with it.

Each try also checks that the trace was written and says ``interrupted`` /
``timeout``, and that no process of the run is left; a run still there
``HUNG`` seconds after it should have stopped is killed and counted so.  Prints the median and
the maximum of each.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from runtime_util import (ctrl_c_inherited, kill_tagged, tagged, tagged_env,  # noqa: E402
                          wait_until)

HUNG = 30.0  # seconds after which a run that should have stopped is killed and counted as hung

LOOP = Path(__file__).resolve().parent / "stops_loop.py"
CODE_REVIEW = ROOT / "examples" / "code_review.py"
BURN = "import time\nend = time.monotonic() + 3600\nwhile time.monotonic() < end:\n    pass"


def start(root: Path, folder: Path, args: list[str]) -> tuple[subprocess.Popen, str, float]:
    tag = uuid.uuid4().hex
    env = tagged_env(tag)
    env["PYTHONPATH"] = str(root)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    began = time.monotonic()
    with ctrl_c_inherited():
        process = subprocess.Popen([sys.executable, "-m", "cpl_cli", "run", *args],
                                   cwd=folder, env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    return process, tag, began


def status(trace: Path) -> str:
    """The trace's ``meta.status``, or what is wrong with it."""
    try:
        lines = trace.read_text().splitlines()
        return json.loads(lines[-1])["end"]["status"]
    except (OSError, ValueError, KeyError, IndexError):
        return "no trace"


def wait(process, bound: float) -> bool:
    """Whether the run ended within ``bound`` seconds (else it is killed: it hung)."""
    try:
        process.wait(bound)
        return True
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return False


def finish(tag: str) -> bool:
    """Whether none of the run's processes is left (those left are killed)."""
    clean = bool(wait_until(lambda: not tagged(tag), 5.0))
    kill_tagged(tag)
    return clean


def ctrl_c(root: Path, folder: Path, rng: random.Random) -> tuple[dict, str, bool]:
    trace = folder / "stop.jsonl"
    trace.unlink(missing_ok=True)
    process, tag, _ = start(root, folder, [str(LOOP), "--trace", str(trace), "--arg",
                                           "pause=3"])
    wait_until(trace.exists, 30.0, step=0.005)
    time.sleep(rng.uniform(0.0, 4.0))
    os.killpg(process.pid, signal.SIGINT)
    signalled = time.monotonic()
    ended = wait(process, HUNG)
    took = {"from the signal to the exit": time.monotonic() - signalled}
    return took, status(trace) if ended else "hung", finish(tag)


def ctrl_c_from_start(root: Path, folder: Path, rng: random.Random) -> tuple[dict, str, bool]:
    trace, parts = folder / "busy.jsonl", folder / "busy.jsonl.parts"
    trace.unlink(missing_ok=True)
    shutil.rmtree(parts, ignore_errors=True)  # left by a run that lost its trace
    process, tag, began = start(root, folder, [str(CODE_REVIEW), "--trace", str(trace),
                                               "--arg", "rounds=100000"])
    time.sleep(max(0.0, began + rng.uniform(0.0, 3.0) - time.monotonic()))
    opened = trace.exists()
    os.killpg(process.pid, signal.SIGINT)
    signalled = time.monotonic()
    ended = wait(process, HUNG)
    took = {"from the signal to the exit": time.monotonic() - signalled}
    said = status(trace) if ended else "hung"
    if said == "no trace" and not opened:
        said = "interrupted"  # stopped before it opened its trace: nothing to write
    if ended and process.returncode != 130:
        said = f"exit {process.returncode}"
    elif parts.exists():  # the trace lacks what they hold
        said = f"{said}, parts left"
    return took, said, finish(tag)


def timeout(root: Path, folder: Path, rng: random.Random) -> tuple[dict, str, bool]:
    trace = folder / "timeout.jsonl"
    trace.unlink(missing_ok=True)
    limit = round(rng.uniform(1.0, 3.0), 2)
    process, tag, began = start(root, folder, [str(LOOP), "--trace", str(trace), "--arg",
                                               "pause=3", "--timeout", str(limit)])
    wait_until(trace.exists, 30.0, step=0.005)
    opened = time.monotonic()  # the run starts as its trace is opened
    ended = wait(process, limit + HUNG)
    now = time.monotonic()
    took = {"from the process's start to its exit, minus T": now - began - limit,
            "from the run's start (its trace opened) to the exit, minus T": now - opened - limit}
    return took, status(trace) if ended else "hung", finish(tag)


MEASURES = {"ctrl-c": (ctrl_c, "interrupted"), "timeout": (timeout, "timeout"),
            "ctrl-c-from-start": (ctrl_c_from_start, "interrupted")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--root", default=str(ROOT), help="the checkout whose code runs")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="processes burning CPU meanwhile (default 0)")
    parser.add_argument("--only", choices=sorted(MEASURES), action="append",
                        help="only this measure (repeatable; default all)")
    args = parser.parse_args()
    root = Path(args.root).resolve()
    print(f"code: {root}; {args.busy} busy processes; load average "
          f"{os.getloadavg()[0]:.1f}")
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.busy)]
    try:
        with tempfile.TemporaryDirectory(prefix="cpl-stops-") as folder:
            folder = Path(folder)
            for name in args.only or list(MEASURES):
                measure, wanted = MEASURES[name]
                rng = random.Random(args.seed)
                seconds: dict[str, list[float]] = {}
                wrong = []
                for _ in range(args.tries):
                    took, said, clean = measure(root, folder, rng)
                    for what, value in took.items():
                        seconds.setdefault(what, []).append(value)
                    if said != wanted or not clean:
                        wrong.append((said, "clean" if clean else "processes left"))
                for what, values in seconds.items():
                    print(f"{name:18} median {statistics.median(values):.2f} s, max "
                          f"{max(values):.2f} s {what} ({len(values)} tries)")
                print(f"{'':18} " + (f"not as wanted: {wrong}" if wrong else
                                     f"every trace says {wanted}, no process left; load "
                                     f"average {os.getloadavg()[0]:.1f}"), flush=True)
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
