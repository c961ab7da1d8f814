"""A trace has at most MOST_LIFELINES lifelines, refused early by every command.

Before, a 10.9 MB trace listing 1,000,002 lifelines cost `cpl export` 103 s and
4.8 GB, `cpl render` 37 s and 2.9 GB, `cpl eval` 13.4 s and 2.0 GB.  Here the same
trace (and its stream form, an agent's log and a parts folder with as many) goes
to every command that reads traces, each in a process of its own whose wall time
and peak memory (``os.wait4``) are measured: each refuses it by name, exit 1,
within 10 s and 512 MiB.  A trace with exactly the cap still evaluates.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cpl.trace import LIVE_FORMAT, MOST_LIFELINES, TraceWriter
from cpl.errors import TraceError

ROOT = Path(__file__).resolve().parent.parent
HUGE = 1_000_002
EVENTS = [{"id": "a", "lifeline": "L0", "kind": "act", "set": {"x": 1}},
          {"id": "s", "lifeline": "L0", "kind": "send", "to": "L1", "msg": "m"},
          {"id": "r", "lifeline": "L1", "kind": "recv", "msg": "m"},
          {"id": "c", "lifeline": "L1", "kind": "choice", "guard": "@L0.x == 1",
           "outcome": True}]
SAYS = f'"lifelines" lists {HUGE:,} names; a trace has at most {MOST_LIFELINES:,} lifelines'


def _names(count: int) -> list[str]:
    return [f"L{i}" for i in range(count)]


@pytest.fixture(scope="module")
def huge(tmp_path_factory) -> Path:
    """The campaign's trace (10.9 MB), as a document and as a stream, and the two inputs of
    `cpl merge` that name as many lifelines: an agent's log and a run's parts folder."""
    folder = tmp_path_factory.mktemp("huge")
    names = _names(HUGE)
    (folder / "t.json").write_text(json.dumps({"format": "cpl-msc/1", "lifelines": names,
                                               "events": EVENTS}))
    with open(folder / "t.jsonl", "w", encoding="utf-8") as out:
        out.write(json.dumps({"format": "cpl-msc/1", "lifelines": names}) + "\n")
        out.writelines(json.dumps(event) + "\n" for event in EVENTS)
        out.write('{"end": {"status": "ok"}}\n')
    (folder / "agent.jsonl").write_text(json.dumps(
        {"format": LIVE_FORMAT, "lifeline": "L0", "system": "s", "lifelines": names,
         "vars": [], "init": {}}) + "\n")
    (folder / "t.parts").mkdir()
    (folder / "t.parts" / "run.json").write_text(json.dumps(
        {"format": "cpl-parts/1", "header": {"lifelines": names}, "meta": {}}))
    assert 10_000_000 < (folder / "t.json").stat().st_size < 12_000_000
    return folder


def _measured(argv: list[str], cwd: Path) -> tuple[int, str, float, int]:
    """(exit status, standard error, wall seconds, peak resident bytes) of `cpl argv`."""
    errors = cwd / "stderr.txt"
    started = time.monotonic()
    with open(errors, "w", encoding="utf-8") as sink:
        process = subprocess.Popen([sys.executable, "-m", "cpl_cli", *argv], cwd=cwd,
                                   stdout=subprocess.DEVNULL, stderr=sink)
    while True:  # wait4: this child's own peak memory, not the largest child's so far
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > 60:
            process.kill()
            process.wait()
            pytest.fail(f"cpl {' '.join(argv)} still ran after 60 s")
        time.sleep(0.01)
    wall = time.monotonic() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    peak = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return process.returncode, errors.read_text(encoding="utf-8"), wall, peak


@pytest.mark.parametrize("argv", [
    ["eval", "t.json"], ["eval", "t.jsonl"], ["eval", "t.json", "@L0.x == 1"],
    ["render", "t.json", "-o", "t.svg"], ["render", "t.jsonl", "-o", "t.html"],
    ["explain", "t.json", "c"], ["detect", "t.json"], ["detect", "t.jsonl"],
    ["export", "t.json", "--otlp", "t.otlp.json"], ["export", "t.jsonl", "--otlp", "-"],
    ["merge", "agent.jsonl", "-o", "merged.jsonl"], ["merge", "t.parts", "-o", "merged.jsonl"],
])
def test_every_command_refuses_a_million_lifelines_in_time_and_memory(huge, argv):
    if argv[0] == "export":
        pytest.importorskip("opentelemetry.sdk", reason="the otel extra: pip install -e '.[otel]'")
    code, errors, wall, peak = _measured(argv, huge)
    assert code == 1 and SAYS in errors and "Traceback" not in errors, errors
    assert wall <= 10, wall
    assert peak <= 512 * 2**20, peak
    assert not (huge / "t.svg").exists() and not (huge / "merged.jsonl").exists()


def test_a_trace_with_as_many_lifelines_as_the_cap_still_evaluates(tmp_path):
    path = tmp_path / "cap.json"
    path.write_text(json.dumps({"format": "cpl-msc/1", "lifelines": _names(MOST_LIFELINES),
                                "events": EVENTS}))
    result = subprocess.run([sys.executable, "-m", "cpl_cli", "eval", str(path)],
                            capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "1 decision re-checked: all agree" in result.stdout
    from cpl.trace.files import loads_trace
    with pytest.raises(TraceError, match=f"at most {MOST_LIFELINES:,} lifelines"):
        loads_trace(json.dumps({"format": "cpl-msc/1", "lifelines": _names(MOST_LIFELINES + 1),
                                "events": []}))


def test_no_writer_makes_a_trace_no_reader_takes(tmp_path):
    with pytest.raises(TraceError, match=f"at most {MOST_LIFELINES:,} lifelines"):
        TraceWriter.open(tmp_path / "t.jsonl", _names(MOST_LIFELINES + 1))
    assert not (tmp_path / "t.jsonl").exists()


def test_no_system_of_agents_has_more_lifelines_than_a_trace():
    from cpl.live import LiveError, System
    with pytest.raises(LiveError, match=f"at most {MOST_LIFELINES:,} lifelines"):
        System(_names(MOST_LIFELINES + 1), {}, [])
