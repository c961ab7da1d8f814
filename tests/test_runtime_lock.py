"""A live run's parts are its own.

While ``cpl run --trace t.jsonl`` runs, its lifelines' logs are in ``t.jsonl.parts``.
A second ``cpl run`` with the same trace used to call them the logs of "a run that
never ended" and advise deleting them or merging them; either made the live run end
``ok`` with a trace that lost its events.  Now the folder holds a lock naming the
running ``cpl run`` (``cpl.trace.holder``, released by the kernel however that process
ends): ``cpl run`` and ``cpl merge`` given a live run's parts say whose they are and
touch nothing, and a run whose parts or trace vanished anyway ends ``lost``.

Each run here waits at a gate (a file the test makes) between its first events and its
end, so the test acts while it surely runs, and the run ends when the test says.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from choreo_util import write
from cpl.trace import load_trace
from cpl_cli import main
from runtime.frames.control import SUPERVISOR_SILENCE
from runtime_util import Cpl, check_messages, lifeline_processes, wait_until

GATED = """
import os
import time

c = Choreography("gated")
A, B = c.lifelines("A", "B")
gate = c.input("gate", str, default="", at=A)
opened = c.var("opened", bool, init={A: False})


def wait(variables, rng):
    until = time.monotonic() + 30  # bounded, whatever the test does
    while not os.path.exists(variables["gate"]) and time.monotonic() < until:
        time.sleep(0.02)
    return True


c.send(A, B, gate, label="go")
c.act(A, wait, assigns=[opened], reads=[gate], label="wait at the gate")
c.send(A, B, opened, label="done")
"""
EVENTS = 5  # go sent and received, the gate's act, done sent and received


@pytest.fixture
def here(tmp_path, monkeypatch, capsys):
    """``cpl ARGS`` in this process, in ``tmp_path`` (the refusals need no process of
    their own, and an interpreter's start costs a second on a busy machine)."""
    monkeypatch.chdir(tmp_path)

    def command(*args):
        code = main(list(args))
        said = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, said.out, said.err)
    return command


class Gated:
    """A gated run of ``t.jsonl`` in ``folder``, waiting at its gate once entered."""

    def __init__(self, folder):
        self.folder, self.gate = folder, folder / "gate"
        self.trace, self.parts = folder / "t.jsonl", folder / "t.jsonl.parts"
        self.run = Cpl(folder, "run", str(write(folder, GATED)), "--arg",
                       f"gate={self.gate}", "--trace", "t.jsonl")

    def __enter__(self):
        self.run.__enter__()
        waiting = wait_until(lambda: self.run.logged() >= 2, 30.0)  # go sent and received
        assert waiting, f"the run never reached its gate; stderr:\n{self.run.err}"
        return self

    def __exit__(self, *exc):
        self.run.__exit__(*exc)

    def end(self) -> int:
        self.gate.touch()
        return self.run.wait(30)


def _said(err: str, pid: int) -> None:
    """The refusal names the live run: its pid and start, and advises nothing destructive."""
    assert f"in use by pid {pid} (cpl run started " in err, err
    assert re.search(r"cpl run started \d\d:\d\d:\d\d\)", err), err
    advice = err.split(": ", 1)[1]  # after the command's name
    assert "delete" not in advice and "merge" not in advice, err


def test_a_second_run_on_a_live_runs_trace_names_it_and_touches_nothing(tmp_path, here):
    with Gated(tmp_path) as live:
        before = live.trace.read_bytes(), sorted(os.listdir(live.parts))
        second = here("run", str(write(tmp_path, GATED, "other.py")),
                     "--trace", "t.jsonl")
        assert second.returncode == 2, second.stderr
        _said(second.stderr, live.run.process.pid)
        assert "--trace: t.jsonl.parts is in use" in second.stderr, second.stderr
        assert second.stdout == "", second.stdout  # it ran nothing
        assert sorted(os.listdir(live.parts)) == before[1]
        assert live.trace.read_bytes().startswith(before[0])  # never truncated
        assert live.end() == 0, live.run.err
    trace = load_trace(live.trace)
    assert trace.meta["status"] == "ok" and len(trace.events) == EVENTS, trace.meta
    check_messages(trace)
    assert not live.parts.exists()


def test_merging_a_live_runs_parts_is_refused_and_the_run_ends_whole(tmp_path, here):
    with Gated(tmp_path) as live:
        for target in ("t.jsonl", "other.jsonl"):  # its own trace, or any other
            merged = here("merge", "t.jsonl.parts", "-o", target)
            assert merged.returncode == 2, merged.stderr
            _said(merged.stderr, live.run.process.pid)
            assert "nothing was touched" in merged.stderr
        assert not (tmp_path / "other.jsonl").exists()
        (tmp_path / "logs").mkdir()  # the live run's trace as another merge's output
        onto = here("merge", "logs", "-o", "t.jsonl", "--force")
        assert onto.returncode == 2 and "-o t.jsonl: the trace of a live run" in onto.stderr, \
            onto.stderr
        told = here("eval", "t.jsonl")  # a reader says it goes on, names no merge
        assert "its run is still going: t.jsonl.parts is in use by pid" in told.stderr, \
            told.stderr
        assert "cpl merge" not in told.stderr
        assert live.end() == 0, live.run.err
    trace = load_trace(live.trace)
    assert trace.meta["status"] == "ok" and len(trace.events) == EVENTS, trace.meta


