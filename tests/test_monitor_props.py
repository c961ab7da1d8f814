"""The heart of the library: the compiled monitor equals the literal semantics.

For random MSCs (2–6 lifelines, up to 60 events, non-FIFO delivery, messages
in transit, variables that are never set) and random formulas over every
operator, processed in a random linear extension, the monitor's value at
every event equals the reference evaluator's (which computes the causal past
by graph reachability and reads sugar literally).  Also: two linear
extensions agree, and the pruned monitor agrees with the unpruned one.

The same with up to 20 more lifelines that no formula reads, which exchange
messages with the others and relay between read lifelines: their entries do
not travel (``Program.carried``), yet what they relay must reach the guards.
"""

from __future__ import annotations

import functools
import os

from hypothesis import given, settings, strategies as st

from cpl.lang import ast, desugar
from cpl import to_text
from cpl.monitor import OwnedFormula, compile_guards, replay
from cpl.semantics import Evaluator
from msc_gen import SYMBOLS, VALUES, VARIABLES, mscs, mscs_with_unread, relinearise
from strategies import formulas

# CI runs enough MSC/formula pairs to matter (at least 2,000).
PAIRS = 2000 if os.environ.get("CI") else 300


@functools.lru_cache(maxsize=None)
def _formulas_over(lifelines: tuple[str, ...]):
    # Built once per lifeline set: rebuilding a recursive strategy per example
    # costs more than the test itself.
    # Literals from the values the MSCs store, so comparisons hold often enough to matter.
    return formulas(lifelines, VARIABLES, symbols=SYMBOLS, max_leaves=10, sugar=True,
                    literals=st.sampled_from(VALUES))


@st.composite
def cases(draw):
    trace = draw(mscs())
    formula = draw(_formulas_over(trace.lifelines))
    return trace, formula, draw(st.integers(0, 2 ** 32))


def monitor_values(trace, primitive, prune=True) -> dict[str, bool]:
    program = compile_guards([OwnedFormula(None, primitive)], trace.lifelines, prune=prune)
    return {event.id: monitor.value(primitive) for event, monitor in replay(trace, program)}


def reference_values(trace, formula) -> dict[str, bool]:
    evaluator = Evaluator(trace)
    return {event.id: evaluator.holds(formula, i) for i, event in enumerate(trace.events)}


@settings(max_examples=PAIRS)
@given(cases())
def test_monitor_equals_reference_in_a_random_linear_extension(case):
    trace, formula, seed = case
    shuffled = relinearise(trace, seed)
    primitive = desugar(formula, trace.lifelines)
    expected = reference_values(trace, formula)
    got = monitor_values(shuffled, primitive)
    wrong = sorted(e for e in expected if got[e] != expected[e])
    assert not wrong, f"{to_text(formula)}: monitor differs from the semantics at {wrong}"


@settings(max_examples=PAIRS // 4)
@given(cases())
def test_two_linear_extensions_agree(case):
    trace, formula, seed = case
    primitive = desugar(formula, trace.lifelines)
    assert monitor_values(trace, primitive) == monitor_values(relinearise(trace, seed), primitive)


@settings(max_examples=PAIRS // 4)
@given(cases())
def test_pruned_monitor_equals_unpruned(case):
    trace, formula, seed = case
    primitive = desugar(formula, trace.lifelines)
    assert monitor_values(trace, primitive) == monitor_values(trace, primitive, prune=False)


def _over(formula, read: tuple):
    """``formula`` with every unqualified ``P φ`` spelled out over the ``read`` lifelines
    only (``@R1(O φ) || …``): unqualified, it would read every lifeline of the run."""
    below = [_over(child, read) for child in ast.children(formula)]
    node = ast.rebuild(formula, below) if below else formula
    if type(node) is ast.Past and type(node.body) is not ast.At:
        return ast.either([ast.At(r, ast.Once(node.body)) for r in read])
    return node


@st.composite
def unread_cases(draw):
    trace, read = draw(mscs_with_unread())
    formula = _over(draw(_formulas_over(read)), read)
    return trace, read, formula, draw(st.integers(0, 2 ** 32))


@settings(max_examples=PAIRS // 2, deadline=None)
@given(unread_cases())
def test_monitor_equals_reference_when_unread_lifelines_relay(case):
    trace, read, formula, seed = case
    primitive = desugar(formula, trace.lifelines)
    program = compile_guards([OwnedFormula(None, primitive)], trace.lifelines)
    assert set(program.carried) <= set(read)  # no unread lifeline has an entry
    expected = reference_values(trace, formula)
    got = monitor_values(relinearise(trace, seed), primitive)
    wrong = sorted(e for e in expected if got[e] != expected[e])
    assert not wrong, f"{to_text(formula)}: monitor differs from the semantics at {wrong}"


@settings(max_examples=PAIRS // 4, deadline=None)
@given(unread_cases())
def test_pruned_monitor_equals_unpruned_when_unread_lifelines_relay(case):
    trace, _, formula, _ = case
    primitive = desugar(formula, trace.lifelines)
    assert monitor_values(trace, primitive) == monitor_values(trace, primitive, prune=False)
