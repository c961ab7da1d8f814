"""``cpl explore`` and ``choreo.exploration.explore``: many seeded runs, tabulated.

The totals are checked against what the runs' own traces say, for one and
two worker processes (forked and spawned); the prevention twins show an
anomaly (a commit whose Committer never saw the tests pass) in many
unguarded runs and in no guarded one, while the guarded one still commits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from choreo import load_one
from choreo.exploration.explore import COUNTERS, DEFAULT_MAX_STEPS, PARALLEL_FROM, explore, \
    explore_file, schedule_of
from choreo.execution.plan import prepare
from choreo.execution.schedules import MIXED, SCHEDULES
from choreo.execution.simulate import Simulator
from choreo_util import alive, cpl, started_workers, write
from cpl.anomalies import detect
from cpl.trace import load_trace
from cpl_cli import build_parser, explore as cli_explore

ROOT = Path(__file__).resolve().parent.parent
REVIEW = str(ROOT / "examples" / "code_review.py")
CONTRACT = {"runs", "failed", "decisions", "anomalies"}  # cli.md's json keys

TWINS = """
def test(variables, rng):
    return "passed" if rng.random() < 0.7 else "failed"


def build(name, guard):
    c = Choreography(name)
    Tests, Committer = c.lifelines("Tests", "Committer")
    Status = c.symbols("Status", "passed", "failed")
    status = c.var("status", Status)
    seen = c.var("seen", Status)
    commits = c.var("commits", int, init={Committer: 0})
    aborts = c.var("aborts", int, init={Committer: 0})
    with c.parallel():
        with c.thread():
            c.act(Tests, test, assigns=[status], label="test")
            c.send(Tests, Committer, seen=status, label="result")
        with c.thread():
            with c.if_(guard, at=Committer, label="commit?"):
                c.act(Committer, lambda v, rng: v["commits"] + 1, assigns=[commits],
                      reads=[commits])
            with c.else_():
                c.act(Committer, lambda v, rng: v["aborts"] + 1, assigns=[aborts],
                      reads=[aborts])
    c.result(Committer, commits, aborts)
    return c


