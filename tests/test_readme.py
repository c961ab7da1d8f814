"""Every code block README.md shows runs as shown.

The README is read as a script.  A fenced block of commands (lines starting
with ``$ ``) is run, in order, in one scratch folder holding a copy of
``examples/``, and what each command prints (stdout and stderr, as a terminal
shows them) must be the text under it.  A ``python`` block is run as a
program.  An HTML comment on the line before a block changes that:

    <!-- readme: file NAME -->   the python block is the file NAME (used by later commands)
    <!-- readme: shape -->       output that varies run to run (a real multi-process run):
                                 only each line's text up to its first ':' must match
    <!-- readme: skip -->        not run here (the Quick start's installs: CI runs those)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^( *)```(\w*)\s*$")
DIRECTIVE = re.compile(r"^\s*<!-- readme: (\w+)(?: (\S+))? -->\s*$")


def blocks(text: str):
    """(info, directive, argument, lines, line number) for every fenced block, in order."""
    lines = text.splitlines()
    found, index = [], 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if not opened:
            index += 1
            continue
        indent, info, start = len(opened.group(1)), opened.group(2), index
        previous = DIRECTIVE.match(lines[index - 1]) if index else None
        index += 1
        body = []
        while not FENCE.match(lines[index]):
            body.append(lines[index][indent:])
            index += 1
        found.append((info, previous.group(1) if previous else None,
                      previous.group(2) if previous else None, body, start + 1))
        index += 1
    return found


def commands(body):
    """(command, expected output lines) for each ``$ `` line of a console block."""
    steps = []
    for line in body:
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def scratch_folder(folder: Path) -> Path:
    """``folder`` with a copy of ``examples/`` and a ``.bin/cpl`` that runs this checkout's
    cpl, whatever is installed: where shown commands run (``run_shell``)."""
    shutil.copytree(ROOT / "examples", folder / "examples")
    shims = folder / ".bin"
    shims.mkdir()
    cpl = shims / "cpl"
    cpl.write_text(f"#!/bin/sh\nexec {sys.executable} -m runtime.cli \"$@\"\n")
    cpl.chmod(0o755)
    return folder


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return scratch_folder(tmp_path_factory.mktemp("readme"))


def run_shell(command: str, folder: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT),
               PATH=f"{folder / '.bin'}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["bash", "-c", "exec 2>&1\n" + command], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=180)


README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_has_runnable_blocks():
    kinds = [info for info, directive, *_ in blocks(README) if directive != "skip"]
    assert kinds.count("python") >= 2 and len(kinds) >= 8


def test_every_block_runs_as_shown(scratch):
    for info, directive, argument, body, line in blocks(README):
        where = f"README.md:{line}"
        if directive == "skip":
            continue
        if info == "python":
            source = "\n".join(body) + "\n"
            if directive == "file":
                (scratch / argument).write_text(source, encoding="utf-8")
                continue
            program = scratch / f"block_{line}.py"
            program.write_text(source, encoding="utf-8")
            result = run_shell(f"{sys.executable} {program.name}", scratch)
            assert result.returncode == 0, f"{where}: the block fails:\n{result.stdout}"
            continue
        for command, expected in commands(body):
            result = run_shell(command, scratch)
            got = [line.rstrip() for line in result.stdout.rstrip("\n").splitlines()]
            want = [line.rstrip() for line in expected]
            if directive == "shape":
                got, want = [g.split(":")[0] for g in got], [w.split(":")[0] for w in want]
            assert got == want, f"{where}: `{command}` printed\n" + "\n".join(got)
