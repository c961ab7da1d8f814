"""The Ray launcher against local processes, side by side in the same run.

    python bench/run.py --only ray_launcher   # about 17 minutes on 2 cores under load
    python bench/ray_launcher.py [--quick] [--rounds N]

**One Ray cluster for the whole bench**, started once and kept (a user's
cluster is already running: that is the realistic case), on loopback only:
``ray start --head --block --node-ip-address=127.0.0.1 --port=FREE
--include-dashboard=false --temp-dir=PRIVATE --num-cpus=2`` in a session
of its own, with :data:`ray_head.RAY_ENV` in the environment of every process
of the bench (the head, ``cpl run``, hence the actors):
``RAY_AUTH_MODE=disabled`` (Ray 2.60's default is a token in
``~/.ray/auth_token``; a process whose mode differs fails after 20 s) and
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (without it, Ray turns
``--node-ip-address=127.0.0.1`` into the host's routable address, and the
head listens there).  ``cpl run ... --launcher ray --ray-address
127.0.0.1:PORT`` then places each lifeline as an actor on it.  The head is
stopped in ``finally``: SIGTERM to ``ray start --block`` (which drains and
stops what it started), then SIGKILL to what is left of its session (Ray's
workers each lead a group of their own), and the bench checks that none is
left.  ``ray stop`` is never used: it stops every Ray on the machine, other
people's too.

**The one-off cost of starting Ray** is reported apart, once: the head's
``ray start`` until it prints ``Ray runtime started.``, and one 4-lifeline
``cpl run --launcher ray --ray-address local`` (it starts and stops a Ray
of its own; ``RAY_TMPDIR`` is private), run before the head exists.

**Start-up** (as ``startup.py``: to the first event, from the trace, and the
whole run), 4 lifelines (``examples/code_review.py --arg rounds=1``) and 32
(``bench/startup_ring.py``), local processes and Ray actors interleaved in
the same rounds.  *CPU, all processes*: for local, user + system seconds of
``cpl run`` and its lifelines (``RUSAGE_CHILDREN``); for Ray, that of ``cpl
run`` plus what the cluster's processes spent during the run (``/proc``:
``utime + stime + cutime + cstime`` of the processes in the head's session, so
the actors' workers, reaped by the raylet, count), which includes the idle
cluster's own background for that time (measured apart: *idle cluster CPU*).
Before every candidate the bench waits until the cluster is quiet (Ray
restarts idle workers after a run's actors are gone), at most
:data:`ray_head.SETTLE_MAX` seconds.

**Where Ray's start-up goes** (:func:`probe`, a fresh process on the same
cluster, interleaved with the runs): ``import ray``; ``ray.init(address)``;
N actors of an empty class created and answering; N actors that import a
lifeline's modules and ``prepare`` the choreography, as a lifeline does,
each timing its own imports and prepare inside the worker; ``ray.shutdown()``;
and the CPU seconds the cluster spent meanwhile.  The actors have the
launcher's options (``num_cpus=0, max_concurrency=2``, no restarts).

**The stream** (as ``stream_throughput.py``: messages/s from A's first send to B's last
receive, from the trace), A and B as two actors against two local processes
and raw pyzmq + msgpack, insecure and CURVE, interleaved in the same rounds;
and the CPU seconds per message of all the stream's processes (with CURVE: the
CPU of the stream's run minus that of a ``CPU_SHORT``-data-message one, each
round, so that start-up cancels; longer streams on Ray lost log lines under
load, see README.md), Ray's with the cluster's and, apart, the supervisor's.

Every figure carries the 1-minute load average read before each of its runs.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules, however run

import startup  # noqa: E402
import stream_throughput  # noqa: E402
from stream_throughput import environment  # noqa: E402
from ray_head import Head, kill, load, ray_environment, session_processes  # noqa: E402
from timing import Row, children_cpu, interleaved, median  # noqa: E402

row = partial(Row, "ray_launcher")  # every row of this file is under its name

ROOT = Path(__file__).resolve().parent.parent
CPU_SHORT = 500  # the stream's count whose run, taken from the full one, leaves CPU per message


def unavailable() -> str | None:
    """Why the Ray bench cannot run here (None: it can)."""
    try:
        import ray  # noqa: F401
    except ImportError as error:
        return f"ray is not importable ({error})"
    help_text = subprocess.run([sys.executable, "-m", "cpl_cli", "run", "--help"],
                               capture_output=True, text=True, cwd=ROOT,
                               env=environment()).stdout
    if "--ray-address" not in help_text:
        return "this cpl run has no --launcher ray (--ray-address)"
    return None


def ray_args(address: str) -> list[str]:
    return ["--launcher", "ray", "--ray-address", address]


# ------------------------------------------------------------------ where start-up goes

_PROBE = r'''
import json, statistics, sys, time
t0 = time.perf_counter()
import ray
t1 = time.perf_counter()
ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
t2 = time.perf_counter()
n, choreography, empty = int(sys.argv[2]), sys.argv[3], sys.argv[4] == "empty"

OPTIONS = dict(num_cpus=0, max_concurrency=2, max_restarts=0, max_task_retries=0)

@ray.remote(**OPTIONS)
class Empty:
    def ready(self, choreography):
        return 0.0, 0.0

@ray.remote(**OPTIONS)
class Lifeline:
    def ready(self, choreography):
        start = time.perf_counter()
        import cpl_cli, cpl_cli.run, runtime.frames.ticket, runtime.frames.curve
        import runtime.lifeline.process
        from choreo import load_one
        from choreo.execution.plan import prepare
        imported = time.perf_counter()
        prepare(load_one(choreography))
        return imported - start, time.perf_counter() - imported

actors = [(Empty if empty else Lifeline).remote() for _ in range(n)]
inside = ray.get([a.ready.remote(choreography) for a in actors])
t3 = time.perf_counter()
for a in actors:
    ray.kill(a)
t4 = time.perf_counter()
ray.shutdown()
t5 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "init": t2 - t1, "actors": t3 - t2,
                  "imports inside": statistics.median(i for i, _ in inside),
                  "prepare inside": statistics.median(p for _, p in inside),
                  "shutdown": t5 - t4}))
'''


def probe(head: Head, n: int, choreography: Path, kind: str) -> dict:
    """Seconds of each phase of placing ``n`` actors of ``kind`` (``empty``: a class with
    one method; ``lifeline``: importing a lifeline's modules and preparing
    ``choreography``) on ``head``, and the CPU seconds the cluster spent meanwhile."""
    sampler = head.sampler()
    try:
        out = subprocess.run([sys.executable, "-c", _PROBE, head.address, str(n),
                              str(choreography), kind], capture_output=True, text=True,
                             cwd=ROOT, env=ray_environment(), timeout=startup.TIMEOUT)
    finally:
        cluster = sampler.stop()
    if out.returncode:
        raise RuntimeError(f"probe failed: {out.stderr[-2000:]}")
    return dict(json.loads(out.stdout.splitlines()[-1]), cluster=cluster)


# ------------------------------------------------------------------ the runs


def cold_run(folder: str) -> dict:
    """One 4-lifeline ``cpl run --launcher ray --ray-address local``: it starts its own Ray
    (temp dir private) and must leave no process behind."""
    trace = Path(folder) / "cold.jsonl"
    tmp = tempfile.mkdtemp(prefix="crc-", dir="/tmp")
    command = [sys.executable, "-m", "cpl_cli", "run", str(startup.REVIEW), "--arg",
               "rounds=1", *ray_args("local"), "--trace", str(trace)]
    try:
        start = time.time()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True, cwd=ROOT, start_new_session=True,
                                   env=ray_environment(RAY_TMPDIR=tmp))
        try:
            _, err = process.communicate(timeout=startup.TIMEOUT)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        end = time.time()
        if process.returncode:
            raise RuntimeError(f"{' '.join(command)} exited {process.returncode}: {err}")
        meta, events = stream_throughput.read_trace(trace)
        assert meta["status"] == "ok", meta
        time.sleep(1.0)
        left = kill(list(session_processes(process.pid)))
        return {"first": min(e["time"] for e in events) - start, "total": end - start,
                "left": left}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def startup_run(choreography: Path, args: list[str], folder: str, head: Head | None) -> dict:
    """``startup.one_run``, with the cluster's CPU counted for a Ray run."""
    sampler = head.sampler() if head else None
    try:
        run = startup.one_run(choreography, args, folder,
                              env=ray_environment() if head else None)
    finally:
        cluster = sampler.stop() if sampler else 0.0
    run["cpu"] += cluster
    return run


