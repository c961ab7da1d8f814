"""What a picture says beyond the chart's shape: the values each message carried on its
arrow (``--values``), which lifeline failed (``meta.failed``), and, before any work, what a
format needs that is not installed (``cpl.view.missing``)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from choreo import load_one
from choreo.execution.plan import prepare
from choreo.execution.simulate import Simulator
from choreo_util import write
from cpl import view
from cpl.trace import Event, Trace, dump_trace, load_trace
from cpl.view import layout, missing
from cpl.view.layout import FORCED_VALUE, SHORT_LABEL, arrow_text
from needs import without_dot
from cpl_cli import view as cli_view

ROOT = Path(__file__).resolve().parent.parent
FAILING = """
c = Choreography("trio")
A, B, C = c.lifelines("A", "B", "C")
x = c.var("x", int)
c.set(A, x=1)
c.send(A, B, x)
c.send(A, C, x)
c.act(B, lambda v, rng: 1 / 0, assigns=[x], label="compute x")
c.send(B, C, x)
"""


def send(payload, label="review") -> Event:
    return Event("s", "A", "send", to="B", msg="m", label=label, payload=payload)


# ---------------------------------------------------------------- values on arrows

def test_short_values_are_shown_by_default():
    assert arrow_text(send({"candidate": 3})) == "review(candidate=3)"
    assert arrow_text(send({"candidate": "c1", "ok": True})) == 'review(candidate="c1", ok=true)'
    assert arrow_text(send([1, None])) == "review([1, null])"
    assert arrow_text(send(None)) == "review"  # a hand-written trace: nothing carried
    assert arrow_text(send({})) == "review"


def test_long_values_are_cut_to_keep_the_label_short():
    text = arrow_text(send({"a": "x" * 80, "b": "y" * 30, "c": 1}))
    assert len(text) <= SHORT_LABEL and text.startswith('review(a="x') and "…" in text
    assert text.endswith(", c=1)")
    many = arrow_text(send({f"key{n}": n for n in range(30)}))
    assert many == "review(…)"  # too many even as names: the values are there, --values shows


def test_values_forced_and_hidden():
    payload = {"a": "x" * 80}
    assert arrow_text(send(payload), True) == 'review(a="' + "x" * 80 + '")'
    assert arrow_text(send(payload), False) == "review"
    huge = arrow_text(send({"blob": "z" * 1_000_000}), True)  # a value is data, not a label
    assert len(huge) < FORCED_VALUE + 20 and huge.endswith("…)")
    wide = arrow_text(send({f"k{n}": n for n in range(1000)}), True)
    assert wide.endswith(", …)") and len(wide) < 400


def test_a_decision_message_does_not_repeat_its_outcome():
    assert arrow_text(send({"outcome": False}, "merge?: false")) == "merge?: false"
    assert arrow_text(send({"outcome": True}, "merge?: false")) == "merge?: false(outcome=true)"


def test_hostile_values_are_shown_as_json_text_never_interpreted():
    text = arrow_text(send({"k\u202e": "</text><script>\x00\x1b[31m"}), True)
    assert text == 'review(k\u202e="</text><script>\\u0000\\u001b[31m")'
    drawn = view.render(Trace(["A", "B"], events=[
        send({"k\u202e": "<b>\x07"}), Event("r", "B", "recv", msg="m")]), "dot", values=True)
    assert b"\\\\u202e" in drawn or b"\\u202e" in drawn  # the override written as its escape
    assert "\u202e".encode() not in drawn and b"\x07" not in drawn


def test_the_flagship_shows_what_each_message_carried():
    plan = prepare(load_one(str(ROOT / "examples/code_review.py"), None))
    trace = Simulator.of(plan).run(seed=1, values=plan.inputs(["rounds=2"])).trace
    texts = {arrow.text for arrow in layout(trace).arrows}
    assert 'patch(candidate="c1")' in texts and "merge?: false" in texts
    assert {arrow.text for arrow in layout(trace, values=False).arrows} >= {"patch"}
    assert not any("(" in a.text for a in layout(trace, values=False).arrows)


def test_cli_values_flags(tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"format": "cpl-msc/1", "lifelines": ["A", "B"], "events": [
        {"id": "s", "lifeline": "A", "kind": "send", "to": "B", "msg": "m", "label": "go",
         "payload": {"long": "v" * 60}},
        {"id": "r", "lifeline": "B", "kind": "recv", "msg": "m"}]}))
    shown = {}
    for flag in ("", "--values", "--no-values"):
        out = tmp_path / f"t{flag}.svg"
        result = run_cli("render", trace, "-o", out, *([flag] if flag else []))
        assert result.returncode == 0, result.stderr
        texts = re.findall(r"<text\b[^>]*>([^<]*)</text>", out.read_text())
        shown[flag] = html.unescape("".join(texts))  # a wrapped label's lines, joined
    assert 'go(long="vvv' in shown[""] and "v" * 60 not in shown[""]
    assert 'go(long="' + "v" * 60 + '")' in shown["--values"]
    assert "go(" not in shown["--no-values"] and "go" in shown["--no-values"]
    assert cli_view.SHORT_LABEL == SHORT_LABEL  # the help's number is the layout's


# the help's number is the layout's


# ---------------------------------------------------------------- which lifeline failed

def failed_run(tmp_path) -> Trace:
    plan = prepare(load_one(str(write(tmp_path, FAILING)), None))
    return Simulator.of(plan).run(seed=0).trace


def ends(trace: Trace) -> dict[str, str]:
    drawn = layout(trace)
    return {drawn.lifelines[end.lane]: end.text for end in drawn.ends}


def test_only_the_lifeline_that_failed_is_marked_failed(tmp_path):
    trace = failed_run(tmp_path)
    assert trace.meta["status"] == "failed"
    assert trace.meta["failed"] == {"lifeline": "B", "after": "B.1"}
    marks = ends(trace)
    assert marks["A"] == marks["C"] == "stopped"
    assert marks["B"].startswith("failed: action 'compute x' raised Zero")
    assert len(marks["B"]) <= len("failed: ") + 32


def test_a_trace_recorded_before_meta_failed_is_read_from_its_error(tmp_path):
    trace = failed_run(tmp_path)
    old = {k: v for k, v in trace.meta.items() if k != "failed"}
    marks = ends(Trace(trace.lifelines, trace.init, trace.events, meta=old))
    assert marks["B"].startswith("failed: ") and marks["A"] == "stopped"


@pytest.mark.parametrize("meta", [
    {"status": "failed", "failed": {"lifeline": "Nobody"}},
    {"status": "failed", "failed": {"lifeline": ["B"]}},
    {"status": "failed", "failed": "B"},
    {"status": "failed", "error": 7},
    {"status": "failed", "error": "A, event A.1: x; B, event B.1: y"},  # the first names A
    {"status": "failed"},
])
def test_a_meta_that_names_no_known_lifeline_marks_every_one_stopped(meta):
    trace = Trace(["A", "B"], events=[Event("a", "A", "act"), Event("b", "B", "act")],
                  meta=meta)
    marks = ends(trace)
    if meta.get("error") == "A, event A.1: x; B, event B.1: y":
        assert marks == {"A": "failed: x; B, event B.1: y", "B": "stopped"}
    else:
        assert marks == {"A": "stopped: failed", "B": "stopped: failed"}


def test_a_died_lifeline_is_still_singled_out():
    trace = Trace(["A", "B"], events=[Event("a", "A", "act")],
                  meta={"status": "died", "died": {"lifeline": "B", "signal": 9}})
    assert ends(trace) == {"B": "died (signal 9)"}


def test_a_process_run_names_the_lifeline_that_failed(tmp_path):
    out = tmp_path / "p.jsonl"
    result = run_cli("run", write(tmp_path, FAILING), "--trace", out, timeout=120)
    assert result.returncode == 1, result.stderr
    meta = load_trace(out).meta
    assert meta["status"] == "failed" and meta["failed"] == {"lifeline": "B"}
    assert ends(load_trace(out))["C"] == "stopped"


# ---------------------------------------------------------------- what a format needs

def test_missing_names_graphviz_only_for_png_and_pdf(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    for form in ("png", "pdf"):
        said = missing(form)
        assert said is not None and "graphviz" in said and "apt-get install graphviz" in said
        assert "brew install graphviz" in said and "conda install -c conda-forge graphviz" in said
    for form in ("svg", "html", "dot", "shiviz"):
        assert missing(form) is None
    monkeypatch.undo()
    if shutil.which("dot"):
        assert missing("png") is None


def no_dot_env(tmp_path) -> dict:
    """A PATH with python and nothing else: a machine without graphviz."""
    env = without_dot(tmp_path / "bin")
    return {**env, "PYTHONPATH": os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])}


def run_cli(*args, env=None, timeout=60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpl_cli", *map(str, args)],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


def test_a_dot_that_fails_is_one_line_and_exit_1(tmp_path):
    """graphviz's own failure (here a ``dot`` that refuses without reading) is the trace's
    drawing failing: its last line said, no file left, no traceback — for a large trace too,
    whose DOT text outgrows the pipe (it was "cannot write t.png: Broken pipe")."""
    env = no_dot_env(tmp_path)
    fake = tmp_path / "bin" / "dot"
    fake.write_text("#!/bin/sh\necho 'Error: out of crayons' >&2\nexit 1\n")
    fake.chmod(0o755)
    plan = prepare(load_one("examples/code_review.py", None))
    large = tmp_path / "large.json"
    dump_trace(Simulator.of(plan).run(seed=3, values=plan.inputs(["rounds=40"])).trace, large)
    for trace in ("examples/traces/fig2.json", large):
        out = tmp_path / "t.png"
        result = run_cli("render", trace, "-o", out, env=env)
        assert result.returncode == 1, result.stderr
        assert "graphviz failed to draw the trace: Error: out of crayons" in result.stderr
        assert "Traceback" not in result.stderr and not out.exists()


def test_render_png_without_dot_is_a_usage_error(tmp_path):
    env = no_dot_env(tmp_path)
    out = tmp_path / "t.png"
    result = run_cli("render", "examples/traces/fig2.json", "-o", out, env=env)
    assert result.returncode == 2, result.stderr
    assert "graphviz's 'dot' program is needed for PNG" in result.stderr
    assert "apt-get install graphviz" in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()
    text = tmp_path / "t.dot"  # DOT text is ours: no program needed
    assert run_cli("render", "examples/traces/fig2.json", "-o", text, env=env).returncode == 0
    assert text.read_text().startswith("digraph")


def test_run_render_pdf_without_dot_stops_before_the_run(tmp_path):
    env = no_dot_env(tmp_path)
    trace = tmp_path / "t.jsonl"
    result = run_cli("run", "examples/relay.py", "--sim", "--trace", trace, "--render",
                     tmp_path / "x.pdf", env=env)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("cpl run: --render ") and "needed for PNG and PDF" in \
        result.stderr
    assert result.stdout == "" and not trace.exists()  # nothing ran


def test_values_flag_without_render_is_a_usage_error():
    result = run_cli("run", "examples/relay.py", "--sim", "--no-values")
    assert result.returncode == 2 and "--no-values is for the picture of --render" in \
        result.stderr
