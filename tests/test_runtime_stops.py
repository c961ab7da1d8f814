"""Prompt stops of ``cpl run`` over processes: Ctrl-C within 1 s, ``--timeout T``
within T + 1 s of the run's start, whatever the run is doing — starting its lifelines,
exchanging messages, or waiting for a synchronous action that holds a lifeline's only
thread — and the trace still written, saying how the run ended.  ``bench/stops.py``
measures the same over 20 random moments."""

from __future__ import annotations

import concurrent.futures
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from cpl.trace import load_trace, read_log
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


# ---------------------------------------------------------------- Ctrl-C under load

CODE_REVIEW = str(ROOT / "examples" / "code_review.py")
INTERRUPTS = 40  # Ctrl-C at random moments, two runs at a time
BURNERS = 4  # busy processes beside them, as on a loaded 2-core machine
# In the runs' processes only: cpl run's removal of the parts becomes a rename to T.kept,
# so the test can hold the trace against every event the lifelines logged (T.kept).
KEEP_PARTS = """
import os, shutil
_rmtree = shutil.rmtree
def rmtree(path, *args, **kwargs):
    if str(path).endswith(".parts"):
        return os.rename(path, str(path)[:-len(".parts")] + ".kept")
    return _rmtree(path, *args, **kwargs)
shutil.rmtree = rmtree
"""


@pytest.fixture
def busy():
    """``BURNERS`` processes burning CPU, each ending itself after 10 minutes at worst."""
    burners = [subprocess.Popen([sys.executable, "-c", "import time\nend = time.monotonic() "
                                 "+ 600\nwhile time.monotonic() < end:\n    pass"])
               for _ in range(BURNERS)]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def _last_values(trace, plan) -> dict[str, str]:
    """Each lifeline's line as ``cpl run`` prints it, from the trace's events alone."""
    stores = {name: dict(trace.init.get(name, {})) for name in trace.lifelines}
    for event in trace.events:
        stores[event.lifeline].update(event.set or {})
    lines = {}
    for name in trace.lifelines:
        names = plan.choreography.reported_names(name, stores[name])
        lines[name] = ", ".join(f"{n} = {json.dumps(stores[name][n])}" if n in stores[name]
                                else f"{n} = (unset)" for n in names) or "(nothing)"
    return lines


def _interrupted_once(folder, attempt: int, moment: float, plan) -> str:
    """One run of code_review interrupted ``moment`` s after its trace appears; checked
    whole.  What it was doing when stopped, for the tally."""
    trace_path = folder / f"t{attempt}.jsonl"
    with Cpl(folder, "run", CODE_REVIEW, "--arg", "rounds=100000", "--seed", str(attempt),
             "--trace", str(trace_path)) as cpl:
        assert wait_until(trace_path.exists, 60.0, step=0.01), cpl.err
        time.sleep(moment)
        cpl.ctrl_c()
        code = cpl.wait(60)
        assert code == 130, cpl.err
        assert "Traceback" not in cpl.err and "internal error" not in cpl.err, cpl.err
        assert cpl.err.startswith("cpl run: interrupted\n"), cpl.err
        assert wait_until(lambda: not tagged(cpl.tag), 5.0), tagged(cpl.tag)
        out = cpl.out
    trace = _trace(trace_path, "interrupted")
    kept = folder / f"t{attempt}.jsonl.kept"
    assert not (folder / f"t{attempt}.jsonl.parts").exists()
    logged = {name: [e["id"] for e in read_log(str(kept / f"{index}.jsonl"), name)]
              for index, name in enumerate(trace.lifelines)}
    merged = {name: [e.id for e in trace.events if e.lifeline == name]
              for name in trace.lifelines}
    assert merged == logged, {n: (len(merged[n]), len(logged[n])) for n in logged}
    printed = dict(line.split(": ", 1) for line in out.splitlines())
    assert printed == _last_values(trace, plan), out
    return "starting" if not trace.events else "running"


def test_ctrl_c_under_load_keeps_every_logged_event_and_prints_the_traces_results(
        tmp_path, monkeypatch, busy):
    """40 Ctrl-Cs at random moments, two runs at a time beside 4 busy processes: every
    trace valid and holding exactly the events the lifelines logged, every printed result
    the trace's last value, no process left.  Timing plays no part in what is asserted."""
    from choreo import load_one
    from choreo.execution.plan import prepare
    plan = prepare(load_one(CODE_REVIEW))
    keep = tmp_path / "site"
    keep.mkdir()
    (keep / "sitecustomize.py").write_text(KEEP_PARTS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(keep), *filter(None, [os.environ.get("PYTHONPATH")])]))
    rng = random.Random(28)
    moments = [rng.uniform(0.0, 0.5) if attempt % 4 == 0 else rng.uniform(0.5, 2.0)
               for attempt in range(INTERRUPTS)]
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        doing = list(pool.map(lambda attempt: _interrupted_once(
            tmp_path, attempt, moments[attempt], plan), range(INTERRUPTS)))
    print(f"{INTERRUPTS} interrupts in {time.monotonic() - began:.0f} s: "
          f"{doing.count('starting')} while starting, {doing.count('running')} running")
    assert doing.count("running") >= INTERRUPTS // 2


