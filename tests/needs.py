"""What some tests need that ``pip install -e '.[test]'`` does not bring, in one place.

graphviz's ``dot`` (PNG and PDF) and Chromium (the HTML viewer in a browser) are
programs a fresh machine lacks: a test that needs one skips outside CI, saying what is
missing and how to install it; CI installs both, and there a skip fails the run
(``nothing_skipped``).  ``without_dot`` is a child's environment as on a machine
without graphviz, its ``python`` still this one (a venv's too).

``NEWCOMER_FILES`` are the test files whose outcome depends on the machine beyond pip:
on graphviz, on Chromium, on Ray's temp folder (``/tmp/ray``).  ``.ci/run`` runs them a
second time as a newcomer would (``.ci/newcomer``: no ``dot`` or Chromium on PATH, ``CI``
unset, a fresh empty TMPDIR); ``tests/test_ci_skips.py`` checks that the list names every
such file.  ``python tests/needs.py`` prints it for ``.ci/run``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
DOT = shutil.which("dot")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

needs_dot = pytest.mark.skipif(
    DOT is None,
    reason="PNG/PDF need graphviz's dot (.ci/run installs it: apt-get install graphviz)")

NEWCOMER_FILES = {  # file -> what it needs that a fresh machine may lack
    "test_hostile_names.py": "dot",
    "test_view_cli.py": "dot",
    "test_view_render.py": "dot",
    "test_view_values.py": "dot",
    "test_view_html.py": "chromium",
    "test_runtime_ray.py": "ray",
    "test_runtime_ray_leftovers.py": "ray",
    "test_bench_smoke.py": "ray",
}


def without_dot(folder: Path) -> dict:
    """This process's environment with ``PATH`` holding only ``folder``, made here with a
    ``python`` that runs this interpreter: a machine without graphviz (a link to
    ``sys.executable`` would not do: a venv's python run through a link elsewhere finds no
    ``pyvenv.cfg`` beside it and loses the venv)."""
    folder.mkdir(exist_ok=True)
    python = folder / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    return {**os.environ, "PATH": str(folder)}


if __name__ == "__main__":
    print(" ".join(f"tests/{name}" for name in NEWCOMER_FILES))
