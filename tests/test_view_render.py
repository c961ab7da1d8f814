"""The MSC picture, checked on its structure: columns, arrows, diamonds, highlight, windows.

The SVG we write (``cpl.view.svg``, no graphviz) is parsed back: every drawn
element carries an id (``ev-<index>``, ``msg-<n>``, ``lifeline-<lane>``), so the
tests can find the shape that stands for each event and where it is.  Only PNG
and PDF need graphviz's ``dot``; those tests say so when they skip.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from choreo import load_one
from choreo.execution.plan import prepare
from choreo.execution.simulate import Simulator
from cpl.trace import Event, Trace, load_trace
from cpl.view import format_of, layout, render
from cpl.view.dot import FALSE, GREY, TRUE
from cpl.view.shiviz import PARSER, host_names, shiviz_log
from needs import needs_dot

SVG = "{http://www.w3.org/2000/svg}"
FIG2 = "examples/traces/fig2.json"


@pytest.fixture(scope="module")
def review() -> Trace:
    plan = prepare(load_one("examples/code_review.py", None))
    return Simulator.of(plan).run(seed=3, values=plan.inputs(["rounds=2"])).trace


def _svg(trace: Trace, **options) -> dict[str, ET.Element]:
    root = ET.fromstring(render(trace, "svg", **options))
    return {g.get("id"): g for g in root.iter(f"{SVG}g") if g.get("id")}


def _centre(group: ET.Element) -> tuple[float, float]:
    """The centre of a node's shape: an ellipse's, or the mean of a polygon's points."""
    for shape in group:
        if shape.tag == f"{SVG}ellipse":
            return float(shape.get("cx")), float(shape.get("cy"))
        if shape.tag == f"{SVG}polygon":
            points = [tuple(map(float, p.split(","))) for p in shape.get("points").split()]
            points = points[:-1] if points[0] == points[-1] else points
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            return sum(xs) / len(xs), sum(ys) / len(ys)
        if shape.tag == f"{SVG}text":  # a rounded box is a path: its text is centred
            return float(shape.get("x")), float(shape.get("y"))
    raise AssertionError(f"no shape in {group.get('id')}")


def _fill(group: ET.Element) -> str:
    return next(s.get("fill") for s in group if s.tag in (f"{SVG}ellipse", f"{SVG}polygon"))


def test_one_column_per_lifeline_and_every_event_on_its_own(review):
    groups = _svg(review)
    heads = [_centre(groups[f"lifeline-{lane}"])[0] for lane in range(len(review.lifelines))]
    assert len(set(heads)) == len(review.lifelines)
    texts = {t.text for g in groups.values() for t in g.iter(f"{SVG}text")}
    assert set(review.lifelines) <= texts, "the SVG names every lifeline"
    lanes = {name: n for n, name in enumerate(review.lifelines)}
    for index, event in enumerate(review.events):
        x, _ = _centre(groups[f"ev-{index}"])
        assert x == pytest.approx(heads[lanes[event.lifeline]], abs=0.5), event.id


def test_time_runs_down_every_lifeline_and_every_arrow_slants_down(review):
    groups = _svg(review)
    y = {index: _centre(groups[f"ev-{index}"])[1] for index in range(len(review.events))}
    for name in review.lifelines:
        local = review.local_events(name)
        assert all(y[a] < y[b] for a, b in zip(local, local[1:])), name
    for index, event in enumerate(review.events):
        if event.kind == "recv":
            assert y[review.index_of(review.send_of(event.msg).id)] < y[index], event.id


def test_one_solid_arrow_per_received_message_and_dashed_ones_in_transit():
    trace = load_trace(FIG2)
    groups = _svg(trace)
    arrows = [g for key, g in groups.items() if re.fullmatch(r"msg-\d+", key)]
    dashed = [g for g in arrows if any(p.get("stroke-dasharray") for p in g.iter(f"{SVG}path"))]
    received = [e for e in trace.events if e.kind == "recv"]
    assert len(arrows) - len(dashed) == len(received) == 2
    assert len(dashed) == len(trace.in_transit()) == 1
    labels = [t.text for key, g in groups.items() if key.startswith("msglabel-")
              for t in g.iter(f"{SVG}text")]
    assert "r2 (in transit)" in labels


