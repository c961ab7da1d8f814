"""Helpers for the choreography tests: write a CHOREO.py, find its marked line, run the CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

HEADER = "from choreo import Choreography\n"
ROOT = Path(__file__).resolve().parent.parent


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
    return subprocess.run([sys.executable, "-m", "cpl_cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def killed_simulation(trace: Path, size: int) -> None:
    """A simulated flagship run streaming to ``trace`` (.jsonl), killed (SIGKILL) once the
    trace holds ``size`` bytes (or after 30 s): a trace that a kill cut off."""
    process = subprocess.Popen(
        [sys.executable, "-m", "cpl_cli", "run", str(ROOT / "examples" / "code_review.py"),
         "--sim", "--arg", "rounds=1000000", "--trace", str(trace)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while (not trace.exists() or trace.stat().st_size < size) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.kill()
    process.wait(timeout=10)


def children_of(pid: int) -> set[int]:
    """The processes ``pid``'s threads started."""
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.update(int(p) for p in (task / "children").read_text().split())
        except OSError:
            pass
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def started_workers(pid: int, wanted: int, seconds: float) -> set[int]:
    """``pid``'s children once there are ``wanted`` of them (asserted within ``seconds``)."""
    children, deadline = children_of(pid), time.monotonic() + seconds
    while len(children) < wanted and time.monotonic() < deadline:
        time.sleep(0.1)
        children = children_of(pid)
    assert len(children) >= wanted, "the workers never started"
    return children
