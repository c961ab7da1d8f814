"""``cpl check GUARD --monitor LIFELINE``: the generated monitor, printed for reading."""

from __future__ import annotations

import json
import subprocess
import sys

GUARD = "@TestRunner(status != failed S status == passed) && @TestRunner.candidate == candidate"


def cpl(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpl_cli", *args], capture_output=True,
                          text=True, timeout=60)


def test_prints_the_owner_monitor_as_python_that_compiles():
    result = cpl("check", GUARD, "--monitor", "Committer")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "def monitor(init):" in out and "def receive(message, updates=None):" in out
    assert "# lifeline 1: 'Committer'" in out.replace("#   ", "# ")
    assert "the guard is slot v" in out
    compile(out, "<printed>", "exec")


def test_another_lifeline_shows_what_it_ships_for_the_owner():
    result = cpl("check", GUARD, "--monitor", "TestRunner", "--owner", "Committer")
    assert result.returncode == 0, result.stderr
    assert "v0 S v1" in result.stdout  # the S it evaluates for the owner
    assert "varviews[0] = (store.get('candidate', U), )" in result.stdout


def test_schema_lifelines_are_the_choice(tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"lifelines": ["Orchestrator", "TestRunner", "Committer"]}))
    result = cpl("check", "P x", "--monitor", "Orchestrator", "--owner", "Committer",
                 "--schema", str(schema))
    assert result.returncode == 0, result.stderr
    assert "vc = [0] * 3" in result.stdout


def test_unknown_lifelines_exit_2_with_a_suggestion(tmp_path):
    result = cpl("check", GUARD, "--monitor", "TestRuner")
    assert result.returncode == 2 and not result.stdout
    assert "unknown lifeline 'TestRuner'; did you mean 'TestRunner'?" in result.stderr
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"lifelines": ["TestRunner", "Committer"]}))
    result = cpl("check", GUARD, "--monitor", "Comitter", "--schema", str(schema))
    assert result.returncode == 2 and "did you mean 'Committer'?" in result.stderr
    assert "Traceback" not in result.stderr


def test_monitor_does_not_combine_with_json_and_owner_needs_monitor():
    assert cpl("check", GUARD, "--monitor", "Committer", "--format", "json").returncode == 2
    result = cpl("check", GUARD, "--owner", "Committer")
    assert result.returncode == 2 and "--owner goes with --monitor" in result.stderr


def test_a_guard_naming_no_lifeline_belongs_to_the_monitor_lifeline():
    result = cpl("check", "x == 1 && Y x == 1", "--monitor", "Solo")
    assert result.returncode == 0, result.stderr
    assert "vc = [0] * 0" in result.stdout and "(Solo)" in result.stdout