def test_choices_are_diamonds_coloured_by_outcome(review):
    groups = _svg(review)
    choices = [(i, e) for i, e in enumerate(review.events) if e.kind == "choice"]
    assert {e.outcome for _, e in choices} == {True, False}
    for index, event in choices:
        group = groups[f"ev-{index}"]
        polygon = next(group.iter(f"{SVG}polygon"))
        assert len(polygon.get("points").split()) in (4, 5)  # closed or not
        assert _fill(group).lower() == (TRUE if event.outcome else FALSE).lower()


def test_highlight_greys_what_the_decision_could_not_see_and_rings_its_frontier():
    trace = load_trace(FIG2)
    groups = _svg(trace, highlight="c3")
    greyed = {trace.events[i].id for i in range(len(trace.events))
              if _fill(groups[f"ev-{i}"]).lower() == GREY.lower()}
    assert greyed == {"t3", "t4"}  # the failure and its report had not reached c3
    rings = {trace.events[int(key[5:])].id for key in groups if key.startswith("seen-")}
    assert rings == {"o1", "t2", "c3"}


def test_a_died_lifeline_is_marked_where_it_ended():
    events = [Event("a1", "A", "send", to="B", msg="m"), Event("b1", "B", "recv", msg="m"),
              Event("a2", "A", "act", set={"x": 1})]
    trace = Trace(("A", "B"), events=events,
                  meta={"status": "died", "died": {"lifeline": "B", "exit": None, "signal": 9}})
    placed = layout(trace)
    assert [(end.lane, end.text) for end in placed.ends] == [(1, "died (signal 9)")]
    groups = _svg(trace)
    assert "✕ died (signal 9)" in [t.text for t in groups["end-1"].iter(f"{SVG}text")]


def test_hostile_names_are_shown_not_interpreted():
    names = ("<b>bold</b>", 'quo"te\\N', "line\nbreak")
    events = [Event(f"e{n}", name, "act", label=name) for n, name in enumerate(names)]
    trace = Trace(names, events=events)
    texts = [t.text for t in ET.fromstring(render(trace, "svg")).iter(f"{SVG}text")]
    assert "<b>bold</b>" in texts and 'quo"te\\N' in texts
    assert b"<b>bold" not in render(trace, "svg")  # escaped, never markup
    for form in ("dot", "shiviz"):
        assert render(trace, form)


@needs_dot
def test_hostile_names_draw_in_png_and_pdf():
    names = ("<b>bold</b>", 'quo"te\\N', "line\nbreak", "nul\x00here")
    trace = Trace(names, events=[Event(f"e{n}", name, "act", label=name)
                                 for n, name in enumerate(names)])
    for form in ("png", "pdf"):
        assert render(trace, form)


@needs_dot
def test_formats_have_their_own_magic(review):
    assert render(review, "png").startswith(b"\x89PNG")
    assert render(review, "pdf").startswith(b"%PDF")
    assert render(review, "dot").startswith(b"digraph")
    assert [format_of(n) for n in ("a.SVG", "a.gv", "a.log", "a.htm", "a.txt", "noext")] == \
        ["svg", "dot", "shiviz", "html", None, None]


