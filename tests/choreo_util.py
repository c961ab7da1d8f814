"""Helpers for the choreography tests: write a CHOREO.py, find its marked line, run the CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

HEADER = "from choreo import Choreography\n"


def write(tmp_path: Path, body: str, name: str = "choreo_case.py") -> Path:
    """A CHOREO.py in ``tmp_path``: the DSL import, then ``body`` (dedented)."""
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
    return path


def marked(path: Path, marker: str = "# <-") -> int:
    """The 1-based line of the (only) line carrying ``marker``."""
    lines = [n for n, line in enumerate(path.read_text().splitlines(), 1) if marker in line]
    assert len(lines) == 1, f"expected one {marker!r} line, found {lines}"
    return lines[0]


def cpl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)
