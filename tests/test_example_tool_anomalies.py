"""The examples ``examples/anomalies/phantom_tool.py`` (A2) and
``examples/anomalies/causal_cascade.py`` (A3).

What each must show: both choreographies validate; over 200 explored runs
the unguarded one shows its anomaly in some runs and the guarded one in none, with no
failed run and commits made by both; the guarded one runs over ZeroMQ and every decision
of its trace re-checks.  The runs and numbers the docstrings show are the real ones.
"""

from __future__ import annotations

import ast
import functools
import json
import shlex

import pytest

from choreo_util import cpl
from cpl.anomalies import detect
from cpl.trace import load_trace
from runtime_util import EXAMPLES, check_semantics, run_cpl

ANOMALIES = EXAMPLES / "anomalies"
CASES = {"phantom_tool": "phantom_tool", "causal_cascade": "causal_cascade"}  # file: detector
SEEDS = {"phantom_tool": 1, "causal_cascade": 4}  # the seed each docstring shows
NAMES = ("unguarded", "guarded")


def _path(example: str) -> str:
    return str(ANOMALIES / f"{example}.py")


def _docstring(example: str) -> str:
    return ast.get_docstring(ast.parse((ANOMALIES / f"{example}.py").read_text()))


def _flat(text: str) -> str:
    return " ".join(text.split())