def stream_run(count: int, secure: bool, head: Head | None) -> dict:
    """The stream (stream_loop.py) over local processes (``head`` None) or actors on ``head``:
    its rate, the CPU seconds of all its processes, and of ``cpl run`` alone (Ray: the
    supervisor)."""
    sampler = head.sampler() if head else None
    before = children_cpu()
    try:
        with tempfile.TemporaryDirectory(prefix="cpl-stream-") as folder:
            n, seconds = stream_throughput.ours_stream(
                count, secure, folder, extra=ray_args(head.address) if head else [],
                env=ray_environment() if head else None)
    finally:
        cluster = sampler.stop() if sampler else 0.0
    mine = children_cpu() - before
    return {"rate": n / seconds, "cpu": mine + cluster, "cpl run": mine}


def per_message(long: list[dict], short: list[dict], messages: int, key: str) -> list[float]:
    """µs of ``key`` CPU per message: each round's long run minus its short one."""
    return [(a[key] - b[key]) / messages * 1e6 for a, b in zip(long, short)]


def measured(head: Head, loads: dict, name: str, function):
    """``function`` run after the cluster settles, the load noted under ``name``."""
    def one():
        head.settle()
        loads.setdefault(name, []).append(load())
        return function()
    return one


def span(values: list[float]) -> str:
    return f"{min(values):.1f}–{max(values):.1f}" if values else "?"