def test_a_large_trace_folds_acts_then_draws_a_window_around_the_highlight():
    events = []
    for n in range(600):
        events += [Event(f"a{n}", "A", "act", set={"x": n}), Event(f"s{n}", "A", "send", to="B",
                   msg=f"m{n}"), Event(f"r{n}", "B", "recv", msg=f"m{n}")]
    trace = Trace(("A", "B"), events=events)
    full = layout(trace, max_rows=0)
    assert full.rows == 1201 and full.folded == 0
    window = layout(trace, highlight="r300", max_rows=100)
    assert window.rows == 100
    shown = {trace.events[d.index].id for d in window.dots}
    assert "r300" in shown and window.highlight == trace.index_of("r300")
    assert window.skipped_before + window.skipped_after + len(window.dots) == len(events)
    # an arrow whose send lies above the window is still drawn, cut at the top edge
    assert any(a.send is None and a.recv is not None for a in window.arrows)
    folds = Trace(("A",), events=[Event(f"x{n}", "A", "act") for n in range(500)])
    folded = layout(folds, max_rows=50)
    assert folded.rows == 1 and folded.dots[0].count == 500 and folded.folded == 499


def test_shiviz_log_has_the_parser_line_and_a_clock_per_event():
    trace = Trace(("the host", "the_host"), events=[
        Event("s", "the host", "send", to="the_host", msg="m"),
        Event("r", "the_host", "recv", msg="m")])
    lines = shiviz_log(trace).splitlines()
    assert lines[:2] == [PARSER, ""]
    hosts = host_names(trace.lifelines)
    assert hosts == {"the host": "the_host~2", "the_host": "the_host"}
    # ShiViz's default expression: a description line, then "HOST {clock}"
    pattern = re.compile(r"(?P<event>.*)\n(?P<host>\S*) (?P<clock>{.*})")
    found = pattern.findall("\n".join(lines[2:]))
    assert [(host, json.loads(clock)) for _, host, clock in found] == [
        ("the_host~2", {"the_host~2": 1}), ("the_host", {"the_host~2": 1, "the_host": 1})]


def _text_boxes(groups: dict[str, ET.Element], prefix: str) -> list[tuple[str, tuple]]:
    """Each line of text of the groups whose id starts with ``prefix``, as the box it
    roughly covers (9-point Helvetica: 0.58 em a character, 9 points above the baseline)."""
    boxes = []
    for name, group in groups.items():
        if not name.startswith(prefix):
            continue
        for text in group.iter(f"{SVG}text"):
            x, y, width = float(text.get("x")), float(text.get("y")), 0.58 * 9 * len(text.text)
            left = {"start": x, "end": x - width}.get(text.get("text-anchor"), x - width / 2)
            boxes.append((text.text, (left, y - 9, left + width, y + 2)))
    return boxes


@pytest.mark.parametrize("seed", [1, 3, 7])
def test_no_message_label_covers_another_label(seed):
    plan = prepare(load_one("examples/code_review.py", None))
    groups = _svg(Simulator.of(plan).run(seed=seed, values=plan.inputs(["rounds=2"])).trace)
    messages = _text_boxes(groups, "msglabel-")
    others = _text_boxes(groups, "label-") + messages
    assert len(messages) > 20
    for text, (left, top, right, bottom) in messages:
        for other, (l2, t2, r2, b2) in others:
            if (l2, t2, r2, b2) != (left, top, right, bottom):
                assert not (left < r2 and l2 < right and top < b2 and t2 < bottom), (text, other)


def test_svg_and_html_need_no_graphviz_png_says_how_to_install_it(monkeypatch, review):
    """As on a machine without graphviz: ``dot`` is not on PATH, and graphviz's pipe (the
    only way the package runs it) fails the test if it is ever called."""
    import graphviz

    from cpl.view import dot

    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "dot"
                        else real_which(name, *a, **k))
    monkeypatch.setenv("PATH", "/nonexistent")

    def no_graphviz(*args, **kwargs):
        raise AssertionError("graphviz was called")

    monkeypatch.setattr(graphviz.Digraph, "pipe", no_graphviz)
    monkeypatch.setattr(graphviz, "pipe", no_graphviz)
    svg = render(review, "svg")
    assert ET.fromstring(svg).tag == f"{SVG}svg"
    page = render(review, "html", highlight="Committer.4").decode("utf-8")
    assert "<svg" in page and 'id="ev-' in page
    assert render(review, "dot").startswith(b"digraph")  # DOT text needs no program either
    for form in ("png", "pdf"):
        with pytest.raises(dot.NeedsDot) as raised:
            render(review, form)
        assert str(raised.value) == dot.NEEDS_DOT
        assert "apt-get install graphviz" in dot.NEEDS_DOT and "brew install graphviz" in \
            dot.NEEDS_DOT


