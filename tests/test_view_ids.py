"""Pictures carry what ``cpl explain`` names: every event's id beside it (``--ids`` /
``--no-ids``; by default where it fits), the values agents set — also on runs of
``cpl.live``, whose messages carry a token and not their data — and LangGraph messages
labelled by what they carry (the ``Send`` target, the state keys)."""

from __future__ import annotations

import contextlib
import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from choreo import load_one
from choreo.execution.plan import prepare
from choreo.execution.simulate import Simulator
from cpl.live import System
from cpl.trace import Event, Trace, load_trace
from cpl.view import layout, render
from cpl_cli import main as cli_main

ROOT = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"


def cpl(*args: str) -> tuple[int, str]:
    """``cpl ARGS`` in this process: its exit status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli_main([str(a) for a in args])
    return status, out.getvalue() + err.getvalue()


def review() -> Trace:
    plan = prepare(load_one(str(ROOT / "examples" / "code_review.py"), None))
    return Simulator.of(plan).run(seed=1, values=plan.inputs(["rounds=2"])).trace


def groups(svg: bytes, prefix: str) -> dict[int, str]:
    """Trace index -> the text of the SVG's groups ``PREFIX-N`` (its lines joined)."""
    found = {}
    for group in ET.fromstring(svg).iter(f"{SVG}g"):
        ident = group.get("id") or ""
        if re.fullmatch(rf"{prefix}-\d+", ident):
            lines = [t.text or "" for t in group.iter(f"{SVG}text")]
            found[int(ident.split("-")[1])] = " ".join(lines)
    return found


def texts(svg: bytes) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{SVG}text")]


# ------------------------------------------------------------------------ ids

def test_the_flagship_shows_the_id_of_nearly_every_event_by_default_exactly():
    trace = review()
    svg = render(trace, "svg")
    ids = groups(svg, "id")
    assert len(ids) >= 0.85 * len(trace.events), (len(ids), len(trace.events))
    for index, text in ids.items():
        assert text == trace.events[index].id  # the very string cpl explain takes


def test_no_ids_draws_none_and_ids_draws_every_one():
    trace = review()
    assert groups(render(trace, "svg", ids=False), "id") == {}
    every = groups(render(trace, "svg", ids=True), "id")
    assert every == {n: event.id for n, event in enumerate(trace.events)}


def test_a_folded_run_of_acts_shows_its_first_and_last_ids():
    events = [Event(f"a{n}", "A", "act", set={"x": n}, label="step") for n in range(1, 6)]
    events += [Event("s", "A", "send", to="B", msg="m"), Event("r", "B", "recv", msg="m")]
    trace = Trace(("A", "B"), {}, events)
    drawn = layout(trace, max_rows=3)
    fold = next(d for d in drawn.dots if d.kind == "fold")
    assert fold.ident == "a1 … a5"
    assert "a1 … a5" in groups(render(trace, "svg", max_rows=3), "id").values()


def test_an_id_too_long_to_fit_is_left_out_by_default_and_drawn_whole_with_ids():
    long = "event-" + "x" * 200
    trace = Trace(("A",), {}, [Event(long, "A", "act", label="step")])
    assert groups(render(trace, "svg"), "id") == {}
    assert groups(render(trace, "svg", ids=True), "id")[0].replace(" ", "") == long


def test_cli_ids_options_and_the_ids_drawn_are_what_explain_takes(tmp_path):
    trace = tmp_path / "fig2.json"
    trace.write_text((ROOT / "examples" / "traces" / "fig2.json").read_text())
    for option, expect in (([], True), (["--ids"], True), (["--no-ids"], False)):
        out = tmp_path / f"fig2{len(option)}{expect}.svg"
        status, said = cpl("render", trace, "-o", out, *option)
        assert status == 0, said
        drawn = groups(out.read_bytes(), "id")
        assert bool(drawn) == expect, option
    drawn = groups((tmp_path / "fig20True.svg").read_bytes(), "id")
    assert "c3" in drawn.values()
    status, said = cpl("explain", trace, "c3")
    assert status == 0 and said.startswith("c3 on Committer"), said


def test_cpl_run_takes_ids_with_render_only(tmp_path):
    out = tmp_path / "run.svg"
    status, said = cpl("run", ROOT / "examples" / "code_review.py", "--sim", "--arg",
                       "rounds=1", "--render", out, "--no-ids")
    assert status == 0, said
    assert groups(out.read_bytes(), "ev") and groups(out.read_bytes(), "id") == {}
    status, said = cpl("run", ROOT / "examples" / "code_review.py", "--sim", "--ids")
    assert status == 2 and "--ids is for the picture of --render OUT" in said, said


def test_the_viewer_page_carries_the_ids_and_its_script_finds_them(tmp_path):
    page = render(load_trace(ROOT / "examples" / "traces" / "fig2.json"), "html").decode()
    assert re.search(r'<g id="id-\d+" class="node"><text[^>]*>c3</text>', page)
    script = (ROOT / "cpl" / "view" / "viewer.js").read_text()
    assert "(ev|label|id|seen|msg|msglabel)" in script and '"id-" + d.index' in script


# --------------------------------------------------------------------- values

def test_an_act_shows_the_values_it_set_unless_its_label_says_them():
    trace = Trace(("A",), {}, [
        Event("a1", "A", "act", set={"status": "passed"}, label="tests ran"),
        Event("a2", "A", "act", set={"status": "pending"}, label="set status='pending'"),
        Event("a3", "A", "act", set={"n": 3})])
    shown = {d.ident: d.text for d in layout(trace).dots}
    assert shown == {"a1": 'tests ran: status="passed"', "a2": "set status='pending'",
                     "a3": "n=3"}
    assert {d.ident: d.text for d in layout(trace, values=False).dots} == {
        "a1": "tests ran", "a2": "set status='pending'", "a3": "a3"}


