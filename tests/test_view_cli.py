"""`cpl render` and `cpl run --render` from the outside: formats, errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET

import pytest

from choreo_util import cpl, write
from needs import needs_dot, without_dot

FIG2 = "examples/traces/fig2.json"
MAGIC = {"svg": b"<?xml", "png": b"\x89PNG", "pdf": b"%PDF", "dot": b"digraph",
         "html": b"<!DOCTYPE html>", "log": b"(?<event>"}


@pytest.fixture(scope="module")
def review(tmp_path_factory):
    """A simulated code-review trace, as `cpl run --trace` writes it."""
    path = tmp_path_factory.mktemp("review") / "review.jsonl"
    result = cpl("run", "examples/code_review.py", "--sim", "--seed", "3", "--arg", "rounds=2",
                 "--trace", path)
    assert result.returncode == 0, result.stderr
    return path


@pytest.mark.parametrize("suffix", [pytest.param(s, marks=needs_dot) if s in ("png", "pdf")
                                    else s for s in MAGIC])
def test_every_format_from_its_suffix(review, tmp_path, suffix):
    out = tmp_path / f"review.{suffix}"
    result = cpl("render", review, "-o", out)
    assert result.returncode == 0, result.stderr
    data = out.read_bytes()
    assert data.lstrip().upper().startswith(MAGIC[suffix].upper()), data[:40]
    if suffix == "svg":
        texts = {t.text for t in ET.fromstring(data).iter("{http://www.w3.org/2000/svg}text")}
        assert {"Orchestrator", "TestRunner", "Security", "Committer"} <= texts


def test_format_option_wins_over_the_suffix(tmp_path):
    out = tmp_path / "picture.txt"
    assert cpl("render", FIG2, "-o", out, "--format", "dot").returncode == 0
    assert out.read_text().startswith("digraph")


@pytest.mark.parametrize("args, code, words", [
    (["-o", "{tmp}/x.txt"], 2, "cannot tell the format"),
    (["-o", "{tmp}/x.svg", "--highlight", "c33"], 2, "no event 'c33'; did you mean 'c3'?"),
    (["-o", "{tmp}/x.svg", "--max-rows", "-1"], 2, "--max-rows"),
    (["-o", "{tmp}/no/such/folder/x.svg"], 2, "no/such/folder' does not exist"),
])
def test_errors_are_one_clear_line_with_the_contract_exit_code(tmp_path, args, code, words):
    result = cpl("render", FIG2, *[a.format(tmp=tmp_path) for a in args])
    assert result.returncode == code and words in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob("**/.cpl-*")), "no temporary file left behind"


def test_a_malformed_trace_draws_nothing(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "cpl-msc/1", "lifelines": ["A"], "events": [
        {"id": "a", "lifeline": "A", "kind": "recv", "msg": "nowhere"}]}))
    result = cpl("render", bad, "-o", tmp_path / "bad.svg")
    assert result.returncode == 1 and "nowhere" in result.stderr
    assert not (tmp_path / "bad.svg").exists()


def test_a_cut_off_stream_is_drawn_as_far_as_it_goes_with_a_warning(review, tmp_path):
    lines = review.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:20]) + "\n" + lines[20][:15])
    result = cpl("render", cut, "-o", tmp_path / "cut.svg")
    assert result.returncode == 0 and "warning" in result.stderr
    ids = [g.get("id") for g in ET.parse(tmp_path / "cut.svg").iter("{http://www.w3.org/2000/svg}g")]
    assert sum(1 for i in ids if i and i.startswith("ev-")) == 19


def test_run_render_draws_a_failing_run_too(tmp_path):
    choreo = write(tmp_path, """
        c = Choreography("broken")
        A, B = c.lifelines("A", "B")
        x = c.var("x", int)

        def boom(variables, rng):
            raise RuntimeError("the tool failed")

        c.send(A, B, label="hello")
        c.act(B, boom, assigns=[x])
    """)
    out = tmp_path / "broken.svg"
    result = cpl("run", choreo, "--sim", "--render", out)
    assert result.returncode == 1, result.stderr
    root = ET.parse(out).getroot()
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "✕ failed: action 'boom' raised RuntimeErr…" in texts, texts  # B, not A
    assert "✕ stopped" in texts, texts
    assert any("failed" in (t or "") for t in texts[:3]), "the title says how the run ended"


def test_run_render_refuses_an_unknown_suffix_before_running(tmp_path):
    result = cpl("run", "examples/code_review.py", "--sim", "--render", tmp_path / "x.doc")
    assert result.returncode == 2 and "--render" in result.stderr
    assert "Orchestrator:" not in result.stdout, "no run was made"


def test_without_graphviz_svg_and_html_draw_and_png_says_how_to_install_it(review, tmp_path):
    """A PATH holding only this Python: no ``dot`` anywhere."""
    env = without_dot(tmp_path / "bin")

    def run(*args):
        return subprocess.run(["python", "-m", "cpl_cli", *map(str, args)],
                              capture_output=True, text=True, env=env, timeout=60)

    for suffix in ("svg", "html"):
        result = run("render", review, "-o", tmp_path / f"r.{suffix}")
        assert result.returncode == 0, result.stderr
        assert (tmp_path / f"r.{suffix}").read_bytes().startswith(MAGIC[suffix])
    result = run("render", review, "-o", tmp_path / "r.png")
    assert result.returncode == 2, result.stderr
    assert "graphviz" in result.stderr and "apt-get install graphviz" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "r.png").exists()