HOSTILE = ["<script>alert(1)</script>", "a & b", "]]>", "\"quoted' name\"", "ctl\x00\x01\x1b[31m",
           "rtl\u202eevil\u202c", "x" * 10_000, "<!--", "&amp;", "{{x}}", "line\u2028sep"]


def test_hostile_text_is_valid_xml_shown_literally_and_bounded():
    lifelines = tuple(HOSTILE)
    events = []
    for n, name in enumerate(lifelines):
        other = lifelines[(n + 1) % len(lifelines)]
        events += [Event(f"a{n}", name, "act", label=name, set={"x": name}),
                   Event(f"c{n}", name, "choice", guard=f"x == {name!r}", outcome=bool(n % 2),
                         label=name),
                   Event(f"s{n}", name, "send", to=other, msg=f"m{n}", label=name),
                   Event(f"r{n}", other, "recv", msg=f"m{n}")]
    trace = Trace(lifelines, events=events, meta={"choreography": "<x>&", "status": "]]>"})
    data = render(trace, "svg")
    root = ET.fromstring(data)  # well-formed XML
    tags = {element.tag.removeprefix(SVG) for element in root.iter()}
    assert tags <= {"svg", "g", "text", "path", "polygon", "ellipse"}, tags
    assert b"<script" not in data and b"<!--" not in data and b"]]>" not in data
    texts = "".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert "<script>alert(1)</script>" in texts and "a & b" in texts
    assert "\u202e" not in texts and "\\u202e" in texts and "\\x00" in texts
    assert len(data) < 400_000, len(data)  # a 10 kB name is wrapped in its head, not repeated
    page = render(trace, "html").decode("utf-8")
    assert "<script>alert" not in page


def test_a_huge_guard_is_drawn_whole_up_to_a_bound_and_on_the_canvas():
    """A guard is never cut to a line, but a hostile 300,000-character one stays a picture:
    drawn up to GUARD_LINES lines, the last ending in …, all of it inside the canvas (an
    early row's tall label once began above the top edge)."""
    from cpl.view.labels import GUARD_LINES
    guard = " || ".join(f"@A.x == {n}" for n in range(30_000))
    trace = Trace(("A", "B"), events=[Event("a1", "A", "choice", guard=guard, outcome=True,
                                            label="c")])
    data = render(trace, "svg")
    assert len(data) < 100_000, len(data)
    root = ET.fromstring(data)
    texts = [t for t in root.iter(f"{SVG}text") if "@A.x" in (t.text or "")]
    assert len(texts) == GUARD_LINES and texts[-1].text.endswith("…")
    assert texts[0].text.startswith("@A.x == 0 ||")
    height = float(root.get("height").removesuffix("pt"))
    assert all(0 < float(t.get("y")) < height for t in root.iter(f"{SVG}text"))
    short = render(Trace(("A", "B"), events=[Event("a1", "A", "choice", guard=guard[:2_000],
                                                   outcome=True, label="c")]), "svg")
    assert "…" not in short.decode("utf-8")  # a long but sane guard: whole


def test_three_hundred_lifelines_stay_fast_and_valid():
    import time
    names = tuple(f"L{n}" for n in range(300))
    events = [Event(f"s{n}", names[n], "send", to=names[(n + 7) % 300], msg=f"m{n}",
                    label=f"hello {n}") for n in range(300)]
    events += [Event(f"r{n}", names[(n + 7) % 300], "recv", msg=f"m{n}") for n in range(300)]
    trace = Trace(names, events=events)
    start = time.perf_counter()
    data = render(trace, "svg")
    assert time.perf_counter() - start < 10
    root = ET.fromstring(data)
    assert sum(1 for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("lifeline-")) \
        == 300
