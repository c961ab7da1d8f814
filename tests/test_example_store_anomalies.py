"""The store anomalies' examples: ``examples/anomalies/stale_generation.py`` (A1) and
``examples/anomalies/lost_update.py`` (the deer-flow lost update).

What each must show: both choreographies validate; over 200 explored runs
the unguarded one shows its anomaly in some runs and the guarded one in none, with no
failed run and commits made by both; the guarded one runs over ZeroMQ and every decision
of its trace re-checks.  The outputs and numbers the docstrings show are the real ones.
"""

from __future__ import annotations

import ast
import json

import pytest

from choreo_util import cpl
from cpl.anomalies import detect
from cpl.trace import load_trace
from runtime_util import EXAMPLES, check_semantics, run_cpl

ANOMALIES = EXAMPLES / "anomalies"
CASES = {"stale_generation": "stale_generation", "lost_update": "lost_update"}  # file: detector
NAMES = ("unguarded", "guarded")


def _path(example: str) -> str:
    return str(ANOMALIES / f"{example}.py")


def _docstring(example: str) -> str:
    return ast.get_docstring(ast.parse((ANOMALIES / f"{example}.py").read_text()))


@pytest.fixture(scope="module", params=sorted(CASES))
def explored(request) -> tuple[str, dict]:
    """example -> {name: the json of `cpl explore --runs 200`}."""
    example = request.param
    found = {}
    for name in NAMES:
        result = cpl("explore", _path(example), "--name", name, "--runs", "200",
                     "--format", "json")
        assert result.returncode == 0, result.stderr
        found[name] = json.loads(result.stdout)
    return example, found


@pytest.mark.parametrize("example", sorted(CASES))
@pytest.mark.parametrize("name", NAMES)
def test_both_choreographies_validate(example, name):
    result = cpl("validate", _path(example), "--name", name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"{name}: valid"), result.stdout


def test_unguarded_shows_the_anomaly_and_guarded_never_while_work_gets_done(explored):
    example, found = explored
    detector = CASES[example]
    unguarded, guarded = found["unguarded"], found["guarded"]
    assert unguarded["anomalies"][detector] > 0, unguarded
    assert guarded["anomalies"][detector] == 0, guarded
    for name, table in found.items():
        assert table["runs"] == 200 and table["failed"] == 0, (name, table)
        assert table["statuses"] == {"ok": 200}, (name, table)
        assert table["work"]["commits"] > 0, (name, table)
        assert sum(table["anomalies"].values()) == table["anomalies"][detector], \
            (name, table)  # no other detector fires on these examples
    # the guarded twin prevents by rejecting and retrying, not by doing nothing
    assert guarded["work"]["commits"] == unguarded["work"]["commits"]
    assert guarded["work"]["aborts"] > 0 and guarded["work"]["retries"] > 0
    assert unguarded["work"]["aborts"] == unguarded["work"]["retries"] == 0


def test_the_docstring_shows_the_measured_numbers(explored):
    example, found = explored
    text = " ".join(_docstring(example).split())
    unguarded, guarded = found["unguarded"], found["guarded"]
    fired = unguarded["anomalies"][CASES[example]]
    assert f"fires in {fired} runs ({100 * fired / 200:.1f}%)" in text
    assert f"{unguarded['work']['commits']} commits, 0 aborts, 0 retries" in text
    assert f"{guarded['work']['commits']} commits, with {guarded['work']['aborts']} rejected" \
        in text
    assert f"and {guarded['work']['retries']} retries" in text


@pytest.mark.parametrize("example", sorted(CASES))
def test_the_docstring_shows_seed_8s_real_runs(example, tmp_path):
    doc = _docstring(example)
    detector = CASES[example]
    for name in NAMES:
        trace_path = tmp_path / f"{name}.json"
        result = cpl("run", _path(example), "--name", name, "--sim", "--seed", "8",
                     "--trace", trace_path)
        assert result.returncode == 0, result.stderr
        for line in result.stdout.splitlines():
            assert f"    {line}\n" in doc, line
        assert cpl("eval", trace_path).returncode == 0
        witnesses = detect(load_trace(trace_path))[detector]
        if name == "guarded":
            assert witnesses == []
        else:
            assert witnesses and repr(witnesses) in " ".join(doc.split())


@pytest.mark.parametrize("example", sorted(CASES))
def test_guarded_runs_over_zeromq_and_every_decision_rechecks(example, tmp_path):
    trace_path = tmp_path / f"{example}.jsonl"
    code, out, err, _ = run_cpl(tmp_path, "run", _path(example), "--name", "guarded",
                                "--timeout", "60", "--trace", str(trace_path), timeout=90)
    assert code == 0, err
    trace = load_trace(trace_path)
    assert trace.meta["status"] == "ok" and trace.meta["processes"] is True, trace.meta
    assert check_semantics(trace) > 0
    result = cpl("eval", trace_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("all agree"), result.stdout
    assert detect(trace)[CASES[example]] == []
    assert "commits = 1" in out
