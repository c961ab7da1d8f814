"""CI skips nothing (``tests/nothing_skipped.py``): a real pytest, in a subprocess, on a
tiny suite with one skip — passing without ``CI``, failing with a line naming the skip and
its reason with ``CI=true``, under pytest-xdist too; and every skip of this suite says what
is missing and how to get it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
TINY = '''
import pytest

def test_runs():
    pass

@pytest.mark.skip(reason="the widget is missing (apt-get install widget)")
def test_needs_a_widget():
    pass
'''


def tiny_run(tmp_path, ci: str | None, *extra: str, body: str = TINY):
    (tmp_path / "test_tiny.py").write_text(body)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not this project's configuration
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "nothing_skipped",
                           "-p", "no:cacheprovider", "-q", "-rs", *extra, "test_tiny.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_a_skip_passes_outside_ci(tmp_path, ci):
    result = tiny_run(tmp_path, ci)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    assert "in CI" not in result.stdout


@pytest.mark.parametrize("extra", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_skip_fails_in_ci_and_is_named(tmp_path, extra):
    result = tiny_run(tmp_path, "true", *extra)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ("SKIPPED in CI: test_tiny.py::test_needs_a_widget: the widget is missing "
            "(apt-get install widget)") in result.stdout
    assert "1 test(s) skipped: the run fails" in result.stdout


def test_ci_without_skips_passes_and_a_failure_stays_a_failure(tmp_path):
    assert tiny_run(tmp_path, "true", body="def test_runs():\n    pass\n").returncode == 0
    failing = "def test_fails():\n    assert False\n"
    assert tiny_run(tmp_path, "true", body=failing).returncode == 1


def test_every_skip_says_what_is_missing_and_how_to_get_it():
    """A skip reason for something not installed names it and how to install it."""
    found = []
    for path in sorted(TESTS.glob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"(importorskip|pytest\.skip|skipif)\((.*?)\)\n", text, re.S):
            found.append((path.name, match.group(2)))
    assert found, "no skip found: the pattern is wrong"
    for name, call in found:
        if "sys.platform" in call:  # not something one installs
            continue
        assert re.search(r"pip install|apt-get install|\.ci/run|unavailable\(\)", call), \
            (name, call)
