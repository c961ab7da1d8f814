"""``cpl run`` against actions that misbehave: they fork, start daemons, never
return, hold the interpreter's lock, raise ``KeyboardInterrupt`` or ``BaseException``;
and against a lifeline stopped with SIGSTOP.  Whatever they do, the run ends as the docs
say, its trace is valid, and no process of it is left (every process of a test carries
its tag, ``runtime_util.tagged``).
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from cpl.trace import load_trace
from runtime_util import ROOT, Cpl, check_messages, lifeline_processes, tagged, wait_until

PAIR = """
import os, subprocess, time
from choreo import Choreography


def act(variables, rng):
{body}
    return 2


c = Choreography("misbehaving")
A, B = c.lifelines("A", "B")
x = c.var("x", int)
c.set(A, x=1)
c.send(A, B, x)
c.act(B, act, assigns=[x], label="compute x")
c.send(B, A, x)
"""

FORKS = {  # what an action starts, and leaves behind when it returns
    "fork": "    os.fork()",  # both copies return into the lifeline
    "fork-sleep": "    if os.fork() == 0:\n        time.sleep(300)",
    "daemon": "    subprocess.Popen(['sleep', '300'])",
    "setsid": "    subprocess.Popen(['sleep', '300'], start_new_session=True)",
}
MODES = {"processes": (), "sim": ("--sim",), "sim-timeout": ("--sim", "--timeout", "60")}


def _write(tmp_path, body: str):
    path = tmp_path / "misbehaving.py"
    path.write_text(PAIR.format(body=body))
    return str(path)


def _gone(cpl, within: float = 1.0) -> None:
    left = wait_until(lambda: not tagged(cpl.tag), within) or tagged(cpl.tag)
    assert left is True, f"processes of the run left behind: {left}"


def _valid(trace_path):
    trace = load_trace(trace_path)
    ids = [e.id for e in trace.events]
    assert len(set(ids)) == len(ids), f"duplicate event ids: {ids}"
    return trace


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("started", list(FORKS))
def test_nothing_an_action_starts_outlives_the_run(tmp_path, started, mode):
    trace_path = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", _write(tmp_path, FORKS[started]), *MODES[mode],
             "--trace", str(trace_path)) as cpl:
        assert cpl.wait(60) == 0, cpl.err
        assert "Traceback" not in cpl.err, cpl.err
        assert cpl.out == "A: x = 2\nB: x = 2\n"  # printed once, by the run only
        _gone(cpl)
    trace = _valid(trace_path)
    assert trace.meta["status"] == "ok"
    assert [e.id for e in trace.events if e.lifeline == "B"] == ["B.1", "B.2", "B.3"]
    with Cpl(tmp_path, "eval", str(trace_path), "@B.x == 2", "--lifeline", "A") as check:
        assert check.wait(60) == 0, check.err


def test_a_killed_supervisor_takes_every_lifeline_and_what_it_started(tmp_path):
    body = "    subprocess.Popen(['sleep', '300'])\n    time.sleep(300)"
    with Cpl(tmp_path, "run", _write(tmp_path, body)) as cpl:
        assert wait_until(lambda: any("sleep 300" in line for line in tagged(cpl.tag).values()),
                          30.0), cpl.err
        os.kill(cpl.process.pid, signal.SIGKILL)
        cpl.process.wait(5)
        _gone(cpl, within=2.0)


@pytest.mark.xdist_group("timing")  # a stop within 1 s of --timeout: see test_runtime_stops
@pytest.mark.parametrize("body", [
    "    time.sleep(1e6)",
    "    while True:\n        pass",
    "    sum(range(10 ** 13))",  # one C call: holds the interpreter's lock all along
], ids=["sleep", "busy", "gil"])
def test_sim_timeout_ends_the_run_whatever_the_action_does(tmp_path, body):
    trace_path = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", _write(tmp_path, body), "--sim", "--timeout", "2",
             "--trace", str(trace_path)) as cpl:
        assert wait_until(trace_path.exists, 30.0, step=0.01), cpl.err
        opened = time.monotonic()
        assert cpl.wait(30) == 1, cpl.err
        took = time.monotonic() - opened
        assert took < 2 + 1.0, f"--sim --timeout 2 took {took:.2f} s"
        assert "stopped after 2 s (--timeout)" in cpl.err and "Traceback" not in cpl.err
        assert cpl.out == "A: x = 1\nB: x = 1\n"  # the results as the events left them
        _gone(cpl)
    trace = _valid(trace_path)
    assert trace.meta["status"] == "timeout" and trace.meta["steps"] == 3
    assert [e.id for e in trace.events] == ["A.1", "A.2", "B.1"]  # all it did, kept


def test_a_lifeline_holding_the_interpreter_is_unresponsive_not_dead(tmp_path):
    trace_path = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", _write(tmp_path, "    sum(range(10 ** 13))"),
             "--trace", str(trace_path)) as cpl:
        assert cpl.wait(20) == 1, cpl.err
        _unresponsive(cpl, trace_path)


def test_a_stopped_lifeline_is_unresponsive_not_dead(tmp_path):
    trace_path = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", _write(tmp_path, "    time.sleep(300)"),
             "--trace", str(trace_path)) as cpl:
        assert wait_until(lambda: cpl.logged() >= 3, 30.0), cpl.err  # B is in its action
        (lifeline,) = [pid for pid, line in lifeline_processes(cpl.tag).items()
                       if " B " in f"{line} "]
        os.kill(lifeline, signal.SIGSTOP)
        assert cpl.wait(20) == 1, cpl.err
        _unresponsive(cpl, trace_path)


def _unresponsive(cpl, trace_path) -> None:
    assert "lifeline B is unresponsive: its process is alive but silent for" in cpl.err, cpl.err
    assert "died" not in cpl.err and "Traceback" not in cpl.err
    _gone(cpl)
    trace = load_trace(trace_path)
    assert trace.meta["status"] == "unresponsive"
    assert trace.meta["unresponsive"]["lifeline"] == "B"
    assert trace.meta["unresponsive"]["silent"] >= 5.0
    check_messages(trace)


@pytest.mark.parametrize("mode", ["processes", "sim"])
@pytest.mark.parametrize("raised, said", [
    ("KeyboardInterrupt", "raised KeyboardInterrupt"),
    ("SystemExit(3)", "called sys.exit(3)"),
    ("BaseException('boom')", "raised BaseException: boom"),
], ids=["KeyboardInterrupt", "SystemExit", "BaseException"])
def test_an_action_raising_any_exception_fails_the_run_in_both_modes(tmp_path, mode, raised,
                                                                     said):
    trace_path = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", _write(tmp_path, f"    raise {raised}"), *MODES[mode],
             "--trace", str(trace_path)) as cpl:
        assert cpl.wait(60) == 1, cpl.err
        assert "Traceback" not in cpl.err, cpl.err
        assert f"B, after B.1: action 'compute x' {said}" in cpl.err, cpl.err
        _gone(cpl, within=5.0)
    trace = load_trace(trace_path)
    assert trace.meta["status"] == "failed" and said in trace.meta["error"]
    assert [e.id for e in trace.events] == ["A.1", "A.2", "B.1"]


def test_ctrl_c_stops_a_sim_with_a_timeout_as_it_stops_one_without(tmp_path):
    trace_path = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", str(ROOT / "examples" / "code_review.py"), "--sim",
             "--arg", "rounds=1000000", "--timeout", "60", "--trace", str(trace_path)) as cpl:
        assert wait_until(lambda: trace_path.exists() and trace_path.stat().st_size > 200_000,
                          30.0), cpl.err
        cpl.ctrl_c()
        assert cpl.wait(10) == 130, cpl.err
        assert "interrupted" in cpl.err and "Traceback" not in cpl.err
        assert "Orchestrator: round = " in cpl.out  # the results still printed
        _gone(cpl)
    trace = _valid(trace_path)
    assert trace.meta["status"] == "interrupted" and trace.meta["steps"] > 1000
    assert len(trace.events) == trace.meta["steps"]


def test_without_a_trace_too_an_action_raising_keyboard_interrupt_fails_the_sim(tmp_path):
    with Cpl(tmp_path, "run", _write(tmp_path, "    raise KeyboardInterrupt"), "--sim") as cpl:
        assert cpl.wait(60) == 1, cpl.err
        assert "action 'compute x' raised KeyboardInterrupt" in cpl.err, cpl.err
