"""`cpl explain`: every step's value is the semantics, and each value names its source."""

from __future__ import annotations

import json

import attrs
from hypothesis import assume, given, settings, strategies as st

from cpl import check
from cpl.semantics.explain import MAX_STEPS
from cpl.semantics import explain, Evaluator
from cpl.trace import Event, Trace, load_trace
from cpl.lang import to_text
from choreo_util import cpl
from msc_gen import SYMBOLS, VARIABLES, mscs
from strategies import formulas

FIG2 = "examples/traces/fig2.json"


def _steps(step):
    yield step
    for child in step.children:
        yield from _steps(child)


def test_fig2_the_testrunner_value_came_from_the_passing_check_not_the_later_failure():
    found = explain(load_trace(FIG2), "c3")
    assert (found.value, found.recorded) == (True, True)
    assert found.frontier == {"Orchestrator": "o1", "TestRunner": "t2", "Committer": "c3"}
    at = found.step
    assert at.source == "t2" and "not visible here: t3, t4" in at.why
    since = at.children[0]
    assert (since.formula, since.at, since.value) == ("status != failed S status == passed",
                                                      "t2", True)
    status = next(t for s in _steps(since) for t in s.terms if t.text == "status")
    assert (status.value, status.source, status.set_by) == ("passed", "t2", "t1")


def test_cli_text_and_json_say_the_same():
    text = cpl("explain", FIG2, "c3")
    assert text.returncode == 0, text.stderr
    assert "not visible here: t3, t4" in text.stdout and "set at t1" in text.stdout
    data = json.loads(cpl("explain", FIG2, "c3", "--format", "json").stdout)
    assert data["explanation"]["source"] == "t2" and data["recorded"] is True


def test_cli_explains_a_given_guard_anywhere_and_refuses_what_it_cannot():
    given_guard = cpl("explain", FIG2, "c2", "@TestRunner.candidate == candidate")
    assert given_guard.returncode == 0 and "set at t1, read at t2" in given_guard.stdout
    not_choice = cpl("explain", FIG2, "t2")
    assert not_choice.returncode == 2 and "a send, not a choice" in not_choice.stderr
    unknown = cpl("explain", FIG2, "c4")
    assert unknown.returncode == 2 and "no event 'c4'" in unknown.stderr
    bad = cpl("explain", FIG2, "c3", "@Nobody(x)")
    assert bad.returncode == 2 and "Nobody" in bad.stderr
    assert "Traceback" not in bad.stderr + unknown.stderr + not_choice.stderr


def test_since_that_never_held_and_since_broken_by_a_later_event_say_which():
    events = [Event("a1", "A", "act", set={"x": 1}), Event("a2", "A", "act", set={"x": 2}),
              Event("a3", "A", "act", set={"x": 3})]
    trace = Trace(("A",), events=events)
    broken = explain(trace, "a3", "x != 2 S x == 1").step
    assert broken.value is False and broken.source == "a2"
    assert "false at a2, after x == 1 last held at a1" in broken.why
    never = explain(trace, "a3", "true S x == 9").step
    assert never.value is False and "never held" in never.why


def test_a_guard_that_would_explode_is_cut_not_followed():
    events = [Event(f"a{n}", "A", "act", set={"x": n}) for n in range(60)]
    trace = Trace(("A",), events=events)
    guard = "P " * 30 + "x == 0"  # nested P: a DAG whose tree is exponential
    found = explain(trace, "a59", guard)
    assert found.value is True
    assert sum(1 for _ in _steps(found.step)) <= MAX_STEPS + 400
    assert len(found.to_text()) < 2_000_000


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_every_step_has_the_value_the_semantics_gives_at_its_event(data):
    trace = attrs.evolve(data.draw(mscs(max_events=30)), vars=VARIABLES, symbols=SYMBOLS)
    assume(trace.events)
    formula = data.draw(formulas(trace.lifelines, VARIABLES, SYMBOLS, max_leaves=8))
    index = data.draw(st.integers(0, len(trace.events) - 1))
    found = explain(trace, trace.events[index].id, to_text(formula))
    evaluator = Evaluator(trace)
    schema = trace.schema()
    for step in _steps(found.step):
        if not step.repeat:
            expected = evaluator.holds(check(step.formula, schema).formula,
                                       trace.index_of(step.at))
            assert step.value == expected, (step.formula, step.at)
        for term in step.terms:
            if term.set_by is not None:  # the setter set exactly this value
                assert trace.event(term.set_by).set[term.text.split(".")[-1]] == term.value
