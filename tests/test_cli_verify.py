"""``cpl verify``: its exit codes, its report, and the files it writes.

The text report's numbers are checked against the JSON report of the same
search; the counterexample is re-checked by ``cpl eval`` and fired on by ``cpl
detect``, and the replay command the report prints reproduces its events.
Hostile options are one-line usage errors (exit 2) before any run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from choreo_util import alive, started_workers, write
from cpl.trace import load_trace
from cpl_cli import main

ROOT = Path(__file__).resolve().parent.parent
RELAY = str(ROOT / "examples" / "relay.py")
LOST = str(ROOT / "examples" / "anomalies" / "lost_update.py")
KEYS = {"name", "inputs", "result", "bound", "why", "mscs", "runs", "blocked", "statuses",
        "decisions", "detectors", "first", "failures", "counterexample", "replay", "work",
        "seconds", "workers", "alike"}

DRAWS = """
c = Choreography("draws")
A, B = c.lifelines("A", "B")
n = c.var("n", int)


def draw(variables, rng):
    return DRAW


c.act(A, draw, assigns=[n], label="pick")
c.send(A, B, n, label="n")
c.result(B, n)
"""


def cpl(capsys, *argv) -> tuple[int, str, str]:
    """``cpl verify ARGV`` in this process: exit code, standard output, standard error."""
    try:
        code = main(["verify", *map(str, argv)])
    except SystemExit as exit:  # argparse's refusals
        code = exit.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err


def draws(tmp_path, draw: str) -> Path:
    return write(tmp_path, DRAWS.replace("DRAW", draw), "draws.py")


def test_a_complete_search_with_nothing_found_exits_0(capsys):
    code, out, _ = cpl(capsys, RELAY, "--format", "json")
    report = json.loads(out)
    assert code == 0 and set(report) == KEYS
    assert report["result"] == "complete" and report["bound"] is None
    assert report["mscs"] == 2 and report["statuses"] == {"ok": 2} and not report["first"]
    code, out, _ = cpl(capsys, RELAY)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"cpl verify {RELAY} --name relay: complete, every MSC within the bounds"
    assert lines[1] == "  2 MSCs in 2 runs"
    assert "nothing fired (causal_cascade, lost_update" in out


def test_a_firing_its_counterexample_and_its_replay(capsys, tmp_path):
    out_file = tmp_path / "bad one.jsonl"  # a name the printed commands must quote
    code, out, _ = cpl(capsys, LOST, "--name", "unguarded", "--max-runs", "12",
                       "--format", "json", "--counterexample", out_file)
    report = json.loads(out)
    assert code == 1 and report["bound"] == "max-runs" and report["mscs"] == 12
    fired = report["detectors"]["lost_update"]
    first = report["first"]["lost_update"]
    assert fired and report["counterexample"] == str(out_file)
    out_file.unlink()
    code, text, _ = cpl(capsys, LOST, "--name", "unguarded", "--max-runs", "12",
                        "--counterexample", out_file)
    assert code == 1
    assert (f"  detectors: lost_update: fired in {fired} of 12 MSCs, first in MSC "
            f"{first['index']} (path {first['path']})") in text
    quoted = shlex.quote(str(out_file))
    assert f"  counterexample: {quoted} (draw it: cpl render {quoted} -o " in text
    # the counterexample is a trace whose every decision re-checks, and the detector fires
    assert main(["eval", str(out_file)]) == 0
    assert "all agree" in capsys.readouterr().out
    assert main(["detect", str(out_file)]) == 1
    assert "lost_update: fired" in capsys.readouterr().out
    # the printed replay, into another file, makes the same MSC
    replay = next(line for line in text.splitlines() if line.startswith("  replay: "))
    words = shlex.split(replay.split(": ", 1)[1])
    assert words[:2] == ["cpl", "verify"] and words[words.index("--replay") + 1] == first["path"]
    again = tmp_path / "again.jsonl"
    words[words.index("--counterexample") + 1] = str(again)
    code, text, _ = cpl(capsys, *words[2:])
    assert code == 1 and f"replay of the MSC at path {first['path']}" in text
    original, replayed = load_trace(str(out_file)), load_trace(str(again))
    assert replayed.events == original.events
    assert replayed.meta["path"] == original.meta["path"] == first["path"]


def test_a_counterexample_into_a_device_is_written_in_place_and_not_offered_to_draw(capsys):
    code, text, _ = cpl(capsys, LOST, "--name", "unguarded", "--max-runs", "12",
                        "--counterexample", os.devnull)
    assert code == 1 and os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
    assert f"  counterexample: written to {os.devnull}\n" in text and "draw it" not in text
    assert "--counterexample counterexample.jsonl" in text  # the replay names a file


def test_traces_writes_one_file_per_msc_and_max_runs_bounds(capsys, tmp_path):
    folder = tmp_path / "made" / "here"
    code, out, _ = cpl(capsys, RELAY, "--traces", folder, "--format", "json")
    report = json.loads(out)
    names = sorted(os.listdir(folder))
    assert code == 0 and len(names) == report["mscs"] == 2
    assert [load_trace(str(folder / name)).meta["path"] for name in names] == ["0", "1"]
    bounded = tmp_path / "one"
    code, out, _ = cpl(capsys, RELAY, "--traces", bounded, "--max-runs", "1")
    assert code == 3 and len(os.listdir(bounded)) == 1
    assert ": bounded (max-runs): stopped after 1 MSC" in out.splitlines()[0]


def test_a_failed_run_exits_1_and_says_where(capsys, tmp_path):
    path = draws(tmp_path, "[1, 2][rng.randint(0, 2)]")  # the third outcome raises
    code, out, _ = cpl(capsys, path)
    assert code == 1, out
    assert re.search(r"  statuses: ok 2, failed 1\n    failed first at path 2: .*IndexError", out)
    assert f"  replay the failed: cpl verify {path} --name draws --replay 2 --traces traces" in out


def test_a_draw_too_wide_is_a_usage_error_naming_the_action(capsys, tmp_path):
    path = draws(tmp_path, "rng.randint(0, 10**6)")
    code, out, err = cpl(capsys, path)
    assert code == 2 and out == ""
    assert "action 'pick' on A draws among 1000001 outcomes" in err
    assert len(err.strip().splitlines()) == 1
    code, out, _ = cpl(capsys, path, "--sample-domains")
    assert code == 3 and ": bounded (sampled): action 'pick'" in out


def test_a_float_draw_makes_the_search_bounded(capsys, tmp_path):
    path = draws(tmp_path, "int(rng.random() * 3)")
    code, out, _ = cpl(capsys, path, "--format", "json")
    report = json.loads(out)
    assert code == 3 and report["bound"] == "not enumerable" and "rng.random()" in report["why"]
    code, out, _ = cpl(capsys, path)
    assert code == 3 and ": bounded (not enumerable): action 'pick' on A called" in out


@pytest.mark.parametrize("argv, says", [
    (["--max-runs", "0"], "--max-runs must be at least 1, not 0"),
    (["--max-runs", "-5"], "--max-runs must be at least 1, not -5"),
    (["--max-steps", "-1"], "--max-steps must be at least 1"),
    (["--max-steps", "1e3"], "argument --max-steps: invalid int value"),
    (["--max-runs", "9" * 5000], "argument --max-runs: invalid int value"),
    (["--workers", "0"], "--workers must be at least 1"),
    (["--workers", "1" + "0" * 30], f"--workers 1{'0' * 30}: at most 1024 processes"),
    (["--time-limit", "0"], "--time-limit must be a number of seconds above 0, not 0"),
    (["--time-limit", "nan"], "not nan"),
    (["--time-limit", "1e999"], "not inf"),
    (["--time-limit", "soon"], "argument --time-limit: invalid float value"),
    (["--detect", "x.py:f", "--detector-timeout", "-1"], "--detector-timeout: give a number"),
    (["--replay", "x.1"], "--replay 'x.1': give a path as the report prints it"),
    (["--replay", "99999"], "no alternative 99999 at choice point 1"),
    (["--replay", "\u0661.\u0662"], "give a path as the report prints it"),  # Arabic digits
    (["--replay", "9" * 5000], "'... (5000 characters): give a path"),
    (["--replay", "0.0.0.0.0.0.0.0.0.0.0"], "no MSC at path 0.0.0.0.0.0.0.0.0.0.0"),
    (["--replay", ".".join(["0"] * 5000)], "... (9999 characters): no MSC at path 0.0.0"),
    (["--counterexample", "."], "--counterexample .: it is a directory"),
    (["--counterexample", "-"], "standard output carries the report"),
    (["--counterexample", "bad.txt"], "give a file ending in .json, .jsonl"),
    (["--counterexample", "no/such/dir/bad.jsonl"], "the directory 'no/such/dir' does not"),
    (["--traces", RELAY], f"--traces {RELAY}: it is not a directory"),
    (["--traces", f"{RELAY}/sub"], "is not a directory"),
    (["--arg", "nope=1"], "unknown input 'nope'"),
    (["--name", "nope"], "no choreography named 'nope'"),
])
def test_hostile_options_are_one_line_usage_errors(capsys, tmp_path, monkeypatch, argv, says):
    monkeypatch.chdir(tmp_path)
    code, out, err = cpl(capsys, RELAY, *argv)
    assert code == 2 and out == ""
    assert says in err, err
    assert not os.listdir(tmp_path)  # nothing written, no --traces folder made


@pytest.mark.parametrize("kill", [lambda pid: os.killpg(pid, signal.SIGINT),
                                  lambda pid: os.kill(pid, signal.SIGTERM)],
                         ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_exits_130(tmp_path, kill):
    started = tmp_path / "started"  # the action's first call leaves it: the search is on
    path = draws(tmp_path, f"open({str(started)!r}, 'a').close() or "
                 "__import__('time').sleep(0.01) or rng.randint(0, 63) + rng.randint(0, 63)")
    process = subprocess.Popen(
        [sys.executable, "-m", "cpl_cli", "verify", str(path), "--no-detectors"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 30  # a loaded machine starts Python slowly
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the search never started"
        time.sleep(0.2)  # into the action's outcomes
        kill(process.pid)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130 and "Traceback" not in err, err
    assert "interrupted" in err and out == ""


@pytest.mark.parametrize("bound, says", [
    ({"max_runs": 0}, "max_runs must be at least 1, not 0"),
    ({"max_steps": -1}, "max_steps must be at least 1, not -1"),
    ({"workers": 0}, "workers must be at least 1, not 0"),
    ({"time_limit": 0}, "time_limit must be a number of seconds above 0, not 0"),
    ({"time_limit": float("nan")}, "not nan"),
])
def test_the_library_refuses_a_bound_no_search_can_have(bound, says):
    import choreo
    with pytest.raises(ValueError, match=says):
        choreo.verify(choreo.load_one(RELAY), **bound)


def test_a_detector_that_raises_leaves_its_mscs_unchecked_never_complete(capsys, tmp_path):
    detector = write(tmp_path, "def broken(trace):\n    raise RuntimeError('a bug')\n",
                     "mine.py")
    code, out, _ = cpl(capsys, RELAY, "--no-detectors", "--detect", f"{detector}:broken")
    assert code == 1
    assert ": bounded (detector error): the detectors raised on 2 MSCs, the first at path" in out
    assert "  detectors: none finished: each raised (see statuses)" in out
    import choreo
    report = choreo.verify(choreo.load_one(RELAY),
                           detectors={"mine": lambda trace: 1 / 0})
    assert not report.complete and report.statuses == {"error": 2}


def test_sigterm_to_the_search_alone_ends_its_workers_too():
    """The parent's SIGTERM becomes its Ctrl-C (130), and it ends the workers with SIGTERM,
    which ends them whatever the parent made of it (they once caught it and went on)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "cpl_cli", "verify", str(ROOT / "examples" / "code_review.py"),
         "--arg", "rounds=2", "--workers", "2", "--no-detectors"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        children = started_workers(process.pid, 2, 60)
        time.sleep(0.5)  # into their subtrees
        os.kill(process.pid, signal.SIGTERM)  # the parent alone, as a service manager does
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130 and "interrupted" in err and out == "", err
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(pid) for pid in children)


def test_the_json_report_is_all_standard_output_has_whatever_user_code_prints(tmp_path):
    path = draws(tmp_path, "print('drawing') or rng.randint(0, 2)")
    path.write_text("print('loading')\n" + path.read_text())
    for workers in ("1", "2"):
        ran = subprocess.run([sys.executable, "-m", "cpl_cli", "verify", str(path),
                              "--no-detectors", "--format", "json", "--workers", workers],
                             capture_output=True, text=True, timeout=120)
        assert ran.returncode == 0 and json.loads(ran.stdout)["mscs"] == 3, ran.stderr
        assert "loading" in ran.stderr and "drawing" in ran.stderr