def test_a_receive_shows_what_it_set_unless_its_arrow_does():
    trace = Trace(("A", "B"), {}, [
        Event("s1", "A", "send", to="B", msg="m1", label="token"),
        Event("r1", "B", "recv", msg="m1", set={"candidate": "c1"}),
        Event("s2", "A", "send", to="B", msg="m2", label="patch", payload={"candidate": "c2"}),
        Event("r2", "B", "recv", msg="m2", set={"candidate": "c2"})])
    shown = {d.ident: d.text for d in layout(trace).dots}
    assert shown["r1"] == 'candidate="c1"'  # a token carried no values: the receive says
    assert shown["r2"] == ""  # the arrow says patch(candidate="c2") already
    svg = render(trace, "svg")
    assert 'candidate="c1"' in texts(svg) and 'patch(candidate="c2")' in texts(svg)
    assert not any("c1" in text for text in texts(render(trace, "svg", values=False)))


def live_run(logs: Path) -> None:
    """Three agents of cpl.live: the Author proposes, the TestRunner reports, the
    Committer decides."""
    system = System(["Author", "TestRunner", "Committer"],
                    {"merge": ("Committer", "@TestRunner(status == passed) && "
                                            "@TestRunner.candidate == candidate")},
                    ["status", "candidate"])
    agents = {name: system.agent(name, log=str(logs)) for name in system.lifelines}
    author, tests, committer = agents["Author"], agents["TestRunner"], agents["Committer"]
    for candidate, status in (("c1", "passed"), ("c2", "failed")):
        to_tests, to_committer = author.send("TestRunner", "proposal"), author.send(
            "Committer", "proposal")
        tests.receive(to_tests, candidate=candidate)
        tests.act("tests ran", status=status)
        report = tests.send("Committer", "report")
        committer.receive(to_committer, candidate=candidate)
        committer.receive(report)
        committer.decide("merge")
    for agent in agents.values():
        agent.close()


def test_a_live_runs_picture_shows_the_values_agents_set_and_the_ids(tmp_path):
    live_run(tmp_path / "logs")
    trace = tmp_path / "live.jsonl"
    status, said = cpl("merge", tmp_path / "logs", "-o", trace)
    assert status == 0, said
    out = tmp_path / "live.svg"
    status, said = cpl("render", trace, "-o", out)
    assert status == 0, said
    drawn = texts(out.read_bytes())
    assert 'tests ran: status="passed"' in drawn and 'tests ran: status="failed"' in drawn
    assert 'candidate="c1"' in drawn and 'candidate="c2"' in drawn
    events = load_trace(trace).events
    ids = groups(out.read_bytes(), "id")
    assert len(ids) >= 0.9 * len(events)
    assert all(text == events[n].id for n, text in ids.items())
    assert "Committer.3" in ids.values()  # the first decision, as cpl explain names it
    status, said = cpl("explain", trace, "Committer.3")
    assert status == 0 and said.startswith("Committer.3 on Committer"), said
    status, said = cpl("render", trace, "-o", tmp_path / "bare.svg", "--no-ids", "--no-values")
    bare = (tmp_path / "bare.svg").read_bytes()
    assert status == 0 and groups(bare, "id") == {}
    assert not any("status=" in text for text in texts(bare))


# ------------------------------------------------------------------ LangGraph

def test_a_langgraph_fan_out_labels_each_message_by_its_send_and_state_keys(tmp_path):
    pytest.importorskip("langgraph", reason="langgraph is not installed "
                        "(pip install 'causal-guards[langgraph]')")
    from causal_guards.langgraph import GraphGuards
    from test_embed_langgraph import WORKERS, fan_out_graph, fan_out_system

    logs = tmp_path / "logs"
    with GraphGuards(fan_out_system(), log=str(logs)) as guards:
        fan_out_graph(guards).invoke({})
    trace = tmp_path / "fan.jsonl"
    status, said = cpl("merge", logs, "-o", trace)
    assert status == 0, said
    sends = [e for e in load_trace(trace).events if e.kind == "send"]
    fanned = sorted((e.to, e.label) for e in sends if e.lifeline == "Planner")
    assert fanned == [(w, "Send(worker, {item})") for w in WORKERS]
    assert {e.label for e in sends if e.to == "Sink"} == {"work {reports}"}
    out = tmp_path / "fan.svg"
    status, said = cpl("render", trace, "-o", out)
    assert status == 0, said
    arrows = groups(out.read_bytes(), "msglabel").values()
    assert sum(text == "Send(worker, {item})" for text in arrows) == len(WORKERS)
    assert sum(text == "work {reports}" for text in arrows) == len(WORKERS)


def test_a_langgraph_label_of_hostile_keys_stays_a_label():
    from causal_guards.labels import send_label as _send_label, update_label as _update_label

    class Loud:
        def __repr__(self):
            raise RuntimeError("no")

    assert _update_label("node", {"cpl": {}}, "cpl") == "node"
    assert _update_label("node", None, "cpl") == "node"
    label = _update_label("n" * 5000, {**{f"k{n}" * 50: n for n in range(20)}, Loud(): 1}, "cpl")
    assert len(label) < 1000 and label.endswith(", …}")
    assert _send_label("worker", {Loud(): 1, "item": 2}, "cpl") == "Send(worker, {Loud, item})"
