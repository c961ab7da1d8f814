"""``cpl run`` as a careless or hostile user meets it: every failure is a clear message,
the right exit code, no traceback, and a trace that says how the run ended.

Each case runs the real command in a subprocess, bounded in time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

import choreo
from choreo.execution.simulate import Simulator
from choreo_util import cpl, killed_simulation, write
from cpl.trace import load_trace

ROOT = __import__("pathlib").Path(__file__).resolve().parent.parent

PAIR = """
c = Choreography("pair")
A, B = c.lifelines("A", "B")
x = c.var("x", {kind})
c.set(A, x={first})
c.send(A, B, x)
c.act(B, {action}, assigns=[x], label="compute x")
"""


def run_case(tmp_path, *extra, kind="int", first="1", action="lambda v, rng: 2", prelude=""):
    path = write(tmp_path, prelude + PAIR.format(kind=kind, first=first, action=action))
    trace = tmp_path / "run.jsonl"
    result = cpl("run", path, "--sim", "--trace", trace, *extra)
    assert "Traceback" not in result.stderr, result.stderr
    return result, trace


def ended(trace_path) -> dict:
    """The ``end`` line of a streamed trace."""
    return json.loads(trace_path.read_text().splitlines()[-1])["end"]


@pytest.mark.parametrize("action, cause", [
    ("lambda v, rng: float('nan')", "gave x = nan, which a trace cannot hold"),
    ("lambda v, rng: float('inf')", "gave x = inf, which a trace cannot hold"),
    ("lambda v, rng: __import__('sys').exit(0)", "called sys.exit(0)"),
    ("lambda v, rng: 1 / 0", "raised ZeroDivisionError: division by zero"),
])
def test_a_failing_action_ends_the_run_as_failed_and_the_trace_names_it(tmp_path, action, cause):
    result, trace = run_case(tmp_path, kind="float", first="1.0", action=action)
    assert result.returncode == 1, result.stderr
    assert f"B, after B.1: action 'compute x' {cause}" in result.stderr
    meta = ended(trace)
    assert meta["status"] == "failed" and cause in meta["error"]
    assert [e.id for e in load_trace(trace).events] == ["A.1", "A.2", "B.1"]


def test_a_predicate_that_raises_ends_the_run_as_failed(tmp_path):
    prelude = ("import cpl\n\n@cpl.predicate('fragile')\n"
               "def fragile(x):\n    raise RuntimeError('no such file')\n")
    path = write(tmp_path, prelude + """
c = Choreography("pred")
A, B = c.lifelines("A", "B")
x = c.var("x", int)
c.set(A, x=1)
c.send(A, B, x)
with c.if_("fragile(x)", at=B, label="go?"):
    c.set(B, x=2)
""")
    trace = tmp_path / "run.json"
    result = cpl("run", path, "--sim", "--trace", trace)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "cannot evaluate a guard: predicate 'fragile' raised RuntimeError: no such file" \
        in result.stderr
    assert load_trace(trace).meta["status"] == "failed"


@pytest.mark.parametrize("target, why", [("missing-dir/t.jsonl", "does not exist"),
                                         (".", "it is a directory; name a file in it")])
def test_an_unwritable_trace_path_is_refused_before_the_run(tmp_path, target, why):
    result = cpl("run", ROOT / "examples" / "code_review.py", "--sim", "--trace",
                 tmp_path / target)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"cpl run: --trace {tmp_path / target}: ") \
        and why in result.stderr, result.stderr
    assert result.stdout == ""  # no run happened


def test_a_run_that_never_ends_streams_in_constant_memory_until_its_timeout(tmp_path):
    path = write(tmp_path, """
c = Choreography("forever")
A, B = c.lifelines("A", "B")
n = c.var("n", int, init={A: 0})
with c.while_("true", at=A, label="again?"):
    c.act(A, lambda v, rng: v["n"] + 1, assigns=[n])
    c.send(A, B, n)
""")
    trace = tmp_path / "forever.jsonl"
    command = [sys.executable, "-m", "cpl_cli", "run", str(path), "--sim", "--trace",
               str(trace), "--timeout", "4"]
    peak = subprocess.run(  # peak RSS of the command alone, from a fresh parent
        [sys.executable, "-c", "import resource, subprocess, sys; "
         "code = subprocess.run(sys.argv[1:]).returncode; "
         "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)", *command],
        capture_output=True, text=True, timeout=60)
    code, kib = map(int, peak.stdout.split()[-2:])
    assert code == 1 and "stopped after 4 s (--timeout)" in peak.stderr
    assert ended(trace)["status"] == "timeout"
    assert trace.stat().st_size > 5_000_000  # it ran for real: several MB of events
    assert kib < 64 * 1024, f"peak RSS {kib} KiB"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_stops_the_run_and_the_trace_says_interrupted(tmp_path, signum):
    trace = tmp_path / "long.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "cpl_cli", "run", str(ROOT / "examples" / "code_review.py"),
         "--sim", "--arg", "rounds=1000000", "--trace", str(trace)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while (not trace.exists() or trace.stat().st_size < 200_000) and time.monotonic() < deadline:
        time.sleep(0.1)
    process.send_signal(signum)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 130 and "Traceback" not in err
    assert "interrupted" in err and "Orchestrator: round = " in out  # results still printed
    meta = ended(trace)
    assert meta["status"] == "interrupted" and meta["steps"] > 1000
    assert len(load_trace(trace).events) == meta["steps"]


def test_a_killed_run_keeps_what_it_did_and_the_reader_says_it_was_cut_off(tmp_path):
    trace = tmp_path / "killed.jsonl"
    killed_simulation(trace, 200_000)
    result = cpl("eval", trace, "@TestRunner.candidate == candidate", "--lifeline", "Committer",
                 "--format", "jsonl")
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert "cut off" in result.stderr
    assert len(result.stdout.splitlines()) > 100


def _code_review():
    return Simulator(choreo.load_one(str(ROOT / "examples" / "code_review.py")))


@pytest.mark.parametrize("at, signum", [(1, signal.SIGINT), (2, signal.SIGINT),
                                        (40, signal.SIGINT), (40, signal.SIGTERM)])
def test_ctrl_c_while_an_event_is_written_still_counts_it(at, signum):
    """The CI failure of stop 12: a Ctrl-C landing inside the sink made meta.steps one short."""
    written = []

    def sink(event):
        written.append(event)
        if len(written) == at:
            os.kill(os.getpid(), signum)  # delivered before the sink returns

    before = signal.signal(signal.SIGTERM, signal.default_int_handler)  # as cpl run maps it
    try:
        result = _code_review().run(seed=3, args=["rounds=1000"], record=False, sink=sink)
        assert signal.getsignal(signum) is signal.default_int_handler  # handed back
    finally:
        signal.signal(signal.SIGTERM, before)
    assert result.status == "interrupted"
    assert result.steps == len(written) == at


def test_ctrl_c_inside_an_action_interrupts_at_once(tmp_path):
    path = write(tmp_path, PAIR.format(
        kind="int", first="1",
        action="lambda v, rng: __import__('os').kill(__import__('os').getpid(), 2) or 2"))
    written = []
    simulator = Simulator(choreo.load_one(str(path)))
    result = simulator.run(record=False, sink=written.append)
    assert result.status == "interrupted" and result.steps == len(written) == 3
    assert [e.id for e in written] == ["A.1", "A.2", "B.1"]  # B's action never became B.2
    kept = simulator.run()  # in memory, no sink: the handler stays; the count still agrees
    assert kept.status == "interrupted" and kept.steps == len(kept.trace.events) == 3
