"""`cpl render` and `cpl explain` read a stream keeping what they draw or explain.

Streamed output equals the output from the loaded trace, and the readers' peak memory
does not grow with the length of the trace.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cpl.semantics.recent as recent
from cpl.semantics import explain, explain_stream
from cpl.trace import Event, TraceWriter, load_trace, open_trace
from cpl.view import NoSuchEvent, render

ROOT = Path(__file__).resolve().parent.parent
GUARDS = [None, "H(n >= 0)", "O(status == ok)", "P(@B(status == late))",
          "@B(status != late S status == ok)", "Y(true) && @A.n >= 1"]


def _write(path: Path, rounds: int) -> None:
    """Two lifelines: A asks (an act, a send), B answers, A decides on what B said."""
    writer = TraceWriter.open(path, ["A", "B"], vars=["n", "status"],
                              symbols=["ok", "late"])
    with writer:
        for r in range(1, rounds + 1):
            status = "late" if r % 7 == 0 else "ok"
            for event in (Event(f"A.{r}.0", "A", "act", set={"n": r}),
                          Event(f"A.{r}.1", "A", "act", label="think"),
                          Event(f"A.{r}.2", "A", "send", to="B", msg=f"q{r}"),
                          Event(f"B.{r}.0", "B", "recv", msg=f"q{r}", set={"status": status}),
                          Event(f"B.{r}.1", "B", "send", to="A", msg=f"a{r}", label="answer"),
                          Event(f"A.{r}.3", "A", "recv", msg=f"a{r}"),
                          Event(f"A.{r}.4", "A", "choice",
                                guard="@B(status != late S status == ok)",
                                outcome=status == "ok")):
                writer.write(event)
        writer.write(Event("A.last", "A", "send", to="B", msg="never"))
        writer.close({"status": "ok"})


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("readers") / "small.jsonl"
    _write(path, 60)
    return path


def _without_trace_block(data: bytes) -> bytes:
    return re.sub(rb'<script type="application/json" id="cpl-trace">.*?</script>', b"", data,
                  flags=re.S)


@pytest.mark.parametrize("max_rows", [0, 12, 40, 150])
@pytest.mark.parametrize("highlight", [None, "A.3.4", "B.30.1", "A.last"])
def test_a_stream_draws_what_the_loaded_trace_draws(small, max_rows, highlight):
    trace = load_trace(small)
    for form in ("dot", "html"):
        loaded = render(trace, form, highlight, max_rows)
        streamed = render(open_trace(small), form, highlight, max_rows)
        assert streamed == loaded, (form, max_rows, highlight)
    assert render(open_trace(small), "shiviz") == render(trace, "shiviz")


def test_the_page_holds_the_drawn_window_and_says_what_it_left_out(small):
    page = render(open_trace(small), "html", max_rows=12).decode("utf-8")
    view = json.loads(re.search(r'id="cpl-view">(.*?)</script>', page, re.S).group(1))
    document = json.loads(re.search(r'id="cpl-trace">(.*?)</script>', page, re.S).group(1))
    total = len(load_trace(small).events)
    assert 0 < len(document["events"]) < total / 10  # the window, not the trace
    drawn = {item["id"] for item in view["events"]}
    assert drawn <= {event["id"] for event in document["events"]}
    assert any(f"of {total} are left out" in note for note in view["notes"])
    whole = render(load_trace(small), "html", max_rows=0).decode("utf-8")
    assert "left out" not in whole


def test_a_highlight_the_trace_lacks_is_named():
    trace = load_trace(ROOT / "examples" / "traces" / "fig2.json")
    with pytest.raises(NoSuchEvent, match="did you mean 'c3'"):
        render(trace, "dot", highlight="c33")


@pytest.mark.parametrize("kept", [2, 9, 4096])  # 2: every walk leaves the slice, and retries
def test_a_stream_explains_what_the_loaded_trace_explains(small, kept, monkeypatch):
    monkeypatch.setattr(recent, "FIRST_SIZE", kept)
    trace = load_trace(small)
    for event in trace.events[3::47]:
        for guard in GUARDS:
            if guard is None and event.guard is None:
                continue
            stream = open_trace(small)
            found = explain_stream(stream, event.id, guard, None, stream.schema())
            assert found == explain(trace, event.id, guard), (event.id, guard)


def _peak_mib(*arguments: str) -> float:
    """Peak RSS (MiB) of one ``cpl`` child, from its own ``wait4``."""
    child = subprocess.Popen([sys.executable, "-m", "cpl_cli", *arguments], cwd=ROOT,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=dict(os.environ, PYTHONPATH=str(ROOT)))
    _, status, usage = os.wait4(child.pid, 0)
    error = child.stderr.read()
    child.stderr.close()
    assert os.waitstatus_to_exitcode(status) == 0, error
    return usage.ru_maxrss / 1024


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB is Linux's")
def test_render_and_explain_memory_does_not_grow_with_the_trace(tmp_path):
    """10× the events (≈ 7,000 vs 70,000), the same peak: the old readers held every
    event (about 2 KiB each loaded, +120 MiB here)."""
    peaks = {}
    for rounds in (1_000, 10_000):
        path = tmp_path / f"t{rounds}.jsonl"
        _write(path, rounds)
        last = f"A.{rounds}.4"
        peaks[rounds] = (_peak_mib("render", str(path), "-o", str(tmp_path / "x.html")),
                         _peak_mib("explain", str(path), last))
    for small_peak, big_peak in zip(peaks[1_000], peaks[10_000]):
        assert big_peak < small_peak + 16, peaks
