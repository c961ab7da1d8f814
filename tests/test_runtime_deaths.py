"""A killed local lifeline is named within two heartbeats.

The supervisor sees a local lifeline's process end at once (``LocalProcesses.ended``);
it used to say so only after the stop, the last merge and the trace's end, 0.94–2.96 s
after the kill on a busy machine.  Now it prints first and merges after.  Five runs
wait at their gates (started together: their start-up is most of the time); one
lifeline of each is killed in turn, and each kill is named on standard error within
``2 * BEAT`` of it, once, with the trace still ending ``died``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

import pytest

from choreo_util import write
from cpl.trace import load_trace
from runtime.frames.control import BEAT
from runtime_util import Cpl, lifeline_processes, wait_until
from test_runtime_lock import GATED

# Timed to a fraction of a second on a machine other tests share: with the stop timings.
pytestmark = pytest.mark.xdist_group("timing")

KILLS = 5
NAMED = "cpl run: lifeline B died: its process exited (signal SIGKILL)"


def test_a_killed_lifeline_is_named_within_two_heartbeats(tmp_path):
    choreography = str(write(tmp_path, GATED))
    took = []
    with contextlib.ExitStack() as runs:
        started = [runs.enter_context(Cpl(tmp_path, "run", choreography, "--arg",
                                          f"gate={tmp_path / 'never'}", "--trace",
                                          f"t{n}.jsonl")) for n in range(KILLS)]
        # (B023: wait_until calls each lambda before the loop moves on, with this run)
        for run in started:  # every one at its gate: A waits in its action, B for A
            assert wait_until(lambda: len(lifeline_processes(run.tag)) == 2  # noqa: B023
                              and run.logged() >= 2, 60.0), run.err  # noqa: B023
        for run in started:
            (victim,) = [pid for pid, line in lifeline_processes(run.tag).items()
                         if line.split()[-2:] == ["B", "--stdin"]]
            os.kill(victim, signal.SIGKILL)
            killed = time.monotonic()
            named = wait_until(lambda: NAMED in run.err, 10.0, step=0.005)  # noqa: B023
            took.append(time.monotonic() - killed)
            assert named, f"the death was never named; stderr:\n{run.err}"
            assert run.wait(20) == 1, run.err
    for n, run in enumerate(started):
        assert run.err.count(NAMED) == 1, run.err  # named once, not again at the end
        assert run.err.endswith(f"{NAMED}\ncpl run: trace written to t{n}.jsonl\n"), run.err
        meta = load_trace(tmp_path / f"t{n}.jsonl").meta
        assert meta["status"] == "died" and meta["died"]["lifeline"] == "B", meta
    late = [round(seconds, 2) for seconds in took if seconds > 2 * BEAT]
    assert not late, f"named after {late} s (> {2 * BEAT:g} s); all: {took}"
    print(f"kill -9 to its name on stderr: {', '.join(f'{s:.3f}' for s in took)} s")
