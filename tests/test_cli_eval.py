"""`cpl eval` as trace.md and cli.md say: formats, engines, lifeline filter, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FIG2 = "examples/traces/fig2.json"
GUARD = "@TestRunner(status != failed S status == passed)"


def cpl(*args):
    return subprocess.run([sys.executable, "-m", "cpl_cli", *args], capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("engine", ["monitor", "reference"])
def test_jsonl_prints_one_object_per_event_and_nothing_else(engine):
    result = cpl("eval", FIG2, GUARD, "--format", "jsonl", "--engine", engine)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["event"] for row in rows] == ["t1", "t2", "t3", "t4", "c1", "o1", "c2", "c3"]
    assert all(set(row) == {"event", "lifeline", "value"} for row in rows)
    assert rows[-1] == {"event": "c3", "lifeline": "Committer", "value": True}


def test_engines_agree_and_lifeline_filter_keeps_only_its_events():
    outputs = [cpl("eval", FIG2, GUARD, "--format", "jsonl", "--lifeline", "Committer",
                   "--engine", engine).stdout for engine in ("monitor", "reference")]
    assert outputs[0] == outputs[1]
    assert [json.loads(line)["event"] for line in outputs[0].splitlines()] == ["c1", "c2", "c3"]


def test_text_format_is_for_people():
    result = cpl("eval", FIG2, GUARD)
    assert result.returncode == 0
    assert "c3" in result.stdout and "(recorded true)" in result.stdout


def test_bad_guard_exits_2_with_a_caret():
    result = cpl("eval", FIG2, "@TestRunner(status ==")
    assert result.returncode == 2 and "^" in result.stderr and result.stdout == ""


def test_unknown_lifeline_in_guard_exits_2_with_suggestion():
    result = cpl("eval", FIG2, "@TestRuner(status == passed)")
    assert result.returncode == 2 and "did you mean 'TestRunner'" in result.stderr


def _trace(events, lifelines=("A", "B")):
    return {"format": "cpl-msc/1", "lifelines": list(lifelines), "events": events}


SEND = {"id": "s", "lifeline": "A", "kind": "send", "to": "B", "msg": "m"}
MALFORMED = {
    "receive before send": (_trace([{"id": "r", "lifeline": "B", "kind": "recv", "msg": "m"},
                                    SEND]), "'r'"),
    "unknown message": (_trace([{"id": "r", "lifeline": "B", "kind": "recv", "msg": "zz"}]), "'r'"),
    "wrong lifeline": (_trace([SEND, {"id": "r", "lifeline": "A", "kind": "recv", "msg": "m"}]),
                       "'r'"),
    "duplicate id": (_trace([SEND, {"id": "s", "lifeline": "B", "kind": "act"}]), "'s'"),
    "set on a send": (_trace([dict(SEND, set={"x": 1})]), "'s'"),
    "unknown lifeline": (_trace([{"id": "q", "lifeline": "Q", "kind": "act"}]), "'q'"),
    "unknown kind": (_trace([{"id": "k", "lifeline": "A", "kind": "jump"}]), "'k'"),
}


@pytest.mark.parametrize("problem", sorted(MALFORMED))
def test_malformed_traces_exit_1_naming_the_event(tmp_path, problem):
    document, event_name = MALFORMED[problem]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(document))
    result = cpl("eval", str(path), "true", "--format", "jsonl")
    assert result.returncode == 1, result.stderr
    assert event_name in result.stderr and result.stdout == ""
    assert "Traceback" not in result.stderr


def test_not_json_exits_1(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("{ this is not json")
    result = cpl("eval", str(path), "true")
    assert result.returncode == 1 and "Traceback" not in result.stderr and result.stderr


def test_msgpack_trace_is_read(tmp_path):
    from cpl.trace import dump_trace, load_trace
    dump_trace(load_trace(FIG2), tmp_path / "t.msgpack")
    result = cpl("eval", str(tmp_path / "t.msgpack"), GUARD, "--format", "jsonl")
    assert result.returncode == 0 and result.stdout == cpl("eval", FIG2, GUARD, "--format",
                                                            "jsonl").stdout


def test_recorded_note_only_at_choices_that_recorded_this_guard():
    same = cpl("eval", FIG2, "@TestRunner(status != failed  S  status == passed)")
    assert "(recorded true)" in same.stdout  # the same guard, written differently
    other = cpl("eval", FIG2, "@TestRunner(status == passed)")
    assert other.returncode == 0 and "recorded" not in other.stdout


@pytest.mark.parametrize("engine", ["monitor", "reference"])
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_without_a_guard_every_recorded_decision_is_rechecked(tmp_path, engine, suffix):
    trace = tmp_path / f"run{suffix}"
    run = cpl("run", "examples/code_review.py", "--sim", "--seed", "3", "--arg", "rounds=4",
              "--trace", str(trace))
    assert run.returncode == 0, run.stderr
    result = cpl("eval", str(trace), "--engine", engine)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "9 decisions re-checked: all agree"  # 5 loop tests, 4 merges
    assert all(line.endswith("agrees") for line in lines[:-1])


def test_a_recorded_outcome_that_the_semantics_contradicts_is_exit_1(tmp_path):
    document = json.loads(open(FIG2, encoding="utf-8").read())
    document["events"][-1]["outcome"] = False  # c3's guard holds: recording false is a lie
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(document))
    result = cpl("eval", str(forged), "--format", "jsonl")
    assert result.returncode == 1
    assert json.loads(result.stdout) == {"event": "c3", "lifeline": "Committer",
                                         "recorded": False, "value": True}
