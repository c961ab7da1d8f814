"""Detectors of yours that hang, fork or end their process.

Before, a detector that never returned hung `cpl detect` and `cpl explore` for good; one
that forked left a copy of `cpl` per run (8 for `--runs 8`), which could print the
report a second time or hang `--workers 2`; `os._exit(0)` in one ended `cpl detect`
with exit 0 and nothing printed.  Now each is a named error, naming the detector and
the trace, within `--detector-timeout` of it; the report is printed once; and nothing a
detector started is left running.  Every command here is bounded (`timeout=`), so the
old behaviour fails these tests instead of hanging them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "stale_publish.py"
FIG2 = ROOT / "examples" / "traces" / "fig2.json"
BOUND = 30  # seconds any command here may take before it counts as hanging

BAD = """
import os, subprocess, sys, time
PIDS = {pids!r}

def _keep(pid):
    with open(PIDS, "a") as out:
        out.write(f"{{pid}}\\n")

def hangs(trace):
    while True:
        time.sleep(0.1)

def forks(trace):
    copy = os.fork()  # the copy goes on: out of the detector, into its caller
    if copy:
        _keep(copy)
    return [e.id for e in trace.events[:1]]

def lingers(trace):
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    _keep(pid)
    return []

def escapes(trace):
    middle = os.fork()
    if middle == 0:  # a double fork: the grandchild is nobody's child once middle ends
        grandchild = os.fork()
        if grandchild == 0:
            time.sleep(60)
            os._exit(0)
        _keep(grandchild)
        os._exit(0)
    os.waitpid(middle, 0)
    return []

def exits(trace):
    os._exit(0)

def waits(trace):
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return [e.id for e in trace.events if e.kind == "choice"]

def fine(trace):
    print("fine looked")
    return [e.id for e in trace.events if e.kind == "choice"]
"""


@pytest.fixture
def bad(tmp_path):
    pids = tmp_path / "pids.txt"
    checks = tmp_path / "bad.py"
    checks.write_text(BAD.format(pids=str(pids)), encoding="utf-8")
    yield checks
    for pid in _pids(pids):  # whatever a failing test left: never outlives it
        try:
            os.kill(pid, 9)
        except OSError:
            pass


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _running(pid: int) -> bool:
    """Alive and not a zombie (a container's init may be slow to reap an orphan)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cpl(*args, cwd=None):
    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "cpl_cli", *map(str, args)],
                                capture_output=True, text=True, cwd=cwd, timeout=BOUND)
    except subprocess.TimeoutExpired:
        pytest.fail(f"cpl {' '.join(map(str, args[:1]))} still ran after {BOUND} s")
    return result, time.monotonic() - started


def _detect(bad, *functions, timeout=None):
    spec = [arg for name in functions for arg in ("--detect", f"{bad}:{name}")]
    deadline = () if timeout is None else ("--detector-timeout", timeout)
    return cpl("detect", FIG2, "--no-detectors", *spec, *deadline, "--format", "json")


def test_a_hanging_detector_is_named_at_its_deadline_and_the_others_still_report(bad):
    (result, took) = _detect(bad, "hangs", "fine", timeout="1")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"cpl detect: detector 'hangs' ({bad}:hangs) on {FIG2} did not return within 1 s " \
           f"(--detector-timeout)" in result.stderr
    assert json.loads(result.stdout) == {"fine": [{"event": "c3", "lifeline": "Committer",
                                                   "kind": "choice", "label": None}]}
    assert took < 1 + 8, took  # the deadline, and a Python start-up on a busy machine


def test_a_detector_that_ends_its_process_is_named_not_a_silent_exit_0(bad):
    result, _ = _detect(bad, "exits", "fine")
    assert result.returncode == 1, result
    assert f"detector 'exits' ({bad}:exits) on {FIG2} ended its process (exit status 0)" \
        in result.stderr
    assert "fine" in json.loads(result.stdout)
    assert "fine looked" in result.stderr  # its print: on standard error, the JSON alone


@pytest.mark.parametrize("function", ["forks", "lingers", "escapes"])
def test_a_detector_that_leaves_a_process_is_named_and_the_process_killed(bad, function):
    result, _ = _detect(bad, function, "fine")
    assert result.returncode == 1, result
    assert result.stdout.count('"fine"') == 1  # one report: no copy of cpl printed another
    assert f"detector '{function}' ({bad}:{function}) on {FIG2} " in result.stderr
    assert "a detector waits for what it starts" in result.stderr
    left = _pids(bad.parent / "pids.txt")
    assert left and not [pid for pid in left if _running(pid)]


def test_a_detector_that_waits_for_its_process_is_fine(bad):
    result, _ = _detect(bad, "waits")
    assert result.returncode == 1 and result.stderr == ""  # it fired: exit 1 like a linter
    assert [row["event"] for row in json.loads(result.stdout)["waits"]] == ["c3"]


@pytest.mark.parametrize("function,says,deadline", [
    ("forks", "started a process", ()),
    ("hangs", "did not return within 0.5 s", ("--detector-timeout", "0.5")),
])
def test_explore_counts_each_runs_failure_and_leaves_nothing(bad, function, says, deadline):
    result, _ = cpl("explore", EXAMPLE, "--name", "unguarded", "--runs", "4", "--workers", "2",
                    "--no-detectors", "--detect", f"{bad}:{function}", *deadline,
                    "--format", "json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("\n") == 1  # one report
    report = json.loads(result.stdout)
    assert report["failed"] == 4 and says in report["first"]["statuses"]["error"][2]
    assert f"detector '{function}' ({bad}:{function}) on the run of seed " \
        in report["first"]["statuses"]["error"][2]
    assert not [pid for pid in _pids(bad.parent / "pids.txt") if _running(pid)]


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_detector_timeout_that_is_no_deadline_is_a_usage_error(bad, value):
    result, _ = _detect(bad, "fine", timeout=value)
    assert result.returncode == 2 and "--detector-timeout" in result.stderr


def test_the_library_runs_them_the_same_way(bad):
    from choreo.exploration.user_detectors import DetectorFailed, user_detectors
    from cpl.trace import load_trace
    own = user_detectors([f"{bad}:exits", f"{bad}:fine"], timeout=5)
    trace = load_trace(FIG2)
    for where in ("one", "two"):  # a second trace goes to a child that serves on
        found, cpu = own.run(trace, where)
        assert isinstance(found["exits"], DetectorFailed) and where in str(found["exits"])
        assert [event.id for event in found["fine"]] == ["c3"] and cpu >= 0