# ------------------------------------------------------------------ the rows


def run(quick: bool = False, rounds: int | None = None) -> list[Row]:
    reason = unavailable()
    if reason:
        print(f"ray bench skipped: {reason}", file=sys.stderr)
        return []
    rounds = rounds or (1 if quick else 5)
    count, raw_n = (300, 5_000) if quick else (5_000, 50_000)
    loads: dict[str, list[float]] = {}
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="cpl-ray-") as folder:
        cold = None
        if not quick:  # before the head: two Rays on two cores would measure each other
            loads["cold"] = [load()]
            cold = cold_run(folder)
        loads["head"] = [load()]
        head = Head()
        try:
            rows += run_on(head, folder, quick, rounds, count, raw_n, loads)
            processes = head.processes()
            rss = sum(r for _, _, r in processes.values())
            sampler = head.sampler()
            time.sleep(5.0)
            idle = sampler.stop() / 5.0
        finally:
            left = head.close()
    if left:
        raise RuntimeError(f"the bench's Ray head left processes: {left}")
    note = f"load {span(loads['head'])}"
    rows += [
        row("one-off: ray start --head until started (2 CPUs, no dashboard)",
            head.seconds, "s", [head.seconds], note=note),
        row("idle cluster: RSS of its processes", rss / 2**20, "MiB", [rss / 2**20],
            note=f"{len(processes)} processes after the runs"),
        row("idle cluster: CPU (cores)", idle, "cores", [idle]),
    ]
    if cold:
        rows += [
            row("one-off: --ray-address local (own Ray) → first event, 4 lifelines",
                cold["first"], "s", [cold["first"]], note=f"load {span(loads['cold'])}"),
            row("one-off: --ray-address local (own Ray), whole run, 4 lifelines",
                cold["total"], "s", [cold["total"]],
                note="processes left after it: "
                     + (", ".join(map(str, cold["left"])) if cold["left"] else "none")),
        ]
    return rows


