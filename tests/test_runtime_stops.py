"""Prompt stops of ``cpl run`` over processes (issue #15): Ctrl-C within 1 s, ``--timeout T``
within T + 1 s of the run's start, whatever the run is doing — starting its lifelines,
exchanging messages, or waiting for a synchronous action that holds a lifeline's only
thread — and the trace still written, saying how the run ended.  ``bench/stops.py``
measures the same over 20 random moments."""

from __future__ import annotations

import random
import time

import pytest

from cpl.trace import load_trace
from runtime_util import ROOT, Cpl, check_messages, tagged, wait_until

# A stop within 1 s is timed on a machine that other tests share: under pytest-xdist
# (README's test command, --dist loadgroup) these tests and the other sub-second stop
# timings run one at a time on one worker, never against each other's processes.
pytestmark = pytest.mark.xdist_group("timing")

LOOP = str(ROOT / "bench" / "stops_loop.py")  # A and B in a loop of blocking actions
_moments = random.Random(15)
MOMENTS = [  # (what the run is doing, seconds after the trace file appears, action pause)
    ("starting", _moments.uniform(0.0, 0.3), 0.01),
    ("starting", _moments.uniform(0.3, 0.8), 0.01),
    ("running", _moments.uniform(1.5, 3.0), 0.01),
    ("running", _moments.uniform(1.5, 3.0), 0.2),
    ("blocking", _moments.uniform(2.0, 3.0), 60.0),
]


def _trace(path, status: str):
    trace = load_trace(path)
    assert trace.meta["status"] == status, trace.meta
    assert trace.meta["processes"] is True and trace.meta["unplaced"] == 0
    check_messages(trace)
    return trace


@pytest.mark.parametrize("doing, after, pause", MOMENTS, ids=[m[0] for m in MOMENTS])
def test_ctrl_c_ends_a_run_within_a_second_whatever_it_is_doing(tmp_path, doing, after, pause):
    trace_path = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", LOOP, "--arg", f"pause={pause}", "--trace", str(trace_path)) as cpl:
        assert wait_until(trace_path.exists, 30.0, step=0.01), cpl.err
        time.sleep(after)
        cpl.ctrl_c()
        signalled = time.monotonic()
        code = cpl.wait(30)
        took = time.monotonic() - signalled
        assert code == 130, cpl.err
        assert took < 1.0, f"Ctrl-C {after:.2f} s into the run took {took:.2f} s"
        assert "Traceback" not in cpl.err, cpl.err
        assert wait_until(lambda: not tagged(cpl.tag), 2.0), tagged(cpl.tag)
    trace = _trace(trace_path, "interrupted")
    if doing != "starting":
        assert trace.events, "the run was under way: its events are in the trace"


@pytest.mark.parametrize("pause", [0.01, 60.0], ids=["running", "blocking"])
def test_timeout_ends_a_run_within_a_second_of_it(tmp_path, pause):
    trace_path = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", LOOP, "--arg", f"pause={pause}", "--timeout", "2", "--trace",
             str(trace_path)) as cpl:
        assert wait_until(trace_path.exists, 30.0, step=0.01), cpl.err
        opened = time.monotonic()  # the run starts as its trace is opened: T counts from here
        code = cpl.wait(30)
        took = time.monotonic() - opened
        assert code == 1, cpl.err
        assert took < 2 + 1.0, f"--timeout 2 took {took:.2f} s"
        assert "--timeout" in cpl.err
        assert wait_until(lambda: not tagged(cpl.tag), 2.0), tagged(cpl.tag)
    assert _trace(trace_path, "timeout").events
