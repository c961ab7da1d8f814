"""Long chains of ``&&`` and ``||``: long is not deep.

A chain of 10,000 atoms is a formula 10,000 deep; it parses, prints, re-parses to the
same AST, compiles and evaluates, with the monitor and the reference agreeing.  Only
real nesting counts against the depth limit, and a guard longer than
``MAX_GUARD_LENGTH`` is refused before it is parsed.
"""

from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

import cpl
from cpl.lang import MAX_GUARD_LENGTH, parse, to_text
from cpl.lang.parser import MAX_DEPTH
from cpl.monitor import evaluate_trace
from cpl.semantics import evaluate_all
from cpl.trace.files import loads_trace
from strategies import formulas

import pytest

SCHEMA = cpl.Schema(lifelines=("A", "B", "C"))
TRACE = loads_trace(json.dumps({
    "format": "cpl-msc/1", "lifelines": ["A", "B", "C"], "init": {"A": {"x0": False}},
    "events": [
        {"id": "b1", "lifeline": "B", "kind": "act", "set": {"y": True}},
        {"id": "b2", "lifeline": "B", "kind": "send", "to": "A", "msg": "m"},
        {"id": "a1", "lifeline": "A", "kind": "act", "set": {"x1": True, "x2": 2}},
        {"id": "c1", "lifeline": "C", "kind": "act", "set": {"y": 3}},
        {"id": "a2", "lifeline": "A", "kind": "recv", "msg": "m", "set": {"x0": True}},
        {"id": "a3", "lifeline": "A", "kind": "choice"},
    ]}))


def chain(count: int) -> str:
    """``count`` varied atoms joined by ``&&`` and ``||`` (two of three ``&&``)."""
    words = ("x0", "!x1", "@B.y", "x2 == 2", "!@B.y", "x1")
    atoms = [words[i % len(words)] for i in range(count)]
    return atoms[0] + "".join(f" {'&&' if i % 3 else '||'} {atom}"
                              for i, atom in enumerate(atoms[1:]))


def test_a_chain_of_ten_thousand_atoms_checks_prints_and_parses_back():
    text = chain(10_000)
    guard = cpl.check(text, SCHEMA)
    assert guard.canonical == text
    assert parse(guard.canonical) == guard.formula
    assert json.loads(json.dumps(guard.to_json()))["remote"]["B"]["vars"] == ["y"]


def test_monitor_and_reference_agree_on_a_chain_of_ten_thousand_atoms():
    text = chain(10_000)
    monitor = [(e.id, v) for e, v in evaluate_trace(TRACE, text)]
    reference = [(e.id, v) for e, v in evaluate_all(TRACE, cpl.check(text, SCHEMA).formula)]
    assert monitor == reference
    assert {v for _, v in monitor} == {True, False}, monitor


def test_a_chain_is_long_not_deep():
    for text in ("x && " * (MAX_DEPTH + 1) + "x", "x || " * 5000 + "x",
                 "(x && (x && " * 200 + "x" + "))" * 200):
        assert parse(to_text(cpl.check(text).formula)) == parse(text)
    with pytest.raises(cpl.GuardError, match="nests operators more than"):
        parse("(x && !(x || " * (MAX_DEPTH // 2 + 1) + "x" + "))" * (MAX_DEPTH // 2 + 1))


def test_a_guard_over_the_length_limit_is_refused_before_parsing():
    text = "x && " * 200_000 + "x"  # a megabyte
    with pytest.raises(cpl.GuardError) as caught:
        parse(text)
    assert caught.value.message == (f"the guard is {len(text):,} characters long; at most "
                                    f"{MAX_GUARD_LENGTH:,} are read")
    assert parse("x" + " " * (MAX_GUARD_LENGTH - 1)) == parse("x")


@st.composite
def chains(draw):
    """Small formulas joined by && and || into a chain, parenthesised at random."""
    parts = draw(st.lists(formulas(("A", "B", "C"), ("x0", "x1", "y"), max_leaves=3,
                                   predicates=None), min_size=2, max_size=40))
    text = to_text(parts[0])
    for part in parts[1:]:
        word = draw(st.sampled_from(["&&", "||"]))
        if draw(st.booleans()):
            text = f"({text})"
        text = f"{text} {word} ({to_text(part)})"
    return text


@settings(max_examples=40, deadline=None)
@given(chains())
def test_random_chains_print_back_and_monitor_agrees_with_reference(text):
    guard = cpl.check(text, SCHEMA)
    assert parse(guard.canonical) == guard.formula
    monitor = [v for _, v in evaluate_trace(TRACE, text)]
    assert monitor == [v for _, v in evaluate_all(TRACE, guard.formula)]