guarded = build("guarded", "@Tests(status == passed)")
unguarded = build("unguarded", "commits >= 0")  # always true, but not a constant
"""

FRAGILE = """
c = Choreography("fragile")
A, B = c.lifelines("A", "B")
x = c.var("x", int)
c.act(A, lambda v, rng: 1 // int(rng.random() < 0.6), assigns=[x], label="divide")  # <-
c.send(A, B, x, label="x")
"""


def blind_commit(trace) -> list:
    """The twins' anomaly: the Committer commits without having received a passed test."""
    seen = None
    for event in trace.events:
        if event.lifeline == "Committer":
            if event.kind == "recv":
                seen = event.set.get("seen")
            elif event.kind == "choice" and event.outcome and seen != "passed":
                return [event.id]
    return []


def merged(trace) -> bool:
    return any(e.kind == "choice" and e.label == "merge?" and e.outcome for e in trace.events)


def broken(trace):
    raise KeyError("oops")


def table(exploration) -> dict:
    """Everything but the times."""
    found = exploration.to_json()
    del found["seconds"], found["workers"]
    return found


@pytest.fixture(scope="module")
def review():
    return prepare(load_one(REVIEW))


def test_the_totals_are_what_the_runs_traces_say(review):
    runs, seed = 60, 11
    got = explore(review, runs, seed=seed, values={"rounds": 2}, workers=1,
                  detectors={"merged": merged}, counters=("merges",))
    simulator = Simulator.of(review)
    decisions, events, merges, fired = {}, 0, 0, 0
    for k in range(runs):
        result = simulator.run(seed=seed + k, values={"rounds": 2},
                               schedule=schedule_of(seed + k))
        events += len(result.trace.events)
        merges += result.results["Orchestrator"]["merges"]
        fired += merged(result.trace)
        for e in result.trace.events:
            if e.kind == "choice":
                counts = decisions.setdefault(e.label, {"true": 0, "false": 0})
                counts["true" if e.outcome else "false"] += 1
    assert got.runs == runs and got.failed == 0 and got.statuses == {"ok": runs}
    assert got.decisions == decisions
    assert decisions["another round?"] == {"true": 2 * runs, "false": runs}
    assert sum(c["true"] + c["false"] for c in got.decisions.values()) == got.work["decisions"]
    assert got.work["events"] == events and got.work["merges"] == merges
    assert got.anomalies == {"merged": fired} and 0 < fired < runs
    assert fired == sum(1 for k in range(runs) if merged(
        simulator.run(seed=seed + k, values={"rounds": 2}, schedule=schedule_of(seed + k)).trace))


def test_the_schedules_take_turns_and_cpl_run_keeps_its_trace(review):
    assert [schedule_of(s) for s in range(5)] == [*SCHEDULES, SCHEDULES[0]]
    assert schedule_of(7, "late") == "late" and SCHEDULES[0] == "random"
    simulator = Simulator.of(review)
    plain = simulator.run(seed=5, values={"rounds": 2})
    assert simulator.run(seed=5, values={"rounds": 2}, schedule="random").trace == plain.trace
    assert "schedule" not in plain.trace.meta
    orders = set()
    for schedule in SCHEDULES:
        result = simulator.run(seed=5, values={"rounds": 2}, schedule=schedule)
        assert result.ok and result.trace == simulator.run(
            seed=5, values={"rounds": 2}, schedule=schedule).trace  # each is seeded too
        orders.add(tuple(e.id for e in result.trace.events))
        assert result.trace.meta.get("schedule", "random") == schedule
    assert len(orders) == len(SCHEDULES)
    with pytest.raises(ValueError, match="unknown schedule"):
        simulator.run(seed=1, schedule="fifo")


def test_late_delivery_keeps_messages_in_transit_and_lifo_delivers_the_newest(review):
    simulator = Simulator.of(review)
    for seed in range(20):
        events = simulator.run(seed=seed, values={"rounds": 1}, schedule="late").trace.events
        kinds = [e.kind for e in events]
        # a receive only when nothing else can happen: the sends that start the round
        # all come before the first receive
        assert kinds.index("recv") > kinds.index("send") + 2
    overtaken = 0
    for seed in range(20):
        events = simulator.run(seed=seed, values={"rounds": 3}, schedule="lifo").trace.events
        sent = {e.msg: n for n, e in enumerate(events) if e.kind == "send"}
        received = [sent[e.msg] for e in events if e.kind == "recv"]
        overtaken += sum(a > b for a, b in zip(received, received[1:]))
    assert overtaken > 20


def test_one_worker_or_two_forked_or_spawned_give_the_same_table(review):
    options = dict(seed=3, values={"rounds": 1}, detectors={"merged": merged},
                   counters=("merges",))
    one = explore(review, 240, workers=1, **options)
    forked = explore(review, 240, workers=2, start_method="fork", **options)
    spawned = explore_file(REVIEW, 240, workers=2, start_method="spawn", **options)
    assert (one.workers, forked.workers, spawned.workers) == (1, 2, 2)
    assert table(one) == table(forked) == table(spawned)
    assert one.anomalies["merged"] == one.decisions["merge?"]["true"] > 0
    assert table(explore(review, 240, workers=1, **options)) == table(one)  # same seed
    assert table(explore(review, 240, workers=1, **dict(options, seed=4))) != table(one)


def test_prevention_twins_the_guard_prevents_the_anomaly_but_not_the_work(tmp_path):
    path = str(write(tmp_path, TWINS))
    found = {name: explore_file(path, 400, name=name, workers=1,
                                detectors={"blind commit": blind_commit})
             for name in ("unguarded", "guarded")}
    unguarded, guarded = found["unguarded"], found["guarded"]
    assert unguarded.anomalies["blind commit"] > 400 * 0.4  # late delivery: every run
    seed, schedule, _ = unguarded.first["anomalies"]["blind commit"]
    assert seed <= 1 and schedule == schedule_of(seed)  # seed 1 is late: it fires
    assert guarded.anomalies == {"blind commit": 0}  # counted, and zero
    assert guarded.work["commits"] > 0 and guarded.work["aborts"] > 0
    assert guarded.work["commits"] + guarded.work["aborts"] == 400
    assert list(guarded.work) == ["events", "messages", "decisions", "commits", "aborts"]
    late = explore_file(path, 100, name="unguarded", schedule="late", workers=1,
                        detectors={"blind commit": blind_commit})
    assert late.anomalies["blind commit"] == 100 and late.schedule == "late"


def test_failed_runs_and_a_raising_detector_are_counted_not_fatal(tmp_path):
    path = str(write(tmp_path, FRAGILE))
    got = explore_file(path, 300, workers=2, detectors={"never": lambda t: []},
                       start_method="fork")  # forked workers inherit the lambda
    assert got.runs == 300 and got.failed == got.statuses["failed"]
    assert 0 < got.failed < 300 and got.statuses["ok"] == 300 - got.failed
    seed, schedule, error = got.first["statuses"]["failed"]
    assert "ZeroDivisionError" in error and schedule == schedule_of(seed)
    assert got.anomalies == {"never": 0}
    bad = explore_file(path, 20, workers=1, detectors={"broken": broken})
    assert bad.statuses == {"error": 20} and bad.failed == 20
    assert "detector 'broken' raised KeyError" in bad.first["statuses"]["error"][2]
    whole = explore_file(path, 20, workers=1, detectors=lambda t: {"A1": [1], "A2": ()})
    assert whole.anomalies == {"A1": whole.runs - whole.statuses.get("error", 0), "A2": 0}


def test_a_run_that_never_ends_is_counted_at_the_step_limit(tmp_path):
    path = str(write(tmp_path, """
        c = Choreography("forever")
        A, B = c.lifelines("A", "B")
        n = c.var("n", int, init={A: 0})
        with c.while_("n >= 0", at=A, label="again?"):
            c.act(A, lambda v, rng: v["n"] + 1, assigns=[n], reads=[n])
            c.send(A, B, n, label="n")
    """))
    got = explore_file(path, 8, workers=1, max_steps=500)
    assert got.statuses == {"limit": 8} and got.decisions["again?"]["false"] == 0


def test_the_cli_json_is_the_contracts_and_nothing_else_on_stdout():
    result = cpl("explore", REVIEW, "--runs", "50", "--seed", "2", "--arg", "rounds=1",
                 "--format", "json", "--counter", "merges")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and len(result.stdout.splitlines()) == 1
    found = json.loads(result.stdout)
    assert CONTRACT <= set(found) and found["runs"] == 50 and found["failed"] == 0
    assert found["decisions"]["another round?"] == {"true": 50, "false": 50}
    merges = found["decisions"]["merge?"]
    assert merges["true"] + merges["false"] == 50 == found["work"]["decisions"] - 100
    assert found["work"]["merges"] == merges["true"]
    assert isinstance(found["anomalies"], dict)
    assert all(isinstance(v, int) for v in found["anomalies"].values())
    again = json.loads(cpl("explore", REVIEW, "--runs", "50", "--seed", "2", "--arg",
                           "rounds=1", "--format", "json", "--counter", "merges").stdout)
    del found["seconds"], again["seconds"]
    assert again == found


def test_the_cli_text_table(tmp_path):
    path = write(tmp_path, FRAGILE)
    result = cpl("explore", path, "--runs", "40", "--no-detectors")
    assert result.returncode == 0 and "Traceback" not in result.stderr
    out = result.stdout
    assert out.startswith("40 runs of seeds 0..39, schedule mixed, 1 worker\n")
    assert "decision" in out and "(none taken)" in out
    assert "anomalies: no detectors ran" in out
    failed = next(line for line in out.splitlines() if line.startswith("failed"))
    seed = failed.split("seed ")[1].split()[0]
    assert f"  failed, seed {seed}: " in out and "raised ZeroDivisionError" in out
    assert "simulator: " in out and "runs/s" in out
    assert result.stderr == ""  # not a terminal: no progress line


def test_a_terminal_sees_the_progress_on_standard_error_and_stdout_stays_json():
    import pty
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "cpl_cli", "explore", REVIEW, "--runs", "300",
         "--workers", "1", "--format", "json", "--no-detectors"],
        stdout=subprocess.PIPE, stderr=terminal, text=True)
    os.close(terminal)
    out, _ = process.communicate(timeout=60)
    shown = b""
    while True:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal's other end is closed: all read
            break
        if not chunk:
            break
        shown += chunk
    os.close(controller)
    assert process.returncode == 0 and json.loads(out)["runs"] == 300
    assert b"explored 300/300 runs" in shown and shown.endswith(b"\r")  # and wiped