def test_parts_deleted_under_a_live_run_end_it_lost_not_ok(tmp_path):
    with Gated(tmp_path) as live:
        shutil.rmtree(live.parts)
        code = live.end()
        assert code == 1, live.run.err
        assert "its parts t.jsonl.parts were deleted or replaced while the run went" in \
            live.run.err, live.run.err
    meta = load_trace(live.trace).meta
    assert meta["status"] == "lost" and meta["lost"]["status"] == "ok", meta
    assert "t.jsonl.parts" in meta["lost"]["vanished"], meta


def test_a_trace_replaced_under_a_live_run_ends_it_lost_and_keeps_the_parts(tmp_path, here):
    with Gated(tmp_path) as live:
        (tmp_path / "impostor.jsonl").write_text("not this run's\n")
        os.replace(tmp_path / "impostor.jsonl", live.trace)
        assert live.end() == 1, live.run.err
        assert "its trace t.jsonl was deleted or replaced while the run went" in live.run.err
        assert "cpl merge t.jsonl.parts -o t.jsonl --force" in live.run.err, live.run.err
        assert "trace written to" not in live.run.err
    assert live.trace.read_text() == "not this run's\n"  # not ours to touch again
    merged = here("merge", "t.jsonl.parts", "-o", "t.jsonl", "--force")
    assert merged.returncode == 0, merged.stderr
    trace = load_trace(live.trace)  # the run's own ending, from the parts it kept
    assert trace.meta["status"] == "ok" and len(trace.events) == EVENTS, trace.meta
    assert "lost" not in trace.meta


def test_the_lock_dies_with_its_run_so_kill_9_still_merges(tmp_path, here):
    with Gated(tmp_path) as live:
        os.kill(live.run.process.pid, signal.SIGKILL)
        live.run.process.wait(10)
        gone = wait_until(lambda: not lifeline_processes(live.run.tag), SUPERVISOR_SILENCE + 5)
        assert gone, lifeline_processes(live.run.tag)
    assert (live.parts / "run.lock").exists()  # left behind, and held by nobody
    again = here("run", str(write(tmp_path, GATED, "other.py")), "--trace", "t.jsonl")
    assert again.returncode == 2 and "a run that never ended" in again.stderr, again.stderr
    merged = here("merge", "t.jsonl.parts", "-o", "t.jsonl")
    assert merged.returncode == 0, merged.stderr
    trace = load_trace(live.trace)
    assert trace.meta["status"] == "vanished" and len(trace.events) >= 2, trace.meta


def test_a_lock_file_of_anyone_never_hangs_or_misleads(tmp_path):
    from cpl.trace import holder
    folder = tmp_path / "p.parts"
    folder.mkdir()
    os.mkfifo(folder / "run.lock")  # a FIFO: opening it for reading must not wait
    started = time.monotonic()
    assert holder(folder) is None and time.monotonic() - started < 1.0
    os.unlink(folder / "run.lock")
    os.symlink("/etc/passwd", folder / "run.lock")
    assert holder(folder) is None
    os.unlink(folder / "run.lock")
    (folder / "run.lock").write_text('{"pid": 1}')  # a file nobody holds
    assert holder(folder) is None and holder(tmp_path / "none") is None


def test_a_trace_that_cannot_be_opened_leaves_no_parts_behind(tmp_path, here, monkeypatch):
    from cpl.errors import TraceError
    from cpl.trace import TraceWriter

    def refused(path, *args, **kwargs):  # a path that passed the output checks, then failed
        raise TraceError(f"{path}: cannot write the trace: no room")
    monkeypatch.setattr(TraceWriter, "open", staticmethod(refused))  # made and locked first
    told = here("run", str(write(tmp_path, GATED)), "--trace", "t.jsonl")
    assert told.returncode == 2 and "t.jsonl: cannot write the trace" in told.stderr, \
        told.stderr
    assert sorted(os.listdir(tmp_path)) == ["choreo_case.py"]


def test_a_claim_tells_what_vanished_and_the_run_it_had_ended(tmp_path):
    from runtime.supervisor.parts import Claim, Taken
    from runtime.supervisor.verdicts import before_lost
    folder, trace = str(tmp_path / "t.jsonl.parts"), str(tmp_path / "t.jsonl")
    claim = Claim(folder)
    try:
        (tmp_path / "t.jsonl").write_text("{}\n")
        claim.watch(trace)
        try:  # this process holds it: a second claim is refused, naming it
            Claim(folder)
            raise AssertionError("a second claim of live parts was taken")
        except Taken as taken:
            assert taken.holder is not None and taken.holder.pid == os.getpid()
        ok = {"status": "ok", "results": {}}
        assert claim.vanished() == [] and claim.checked(ok) is ok
        os.replace(tmp_path / "t.jsonl", tmp_path / "moved.jsonl")  # T moved away
        (tmp_path / "t.jsonl").write_text("{}\n")  # and another file in its place
        lost = claim.checked({"status": "died", "error": "lifeline B died", "results": {}})
        assert claim.vanished() == [trace]
        assert lost["status"] == "lost" and lost["lost"] == {
            "vanished": [trace], "status": "died", "error": "lifeline B died"}, lost
        assert f"its trace {trace} was deleted or replaced" in lost["error"]
        assert "--force` rebuilds it (the run itself ended died)" in lost["error"]
        assert before_lost(lost) == {"status": "died", "error": "lifeline B died", "results": {}}
        shutil.rmtree(folder)
        assert claim.vanished() == [folder, os.path.join(folder, "run.lock"), trace]
    finally:
        claim.release()