def run_on(head: Head, folder: str, quick: bool, rounds: int, count: int, raw_n: int,
           loads: dict) -> list[Row]:
    address = ray_args(head.address)
    sizes = {"4": (startup.REVIEW, ["--arg", "rounds=1"])}
    if not quick:
        sizes["32"] = (startup.RING, [])
    frames = stream_throughput.frames()
    candidates = {}
    for size, (choreography, args) in sizes.items():
        candidates[f"local {size}"] = (
            lambda c=choreography, a=args: startup_run(c, a, folder, None))
        candidates[f"ray {size}"] = (
            lambda c=choreography, a=args: startup_run(c, a + address, folder, head))
        for kind in ("empty", "lifeline"):
            candidates[f"probe {kind} {size}"] = (
                lambda c=choreography, n=int(size), k=kind: probe(head, n, c, k))
    for setting, secure in (("insecure", False), ("CURVE", True)):
        candidates[f"raw {setting}"] = (
            lambda s=secure: raw_n / stream_throughput.raw_seconds(frames["data"], raw_n, s))
        candidates[f"stream local {setting}"] = lambda s=secure: stream_run(count, s, None)
        candidates[f"stream ray {setting}"] = lambda s=secure: stream_run(count, s, head)
    if not quick:  # CPU per message: the CURVE stream minus a short one, each round
        candidates["stream local CURVE short"] = lambda: stream_run(CPU_SHORT, True, None)
        candidates["stream ray CURVE short"] = lambda: stream_run(CPU_SHORT, True, head)
    runs = interleaved({name: measured(head, loads, name, f) for name, f in candidates.items()},
                       rounds)

    def noted(name: str, extra: str = "") -> str:
        return "; ".join(x for x in (extra, f"load {span(loads[name])}") if x)

    rows = []
    for size, (choreography, _) in sizes.items():
        what = f"{size} lifelines ({choreography.name})"
        local, ray = runs[f"local {size}"], runs[f"ray {size}"]
        for key, label in (("first", "→ first event"), ("total", "whole run"),
                           ("cpu", "CPU s of all processes")):
            mine = [r[key] for r in local]
            theirs = [r[key] for r in ray]
            rows.append(row(f"local processes, {label}, {what}", median(mine), "s", mine,
                            note=noted(f"local {size}")))
            rows.append(row(f"Ray actors, {label}, {what}", median(theirs), "s", theirs,
                            baseline="local processes", baseline_value=median(mine),
                            note=noted(f"ray {size}", "incl. the cluster's processes"
                                       if key == "cpu" else "")))
        for kind in ("empty", "lifeline"):
            name = f"probe {kind} {size}"
            phases = runs[name]
            labels = [("actors", f"{size} {kind} actors created and answering, wall"),
                      ("cluster", f"{size} {kind} actors: CPU s of the cluster meanwhile")]
            if kind == "lifeline":
                labels += [("imports inside", "  in each actor: a lifeline's imports (median)"),
                           ("prepare inside", "  in each actor: prepare(load_one(...)) (median)")]
            labels += [("import", "driver: import ray"),
                       ("init", "driver: ray.init(address) of the running cluster"),
                       ("shutdown", "driver: ray.shutdown()")] if kind == "empty" else []
            for key, label in labels:
                values = [p[key] for p in phases]
                rows.append(row(f"probe: {label}", median(values), "s", values,
                                note=noted(name)))
    for setting in ("insecure", "CURVE"):
        raw = runs[f"raw {setting}"]
        local = [r["rate"] for r in runs[f"stream local {setting}"]]
        ray = [r["rate"] for r in runs[f"stream ray {setting}"]]
        messages = f"{2 * count + 1:,} msgs"
        rows += [
            row(f"stream raw pyzmq+msgpack, {setting}, {raw_n:,} frames", median(raw),
                "msgs/s", raw, note=noted(f"raw {setting}")),
            row(f"stream local processes A→B, {setting}, {messages}", median(local),
                "msgs/s", local, baseline=f"raw, {setting}", baseline_value=median(raw),
                note=noted(f"stream local {setting}")),
            row(f"stream Ray actors A→B, {setting}, {messages}", median(ray), "msgs/s", ray,
                baseline=f"local processes, {setting}", baseline_value=median(local),
                note=noted(f"stream ray {setting}")),
            row(f"stream Ray actors A→B, {setting}, vs raw", median(ray), "msgs/s", ray,
                baseline=f"raw, {setting}", baseline_value=median(raw)),
        ]
    if not quick:
        messages = 2 * (count - CPU_SHORT)
        note = f"{2 * count + 1:,} msgs minus {2 * CPU_SHORT + 1:,}, each round"
        local, ray = runs["stream local CURVE"], runs["stream ray CURVE"]
        short_local, short_ray = runs["stream local CURVE short"], runs["stream ray CURVE short"]
        local_cpu = per_message(local, short_local, messages, "cpu")
        ray_cpu = per_message(ray, short_ray, messages, "cpu")
        supervisor = per_message(ray, short_ray, messages, "cpl run")
        rows += [
            row("stream CPU per message, all processes, local processes, CURVE",
                median(local_cpu), "µs", local_cpu,
                note=f"{note}; load {span(loads['stream local CURVE short'])}"),
            row("stream CPU per message, all processes, Ray actors, CURVE", median(ray_cpu),
                "µs", ray_cpu, baseline="local processes", baseline_value=median(local_cpu),
                note="incl. the cluster's processes; "
                f"load {span(loads['stream ray CURVE short'])}"),
            row("  of which cpl run (the supervisor, which the actors ship their logs to)",
                median(supervisor), "µs", supervisor),
        ]
    return rows


if __name__ == "__main__":
    from timing import table

    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else None
    print(table(run(quick="--quick" in sys.argv, rounds=rounds)))
