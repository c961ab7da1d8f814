"""Checking, compiling and evaluating cost O(N) in lifelines, not O(N²).

Counted, not timed: the Python function calls (``sys.setprofile``) of loading a trace
with N lifelines of one act each and evaluating it.  Linear work makes four times the
lifelines four times the calls; the old compiler built a table over all N lifelines for
each of them (16 M comprehension calls at N = 4,000): sixteen times the calls.
"""

from __future__ import annotations

import json
import sys

from cpl.monitor import compile_guards, decisions, evaluations, OwnedFormula
from cpl.trace.files import loads_trace
from cpl.lang import check, Schema


def _document(count: int) -> str:
    names = [f"L{i}" for i in range(count)]
    events = [{"id": f"e{i}", "lifeline": name, "kind": "act", "set": {"x": i}}
              for i, name in enumerate(names)]
    events.append({"id": "c", "lifeline": "L1", "kind": "choice",
                   "guard": "x == 1 && @L0.x == 0", "outcome": False})  # L0 unseen
    return json.dumps({"format": "cpl-msc/1", "lifelines": names, "init": {}, "events": events})


def _calls(work) -> int:
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        count += event in ("call", "c_call")

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


def _evaluate(text: str) -> None:
    trace = loads_trace(text)
    assert [(recorded, value) for _, recorded, value in decisions(trace)] == [(False, False)]
    values = [value for _, value in evaluations(trace, "x == 1 || @L0.x == 0")]
    assert values.count(True) == 3  # L0 (x == 0 at L0 itself), L1 and its choice


def test_four_times_the_lifelines_cost_about_four_times_the_calls():
    small, large = _document(300), _document(1200)
    _evaluate(small)  # imports and caches (the parser) out of the count
    ratio = _calls(lambda: _evaluate(large)) / _calls(lambda: _evaluate(small))
    assert 3 < ratio < 5, ratio


def test_lifelines_no_guard_reads_or_owns_share_one_generated_monitor():
    lifelines = [f"L{i}" for i in range(2000)]
    guard = check("x == 1 && @L5.x == 0", Schema(lifelines=tuple(lifelines))).primitive
    program = compile_guards([OwnedFormula("L9", guard), OwnedFormula(None, guard)], lifelines)
    factories = {id(local.factory) for local in program.locals}
    assert len(factories) == 3  # L5 (read: it ships x), L9 (owns a guard), and the rest
    assert program.carried == ("L5",)
    plain = program.local("L1999")
    assert (plain.lifeline, plain.index) == ("L1999", 1999)
    assert "every lifeline no guard reads or owns" in plain.source