def test_a_second_ctrl_c_during_the_last_merge_says_so_and_cpl_merge_completes_the_trace(
        tmp_path, monkeypatch, capsys):
    """Nothing merged while the run went (``Following.merge_for`` made idle), then a second
    Ctrl-C as the last merge begins: cpl run says in one line that the trace lacks events
    and names the command; every reader refuses the trace naming it; the command works as
    printed and the trace then holds every logged event."""
    import shlex

    import runtime.supervisor.following as following
    import runtime.supervisor.supervisor as supervisor
    from cpl_cli import main
    monkeypatch.setattr(following.Following, "merge_for", lambda self, seconds: True)
    monkeypatch.chdir(tmp_path)
    original = following.Merging.step
    stopped = []

    def step(self, stop=None, every=256):
        if stopped and stopped[-1] == "merging":  # the last merge: Ctrl-C again
            signal.raise_signal(signal.SIGINT)
            stopped.append("signalled")
        return original(self, stop, every)
    original_stop = supervisor.Supervisor._stop

    def stop_then_merge(self, control, hurry):
        original_stop(self, control, hurry)
        stopped.append("merging")
    monkeypatch.setattr(following.Merging, "step", step)
    monkeypatch.setattr(supervisor.Supervisor, "_stop", stop_then_merge)

    def ctrl_c_soon():  # once the lifelines have logged a while: there is something to merge
        wait_until(lambda: sum(log.stat().st_size for log in
                               (tmp_path / "t.jsonl.parts").glob("*.jsonl")) > 200_000, 60.0)
        signal.raise_signal(signal.SIGINT)
    import threading
    threading.Thread(target=ctrl_c_soon, daemon=True).start()
    code = main(["run", LOOP, "--arg", "pause=0.001", "--trace", "t.jsonl"])
    told = capsys.readouterr()
    assert code == 130 and stopped[-1] == "signalled", told.err
    command = "cpl merge t.jsonl.parts -o t.jsonl"
    assert told.err.splitlines()[-1] == (
        f"cpl run: stopped while merging: t.jsonl lacks events the lifelines logged; "
        f"`{command}` writes the whole trace"), told.err
    cut = load_trace(tmp_path / "t.jsonl")
    assert cut.meta["status"] == "interrupted" and cut.meta["unmerged"] is True
    logged = sum(1 for log in (tmp_path / "t.jsonl.parts").glob("*.jsonl")
                 for _ in read_log(str(log)))
    assert len(cut.events) < logged
    for args in (["eval", "t.jsonl"], ["explain", "t.jsonl", "A.1"],
                 ["render", "t.jsonl", "-o", "t.dot"], ["detect", "t.jsonl"]):
        assert main(args) == 1, args
        said = capsys.readouterr()
        assert not said.out and f"`{command}` writes the whole trace" in said.err, said.err
    assert main(shlex.split(command)[1:]) == 0  # as printed
    capsys.readouterr()
    whole = load_trace(tmp_path / "t.jsonl")
    assert len(whole.events) == logged and "unmerged" not in whole.meta
    assert whole.meta["status"] == "interrupted" and whole.meta["unplaced"] == 0
    check_messages(whole)
    assert main(["eval", "t.jsonl"]) == 0
    said = capsys.readouterr()
    assert said.err == "note: t.jsonl: its run ended interrupted\n", said.err
    assert "all agree" in said.out


def test_lifelines_wait_while_the_merge_catches_up_and_the_trace_stays_whole(
        tmp_path, monkeypatch, capsys):
    """A merge kept behind (slices of a millisecond, no lag allowed) pauses the local
    lifelines and resumes them once it has caught up, again and again; the run still ends
    by its --timeout, not as a silent lifeline, with every logged event in its trace."""
    import runtime.supervisor.launchers as launchers
    import runtime.supervisor.following as following
    from cpl_cli import main
    monkeypatch.setattr(following, "MERGE_SLICE", 0.001)
    monkeypatch.setattr(following, "MERGE_LAG", 0.0)
    holds = []
    original = launchers.LocalProcesses.hold

    def hold(self, held):
        holds.append(held)
        original(self, held)
    monkeypatch.setattr(launchers.LocalProcesses, "hold", hold)
    monkeypatch.chdir(tmp_path)
    code = main(["run", CODE_REVIEW, "--arg", "rounds=100000", "--timeout", "4",
                 "--trace", "t.jsonl"])
    err = capsys.readouterr().err
    assert code == 1 and "--timeout" in err, err
    assert holds.count(True) >= 2 and holds[-1] is False, holds
    assert holds == [True, False] * (len(holds) // 2)  # each pause ended by a resume
    trace = _trace(tmp_path / "t.jsonl", "timeout")
    assert trace.events and not (tmp_path / "t.jsonl.parts").exists()
