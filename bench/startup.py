"""Start-up of ``cpl run`` over processes: until the first event, and a whole 1-round run.

For ``examples/code_review.py --arg rounds=1`` (4 lifelines) and
``bench/startup_ring.py`` (32 lifelines, one token round a ring), each run
is ``python -m cpl_cli run CHOREO --trace t.jsonl`` in a fresh process:

* **to the first event**: the first event's ``time`` in the trace minus the
  wall time just before the ``cpl run`` process was started;
* **whole run**: wall time until ``cpl run`` exited (its trace merged and
  closed, every lifeline gone);
* **CPU, all processes**: user + system seconds of ``cpl run`` and every
  lifeline it started (``RUSAGE_CHILDREN``: the supervisor reaps them).

The lifelines are started as ``cpl lifeline NAME`` from ``PATH``; this
benchmark puts this Python's ``bin`` first, as an installed ``cpl`` or an
activated environment has it (a pyenv *shim* first on ``PATH`` costs every
lifeline a bash script and a ``pyenv`` lookup before Python starts).

Where start-up goes (each a fresh process, medians, interleaved with the runs):

* interpreter: ``python -c pass``;
* imports of a lifeline process (``cpl_cli``, ``cpl_cli.run``,
  ``runtime.lifeline``: zmq, msgpack, choreo, cpl), wall time minus the
  interpreter's;
* ``prepare(load_one(CHOREO))`` — import the choreography, validate, project,
  compile the guards — timed inside the process; the supervisor does it once
  and forks its lifelines from there (``runtime.supervisor.zygote``; before, every
  lifeline did it again);
* the CPU seconds of one process doing all three: what the supervisor spends
  before it forks the first lifeline (a lifeline started as the command, where
  forking is unsafe, spends it too);
* what is left of the time to the first event is forking, the lifelines'
  CURVE keys and sockets, the rendezvous (``hello`` → ``start``) and waiting
  for a core.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from stream_throughput import environment, read_trace
from timing import Row, children_cpu, interleaved, median, run_to_end

ROOT = Path(__file__).resolve().parent.parent
REVIEW = ROOT / "examples" / "code_review.py"
RING = Path(__file__).resolve().parent / "startup_ring.py"
TIMEOUT = 300.0
IMPORTS = "import cpl_cli, cpl_cli.run, runtime.frames.ticket, runtime.lifeline"
PREPARE = ("import sys, time; " + IMPORTS + "; from choreo import load_one; "
           "from choreo.execution.plan import prepare; t = time.perf_counter(); "
           "prepare(load_one(sys.argv[1])); print(time.perf_counter() - t)")


def one_run(choreography: Path, args: list[str], folder: str, env: dict | None = None) -> dict:
    """Seconds to the first event, for the whole run, and CPU of every process (``env``:
    of ``cpl run``, default ``environment()``)."""
    trace = Path(folder) / "startup.jsonl"
    command = [sys.executable, "-m", "cpl_cli", "run", str(choreography), *args,
               "--trace", str(trace)]
    cpu = children_cpu()
    start, end = run_to_end(command, TIMEOUT, cwd=ROOT, env=env or environment())
    meta, events = read_trace(trace)
    assert meta["status"] == "ok", meta
    return {"first": min(e["time"] for e in events) - start, "total": end - start,
            "cpu": children_cpu() - cpu, "events": len(events)}


def wall(code: str, *args: str) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, standard output) of ``python -c CODE ARGS``."""
    cpu = children_cpu()
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=TIMEOUT).stdout
    return time.perf_counter() - start, children_cpu() - cpu, out


def run(quick: bool = False) -> list[Row]:
    rounds = 1 if quick else 5
    runs: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="cpl-startup-") as folder:
        candidates = {
            "review": lambda: one_run(REVIEW, ["--arg", "rounds=1"], folder),
            "pass": lambda: wall("pass"),
            "imports": lambda: wall(IMPORTS),
            "prepare review": lambda: wall(PREPARE, str(REVIEW)),
            "prepare ring": lambda: wall(PREPARE, str(RING)),
        }
        if not quick:  # 32 lifelines take several seconds of both cores
            candidates["ring"] = lambda: one_run(RING, [], folder)
        runs = interleaved(candidates, rounds)
    interpreter = [w for w, _, _ in runs["pass"]]
    imports = [w - p for (w, _, _), p in zip(runs["imports"], interpreter)]
    rows = []
    for key, what in (("review", "examples/code_review.py rounds=1, 4 lifelines"),
                      ("ring", "bench/startup_ring.py, 32 lifelines")):
        if key not in runs:
            continue
        first = [r["first"] for r in runs[key]]
        total = [r["total"] for r in runs[key]]
        cpu = [r["cpu"] for r in runs[key]]
        rows += [
            Row("startup", f"cpl run → first event, {what}", median(first), "s", first,
                baseline="python -c pass", baseline_value=median(interpreter)),
            Row("startup", f"cpl run, whole run, {what}", median(total), "s", total,
                note=f"{runs[key][0]['events']} events"),
            Row("startup", f"  CPU s of all processes, {what}", median(cpu), "s", cpu),
        ]
    prepared = {key: [float(out) for _, _, out in runs[f"prepare {key}"]]
                for key in ("review", "ring")}
    per_process = {key: [c for _, c, _ in runs[f"prepare {key}"]] for key in ("review", "ring")}
    rows += [
        Row("startup", "interpreter: python -c pass", median(interpreter), "s", interpreter),
        Row("startup", "imports of a lifeline process (minus interpreter)", median(imports), "s",
            imports),
        Row("startup", "load + validate + project + compile, code_review",
            median(prepared["review"]), "s", prepared["review"]),
        Row("startup", "load + validate + project + compile, 32-lifeline ring",
            median(prepared["ring"]), "s", prepared["ring"]),
        Row("startup", "CPU s of one process: interpreter + imports + prepare, code_review",
            median(per_process["review"]), "s", per_process["review"]),
        Row("startup", "CPU s of one process: interpreter + imports + prepare, 32-lifeline ring",
            median(per_process["ring"]), "s", per_process["ring"]),
    ]
    return rows


if __name__ == "__main__":
    from timing import table

    print(table(run(quick="--quick" in sys.argv)))
