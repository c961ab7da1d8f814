"""Small things a user hits on the command line.

``--trace out.txt`` is refused before the run, naming the suffixes; a
misspelt ``--lifeline`` gets the closest name; a bool ``--arg`` that is not
one lists what is; a lifeline killed before it set a result says so instead
of ``(unset)``, while a lifeline that merely never set one keeps ``(unset)``.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from choreo_util import cpl, write
from runtime_util import Cpl, wait_until

ROOT = Path(__file__).resolve().parent.parent
RELAY = ROOT / "examples" / "relay.py"
FIG2 = ROOT / "examples" / "traces" / "fig2.json"


@pytest.mark.parametrize("name", ["out.txt", "out.JSONL.bak", "t.svg", "dir.d/t.csv"])
def test_a_trace_suffix_that_says_no_form_is_a_usage_error_before_the_run(tmp_path, name):
    (tmp_path / "dir.d").mkdir()
    result = cpl("run", RELAY, "--sim", "--trace", name, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""  # nothing ran
    suffix = os.path.splitext(name)[1]
    assert result.stderr == (f"cpl run: --trace {name}: give a file ending in .json, .jsonl "
                             f"(streamed) or .msgpack (also .mpk), not {suffix}\n")
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("name", ["t.json", "t.JSON", "t.jsonl", "t.msgpack", "t.mpk", "t",
                                  ".hidden"])
def test_the_accepted_suffixes_and_none_still_write(tmp_path, name):
    result = cpl("run", RELAY, "--sim", "--trace", name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / name).stat().st_size > 0


def test_a_hostile_suffix_is_escaped(tmp_path):
    result = cpl("run", RELAY, "--sim", "--trace", "t.\x1b[2J", cwd=tmp_path)
    assert result.returncode == 2 and "\x1b" not in result.stderr and "\\x1b" in result.stderr


@pytest.mark.parametrize("argv,says", [
    (["show", RELAY, "--lifeline", "Indicater"],
     "cpl show: --lifeline: unknown lifeline 'Indicater'; did you mean 'Indicator'? "
     "(the choreography has Device, RelayA, RelayB, Indicator)"),
    (["eval", FIG2, "true", "--lifeline", "Comitter"],
     "cpl eval: --lifeline: unknown lifeline 'Comitter'; did you mean 'Committer'? "
     "(the trace has Orchestrator, TestRunner, Committer)"),
    (["eval", FIG2, "--lifeline", "committer"],
     "cpl eval: --lifeline: unknown lifeline 'committer'; did you mean 'Committer'?"),
    (["eval", FIG2, "true", "--lifeline", "Zzz", "--format", "jsonl"],
     "cpl eval: --lifeline: unknown lifeline 'Zzz' (the trace has"),
])
def test_a_misspelt_lifeline_gets_the_closest_name(argv, says):
    result = cpl(*argv)
    assert result.returncode == 2 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith(says), result.stderr


def test_thousands_of_lifelines_are_not_all_listed(tmp_path):
    names = [f"L{n}" for n in range(5000)]
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"format": "cpl-msc/1", "lifelines": names, "events": []}))
    result = cpl("eval", path, "true", "--lifeline", "L49999")
    assert result.returncode == 2 and "and 4980 more)" in result.stderr
    assert len(result.stderr) < 1000


BOOL_INPUT = """
c = Choreography("flag")
(A,) = c.lifelines("A")
strict = c.input("strict", bool, default=False, at=A)
c.result(A, strict)
"""


@pytest.mark.parametrize("value", ["maybe", "", "tru", "x" * 100_000],
                         ids=["maybe", "empty", "tru", "huge"])
def test_a_bool_arg_lists_the_accepted_values(tmp_path, value):
    path = write(tmp_path, BOOL_INPUT)
    result = cpl("run", path, "--sim", "--arg", f"strict={value}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "is not bool (give one of true, false, yes, no, 1, 0, on, off)" in result.stderr
    assert len(result.stderr) < 1000


@pytest.mark.parametrize("value,shown", [("Yes", "true"), ("off", "false"), ("1", "true")])
def test_the_listed_bool_values_are_accepted(tmp_path, value, shown):
    path = write(tmp_path, BOOL_INPUT)
    result = cpl("run", path, "--sim", "--arg", f"strict={value}")
    assert result.returncode == 0 and result.stdout == f"A: strict = {shown}\n"


KILLED = """
import os, time

PIDS = {pids!r}


def stall(variables, rng):
    with open(PIDS, "w") as handle:
        handle.write(str(os.getpid()))
    time.sleep(120)
    return "done"


c = Choreography("killed")
Worker, Boss = c.lifelines("Worker", "Boss")
status = c.var("status", str)
note = c.var("note", str)
c.set(Boss, note="started")
c.send(Boss, Worker, note, label="go")
c.act(Worker, stall, assigns=[status])
c.send(Worker, Boss, status, label="report")
c.result(Worker, status, note)
c.result(Boss, status, note)
"""


def test_a_killed_lifelines_unset_result_says_it_died(tmp_path):
    pids = tmp_path / "worker.pid"
    path = write(tmp_path, KILLED.format(pids=str(pids)))
    with Cpl(tmp_path, "run", str(path), "--trace", "k.jsonl") as run:
        assert wait_until(lambda: pids.exists() and pids.read_text(), 30.0), run.err
        os.kill(int(pids.read_text()), signal.SIGKILL)
        assert run.wait(30) == 1, run.err
        out = run.out.splitlines()
    assert "lifeline Worker died" in run.err
    # Worker got the note before it died; Boss ended without a status: not dead, unset.
    assert out == ['Worker: status = (died before it set status), note = "started"',
                   'Boss: status = (unset), note = "started"']