@pytest.mark.parametrize("argv, says", [
    (["--runs", "0"], "--runs must be at least 1, not 0"),
    (["--runs", "-5"], "--runs must be at least 1, not -5"),
    (["--runs", "5", "--workers", "0"], "--workers must be at least 1"),
    (["--runs", "5", "--max-steps", "0"], "--max-steps must be at least 1"),
    (["--runs", "5", "--name", "nope"], "no choreography named 'nope'"),
    (["--runs", "5", "--arg", "round=1"], "unknown input 'round'"),
    (["--runs", "5", "--schedule", "fifo"], "invalid choice: 'fifo'"),
    (["--runs", "many"], "invalid int value"),
    ([], "the following arguments are required: --runs"),
])
def test_usage_errors_exit_2_without_a_traceback(argv, says):
    result = cpl("explore", REVIEW, *argv)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_a_missing_file_exits_2():
    result = cpl("explore", "no/such/choreo.py", "--runs", "3")
    assert result.returncode == 2 and "no such choreography file" in result.stderr


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_exits_130_and_leaves_no_worker(workers):
    process = subprocess.Popen(
        [sys.executable, "-m", "cpl_cli", "explore", REVIEW, "--runs", "10000000",
         "--workers", str(workers), "--no-detectors"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    wanted = workers if workers > 1 else 0  # one worker: the runs are in the process itself
    try:
        children = started_workers(process.pid, wanted, 20)
        time.sleep(1.0)  # well into the runs
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130 and "Traceback" not in err, err
    assert "interrupted" in err and out == ""
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in children)


def test_a_killed_worker_is_an_error_not_a_hang(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "cpl_cli", "explore", REVIEW, "--runs", "10000000",
         "--workers", "2", "--no-detectors"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        children = started_workers(process.pid, 2, 20)
        os.kill(min(children), signal.SIGKILL)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 1 and "Traceback" not in err and out == ""
    assert err.startswith("cpl explore: a worker process ended without its result"), err


def test_cpl_offers_every_schedule_where_it_applies():
    parser = build_parser()
    for schedule in SCHEDULES:
        assert parser.parse_args(["run", "c.py", "--schedule", schedule]).schedule == schedule
        assert parser.parse_args(["explore", "c.py", "--runs", "1", "--schedule",
                                  schedule]).schedule == schedule
    assert parser.parse_args(["explore", "c.py", "--runs", "1"]).schedule == MIXED
    assert parser.parse_args(["run", "c.py"]).schedule is None  # the simulator's default
    with pytest.raises(SystemExit):  # explore's turn-taking, not one run's schedule
        parser.parse_args(["run", "c.py", "--schedule", MIXED])


def test_the_cli_repeats_the_library_constants():
    assert cli_explore.COUNTERS == COUNTERS
    assert (cli_explore.PARALLEL_FROM, cli_explore.DEFAULT_MAX_STEPS) == \
        (PARALLEL_FROM, DEFAULT_MAX_STEPS)


def test_bad_arguments_to_the_library(review):
    with pytest.raises(ValueError, match="at least 1"):
        explore(review, 0)
    with pytest.raises(ValueError, match="unknown schedule"):
        explore(review, 3, schedule="fifo")
    with pytest.raises(ValueError, match="give source="):
        explore(review, 300, workers=2, start_method="spawn")


def test_a_reported_seed_replays_with_cpl_run_and_its_schedule(tmp_path):
    """explore names the first seed and schedule of each anomaly; cpl run --schedule
    replays exactly that run, anomaly included."""
    example = str(ROOT / "examples" / "anomalies" / "lost_update.py")
    result = cpl("explore", example, "--name", "unguarded", "--runs", "20", "--format", "json")
    seed, schedule, _ = json.loads(result.stdout)["first"]["anomalies"]["lost_update"]
    assert schedule != "random", "the test must replay a schedule cpl run does not use by default"
    trace_path = tmp_path / "replay.json"
    replay = cpl("run", example, "--name", "unguarded", "--sim", "--seed", str(seed),
                 "--schedule", schedule, "--trace", trace_path)
    assert replay.returncode == 0, replay.stderr
    trace = load_trace(trace_path)
    assert trace.meta["schedule"] == schedule and detect(trace)["lost_update"]
    plain = cpl("run", example, "--name", "unguarded", "--schedule", schedule)
    assert plain.returncode == 2 and "--sim" in plain.stderr
