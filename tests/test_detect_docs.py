"""What the docs show of ``--detect`` and ``cpl detect`` is what they print.

The ``$ `` command blocks of the section "Your own bad outcomes" of
docs/anomalies.md, and of the ``cpl detect`` section of docs/cli.md, run as every
document's do, in tests/test_readme.py (only a ``simulator:`` line, CPU times, is
compared up to its first ':').  Here: a block marked ``<!-- detect: FILE -->`` is
code quoted from FILE, verbatim.
"""

from __future__ import annotations

import re
from pathlib import Path

from test_readme import blocks

ROOT = Path(__file__).resolve().parent.parent


def _section(path: str, heading: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8")
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


SECTIONS = {"anomalies": _section("docs/anomalies.md", "## Your own bad outcomes"),
            "cli": _section("docs/cli.md", "## `cpl detect`")}


def test_the_sections_show_commands():
    for name, section in SECTIONS.items():
        shown = [line for info, _, _, body, _ in blocks(section) for line in body
                 if line.startswith("$ cpl ")]
        assert len(shown) >= 2, name


def test_quoted_code_is_the_files():
    quoted = re.findall(r"<!-- detect: (\S+) -->\n```\n(.*?)```", SECTIONS["anomalies"], re.S)
    assert quoted
    for path, code in quoted:
        assert code in (ROOT / path).read_text(encoding="utf-8"), path