@functools.cache
def _explore(example: str, name: str) -> dict:
    """The json of `cpl explore FILE --name NAME --runs 200`."""
    result = cpl("explore", _path(example), "--name", name, "--runs", "200", "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(params=sorted(CASES))
def explored(request) -> tuple[str, dict]:
    """example -> {name: its explored table}."""
    return request.param, {name: _explore(request.param, name) for name in NAMES}


@pytest.mark.parametrize("example", sorted(CASES))
@pytest.mark.parametrize("name", NAMES)
def test_both_choreographies_validate(example, name):
    result = cpl("validate", _path(example), "--name", name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"{name}: valid"), result.stdout


@pytest.mark.parametrize("example", sorted(CASES))
def test_the_twins_differ_only_in_guards(example):
    """Same statements, same decisions in the same places: only guard texts differ."""
    shown = {}
    for name in NAMES:
        result = cpl("show", _path(example), "--name", name)
        assert result.returncode == 0, result.stderr
        shown[name] = result.stdout.splitlines()
    unguarded, guarded = shown["unguarded"], shown["guarded"]
    assert len(unguarded) == len(guarded)
    differ = [(u, g) for u, g in zip(unguarded, guarded) if u != g]
    assert differ, "the twins are identical"
    for u, g in differ:
        assert "by guard" in u and "by guard" in g, (u, g)
        assert u.split(" by guard ")[0] == g.split(" by guard ")[0], (u, g)


def test_unguarded_shows_the_anomaly_and_guarded_never_while_work_gets_done(explored):
    example, found = explored
    detector = CASES[example]
    unguarded, guarded = found["unguarded"], found["guarded"]
    assert unguarded["anomalies"][detector] > 200 * 0.3, unguarded
    assert guarded["anomalies"][detector] == 0, guarded
    for name, table in found.items():
        assert table["runs"] == 200 and table["failed"] == 0, (name, table)
        assert table["statuses"] == {"ok": 200}, (name, table)
        assert table["work"]["commits"] > 0, (name, table)
        assert sum(table["anomalies"].values()) == table["anomalies"][detector], \
            (name, table)  # no other detector fires on these examples


def test_phantom_tool_guarded_prevents_by_re_planning_not_by_doing_nothing():
    unguarded, guarded = (_explore("phantom_tool", name) for name in NAMES)
    assert guarded["work"]["commits"] == unguarded["work"]["commits"] == 200  # a call each run
    # every removal in the window is a rejection and a re-plan, and re-signings too
    assert guarded["work"]["retries"] > unguarded["anomalies"]["phantom_tool"]
    assert guarded["decisions"]["accept dispatch?"]["false"] == guarded["work"]["retries"]
    assert unguarded["work"]["retries"] == guarded["work"]["aborts"] == 0


def test_causal_cascade_guarded_cascades_or_rejects_every_dependent_of_a_retraction():
    unguarded, guarded = (_explore("causal_cascade", name) for name in NAMES)
    assert unguarded["decisions"]["cascade to j1?"].get("true", 0) == 0  # never cascades
    retracted = guarded["decisions"]["retract p1?"]["true"]
    cascades = guarded["decisions"]["cascade to j1?"]["true"]
    rejected = guarded["decisions"]["commit j1?"]["false"]
    assert cascades > 0 and rejected > 0
    assert guarded["work"]["aborts"] == cascades + rejected <= retracted
    assert guarded["work"]["commits"] + guarded["work"]["aborts"] == 200
    # the e-mail goes out exactly for the results that were kept
    assert guarded["decisions"]["send e-mail?"]["true"] == guarded["work"]["commits"]


def test_the_docstring_shows_the_measured_numbers(explored):
    example, found = explored
    text = _flat(_docstring(example))
    unguarded, guarded = found["unguarded"], found["guarded"]
    fired = unguarded["anomalies"][CASES[example]]
    assert f"in {fired} runs ({100 * fired / 200:.1f} %)" in text
    work = guarded["work"]
    assert f"``commits`` {work['commits']}" in text
    if example == "phantom_tool":
        assert f"``retries`` {work['retries']}, ``aborts`` {work['aborts']}" in text
    else:
        assert f"``aborts`` {work['aborts']}, ``retries`` {work['retries']}" in text
        decisions = guarded["decisions"]
        assert f"retracts p1 in {decisions['retract p1?']['true']}" in text
        assert f"{decisions['cascade to j1?']['true']} cascades and " \
               f"{decisions['commit j1?']['false']} rejections" in text


@pytest.mark.parametrize("example", sorted(CASES))
def test_the_docstring_shows_real_runs(example, tmp_path):
    """Every `$ cpl run ... --sim` the docstring shows prints what it shows, its trace
    re-checks, and the detector says what the docstring says."""
    doc = _docstring(example)
    seed = SEEDS[example]
    traces = {}
    for name in NAMES:
        trace_path = tmp_path / f"{name[0]}{seed}.json"
        command = (f"$ cpl run examples/anomalies/{example}.py --name {name} --sim "
                   f"--seed {seed} --trace {trace_path.name}")
        assert command in doc
        result = cpl("run", _path(example), "--name", name, "--sim", "--seed", seed,
                     "--trace", trace_path)
        assert result.returncode == 0, result.stderr
        shown = doc.split(command + "\n", 1)[1]
        for line in result.stdout.splitlines():
            assert shown.startswith(f"    {line}\n"), line
            shown = shown[len(line) + 5:]
        evaluated = cpl("eval", trace_path)
        assert evaluated.returncode == 0, evaluated.stdout + evaluated.stderr
        last = evaluated.stdout.splitlines()[-1]
        assert last.endswith("all agree")
        if name == "guarded":  # the docstring shows the guarded run's re-check
            assert f"    {last}\n" in doc
        traces[name] = detect(load_trace(trace_path))[CASES[example]]
    assert traces["guarded"] == [] and traces["unguarded"]
    assert f"    {[traces['unguarded'], traces['guarded']]!r}" in doc
    if example == "causal_cascade":  # the whole `cpl eval` output is shown
        evaluated = cpl("eval", tmp_path / f"g{seed}.json").stdout
        assert "".join(f"    {line}\n" for line in evaluated.splitlines()) in doc


@pytest.mark.parametrize("example", sorted(CASES))
def test_the_docstring_commands_name_this_file(example):
    for line in _docstring(example).splitlines():
        command = line.strip().lstrip("$ ")
        if not command.startswith("cpl "):
            continue
        words = shlex.split(command.split("#")[0])
        if words[1] != "eval":
            assert words[2] == f"examples/anomalies/{example}.py", line


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
    assert "commits = " in out and "retries = " in out
