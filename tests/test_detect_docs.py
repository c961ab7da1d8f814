"""What the docs show of ``--detect`` and ``cpl detect`` is what they print.

Every ``$ `` command block of the section "Your own bad outcomes" of
docs/anomalies.md, and of the ``cpl detect`` section of docs/cli.md, runs in a
scratch copy of ``examples/`` (as tests/test_readme.py runs the README's) and
must print the text under it; only a ``simulator:`` line (CPU times) is
compared up to its first ':'.  A block marked ``<!-- detect: FILE -->`` is
code quoted from FILE, verbatim.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_readme import blocks, commands, run_shell, scratch_folder

ROOT = Path(__file__).resolve().parent.parent


def _section(path: str, heading: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8")
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


SECTIONS = {"anomalies": _section("docs/anomalies.md", "## Your own bad outcomes"),
            "cli": _section("docs/cli.md", "## `cpl detect`")}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return scratch_folder(tmp_path_factory.mktemp("detect_docs"))


def _shown(line: str) -> str:
    return line.split(":")[0] if line.startswith("simulator:") else line.rstrip()


@pytest.mark.parametrize("name", SECTIONS)
def test_every_command_prints_what_the_doc_shows(scratch, name):
    ran = 0
    for info, directive, argument, body, line in blocks(SECTIONS[name]):
        for command, expected in commands(body):
            result = run_shell(command, scratch)
            got = [_shown(g) for g in result.stdout.rstrip("\n").splitlines()]
            assert got == [_shown(w) for w in expected], \
                f"{name}: `{command}` printed\n" + "\n".join(got)
            ran += 1
    assert ran >= 2


def test_quoted_code_is_the_files():
    quoted = re.findall(r"<!-- detect: (\S+) -->\n```\n(.*?)```", SECTIONS["anomalies"], re.S)
    assert quoted
    for path, code in quoted:
        assert code in (ROOT / path).read_text(encoding="utf-8"), path
