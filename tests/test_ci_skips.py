"""CI skips nothing (``tests/nothing_skipped.py``): a real pytest, in a subprocess, on a
tiny suite with one skip — passing without ``CI``, failing with a line naming the skip and
its reason with ``CI=true``, under pytest-xdist too; and every skip of this suite says what
is missing and how to get it.  CI also runs the newcomer's path (``.ci/newcomer``): the
files ``tests/needs.py`` lists — every file whose tests need dot, Chromium or Ray — with
dot and Chromium hidden, ``CI`` unset and a fresh TMPDIR, where a skip passes and a
failure fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from needs import NEWCOMER_FILES

TESTS = Path(__file__).resolve().parent
NEWCOMER = TESTS.parent / ".ci" / "newcomer"
TINY = '''
import pytest

def test_runs():
    pass

@pytest.mark.skip(reason="the widget is missing (apt-get install widget)")
def test_needs_a_widget():
    pass
'''


def tiny_run(tmp_path, ci: str | None, *extra: str, body: str = TINY, via: tuple = (),
             env: dict | None = None):
    """pytest on a tiny suite; ``via`` a command that runs it (``.ci/newcomer``)."""
    (tmp_path / "test_tiny.py").write_text(body)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not this project's configuration
    env = {k: v for k, v in (env or os.environ).items() if k not in ("CI", "PYTEST_ADDOPTS")}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")])
    # only the plugins named here: the installed ones (langsmith's, hypothesis') cost each
    # pytest process seconds to import on a busy machine, and none matters to a tiny suite
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run([*via, sys.executable, "-m", "pytest", "-p", "xdist",
                           "-p", "nothing_skipped", "-p", "no:cacheprovider", "-q", "-rs",
                           *extra, "test_tiny.py"],
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
    for path in sorted(TESTS.glob("*.py")):  # the helpers' too (needs.py)
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"(importorskip|pytest\.skip|skipif)\((.*?)\)\n", text, re.S):
            found.append((path.name, match.group(2)))
    assert found, "no skip found: the pattern is wrong"
    for name, call in found:
        if "sys.platform" in call:  # not something one installs
            continue
        assert re.search(r"pip install|apt-get install|\.ci/run|unavailable\(\)", call), \
            (name, call)


# ------------------------------------------------------------------ the newcomer's path

SIGNS = {  # what shows that a test file needs graphviz's dot, Chromium or Ray
    "dot": r"needs_dot|without_dot|which\(\"dot\"\)|import graphviz|[\"'](?:png|pdf)[\"']"
           r"|\.(?:png|pdf)\b",
    "chromium": r"(?i)chromium",
    "ray": r"find_spec\(\"ray\"\)|^\s*import ray(?:_launcher)?\b|\"--launcher\", \"ray\"",
}


def needed(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return {need for need, sign in SIGNS.items() if re.search(sign, text, re.M)}


def test_the_newcomer_files_are_every_file_that_needs_dot_chromium_or_ray():
    found = {path.name: needed(path) for path in sorted(TESTS.glob("test_*.py"))
             if path.name != Path(__file__).name and needed(path)}
    assert {"dot", "chromium", "ray"} <= set().union(*found.values()), "a sign is wrong"
    assert sorted(found) == sorted(NEWCOMER_FILES), "tests/needs.py's NEWCOMER_FILES"
    for name, need in NEWCOMER_FILES.items():
        assert need in found[name], (name, need, found[name])


def newcomer_env(tmp_path) -> dict:
    """This machine with a dot, a chromium (and a program beside them) first on PATH, CI
    set, and a temp folder that is not empty: all that ``.ci/newcomer`` must take away."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name in ("dot", "chromium", "chromium-browser", "helper"):
        (folder / name).write_text(f"#!/bin/sh\necho {name}\n")
        (folder / name).chmod(0o755)
    temp = tmp_path / "temp"
    temp.mkdir()
    (temp / "ray").mkdir()
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "CI": "true",
            "TMPDIR": str(temp), "RAY_TMPDIR": str(temp)}


def test_the_newcomer_has_no_dot_no_chromium_no_ci_and_a_fresh_temp_folder(tmp_path):
    env = newcomer_env(tmp_path)
    assert shutil.which("dot", path=env["PATH"]) == str(tmp_path / "bin" / "dot")
    probe = ("import json, os, shutil, sys, tempfile; print(json.dumps({"
             "'found': [shutil.which(n) for n in ('dot', 'chromium', 'chromium-browser')], "
             "'helper': os.path.realpath(shutil.which('helper')), 'ci': os.environ.get('CI'), "
             "'ray': os.environ.get('RAY_TMPDIR'), 'temp': tempfile.gettempdir(), "
             "'in temp': os.listdir(tempfile.gettempdir()), 'prefix': sys.prefix}))")
    result = subprocess.run([str(NEWCOMER), sys.executable, "-c", probe], env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["found"] == [None, None, None] and seen["ci"] is None and seen["ray"] is None
    assert seen["helper"] == str(tmp_path / "bin" / "helper")  # the rest of dot's folder
    assert seen["temp"] != env["TMPDIR"] and seen["in temp"] == []
    assert not os.path.exists(seen["temp"]), "the fresh temp folder is removed"
    assert seen["prefix"] == sys.prefix  # a venv's python keeps its venv


def test_the_newcomer_path_passes_a_skip_and_fails_a_failure(tmp_path):
    env = newcomer_env(tmp_path)
    via = (str(NEWCOMER),)
    passed = tiny_run(tmp_path, "true", via=via, env=env)  # CI=true is taken away
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed, 1 skipped" in passed.stdout
    needs_dot = "import shutil\n\ndef test_needs_no_dot():\n    assert shutil.which('dot')\n"
    failed = tiny_run(tmp_path, None, via=via, env=env, body=needs_dot)
    assert failed.returncode == 1 and "1 failed" in failed.stdout, failed.stdout
    errors = tiny_run(tmp_path, None, via=via, env=env,
                      body="import pytest\n\n@pytest.fixture\ndef f():\n    raise OSError\n\n"
                           "def test_x(f):\n    pass\n")
    assert errors.returncode == 1 and "1 error" in errors.stdout, errors.stdout


def test_a_group_runs_on_one_worker(tmp_path):
    """``--dist loadgroup`` (the README's command) keeps an ``xdist_group`` on one worker:
    ``xdist_groups`` where pytest-xdist's own grouping no longer takes (pytest ≥ 9.2)."""
    body = ("import os, pytest\n\n"
            "@pytest.mark.xdist_group('timing')\n"
            "@pytest.mark.parametrize('i', range(8))\n"
            "def test_grouped(i):\n"
            "    print('WORKER', os.environ['PYTEST_XDIST_WORKER'])\n\n"
            "@pytest.mark.parametrize('i', range(8))\n"
            "def test_free(i):\n"
            "    print('FREE', os.environ['PYTEST_XDIST_WORKER'])\n")
    result = tiny_run(tmp_path, None, "-p", "xdist_groups", "-n", "2", "--dist", "loadgroup",
                      "-rA", body=body)
    assert result.returncode == 0, result.stdout + result.stderr
    workers = re.findall(r"^WORKER (gw\d)$", result.stdout, re.M)
    assert len(workers) == 8 and len(set(workers)) == 1, result.stdout
    assert "test_grouped[0]@timing" in result.stdout
