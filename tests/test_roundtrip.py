"""Printer and parser agree, and no input makes them fail with anything but GuardError.

The two fuzz tests run a fixed, large number of examples whatever the
hypothesis profile (6000 random texts + 6000 mutated guards).
"""

import string

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import cpl
from cpl import GuardError, Schema, parse, resolve, to_text
from strategies import (
    CPL_PIECES, KEYWORDS, LIFELINES, SYMBOLS, VARIABLES, formulas, guard_texts, mutated,
)

FUZZ_EXAMPLES = 6000
fuzz = settings(max_examples=FUZZ_EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

OPEN = Schema()
DECLARED = Schema(lifelines=LIFELINES, variables=frozenset(VARIABLES))
CLOSED = Schema(lifelines=LIFELINES, variables=frozenset(VARIABLES), symbols=frozenset(SYMBOLS))


# -------------------------------------------------------------- round trip


@given(formulas(sugar=True))
def test_parse_of_printed_formula_is_the_formula(formula):
    text = to_text(formula)
    assert parse(text) == formula
    assert to_text(parse(text)) == text


@given(formulas(sugar=False, max_leaves=20))
def test_round_trip_of_primitive_formulas(formula):
    assert parse(to_text(formula)) == formula


@given(formulas(LIFELINES, VARIABLES, SYMBOLS))
def test_round_trip_through_the_resolver_recovers_symbols(formula):
    # The parser cannot tell a symbol from a variable; the schema can.
    assert resolve(parse(to_text(formula)), DECLARED) == formula
    assert resolve(parse(to_text(formula)), CLOSED) == formula


@given(formulas(LIFELINES, VARIABLES, SYMBOLS, max_leaves=8))
def test_check_keeps_the_formula_and_its_canonical_text(formula):
    guard = cpl.check(to_text(formula), CLOSED)
    assert guard.formula == formula
    assert guard.canonical == to_text(formula)
    assert not any(isinstance(node, cpl.ast.SUGAR) for node in cpl.ast.walk(guard.primitive))


@given(mutated(guard_texts(max_leaves=8)))
def test_canonical_text_is_a_fixed_point(text):
    try:
        formula = parse(text)
    except GuardError:
        return
    canonical = to_text(formula)
    assert parse(canonical) == formula
    assert to_text(parse(canonical)) == canonical


@given(formulas(sugar=True))
def test_printing_adds_no_redundant_parentheses_to_atoms(formula):
    text = to_text(formula)
    # every '(' is a call, an @A(...), a Seen(...) or needed by precedence:
    # stripping one pair of outer parentheses never survives a reparse.
    assert not (text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]))


def _balanced(text):
    depth, quote, escaped = 0, None, False
    for char in text:
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


# -------------------------------------------------------------------- fuzz

ALPHABET = list(string.ascii_letters + string.digits + "()@.,!=<>&|-\"'\\ _\t\n+#;")
FUZZ_PIECES = ALPHABET + sorted(KEYWORDS) + CPL_PIECES


def _only_guard_errors(text: str) -> None:
    """Every entry point fails, if at all, with GuardError."""
    try:
        formula = parse(text)
    except GuardError as error:
        assert error.line >= 1 and error.column >= 1
        formula = None
    if formula is not None:
        assert parse(to_text(formula)) == formula
    for schema in (OPEN, CLOSED):
        try:
            cpl.check(text, schema).to_json()
        except GuardError as error:
            assert str(error)


@fuzz
@given(st.one_of(
    st.lists(st.sampled_from(FUZZ_PIECES), max_size=30).map("".join),
    st.text(st.sampled_from(ALPHABET), max_size=40),
    st.text(max_size=20),
))
@example("@TestRunner(status!=failed S")
@example('"\\')
@example("x == 1" + "0" * 5000)
@example("!" * 5000 + "x")
@example("P P P x")
def test_random_text_raises_nothing_but_guard_error(text):
    _only_guard_errors(text)


@fuzz
@given(mutated(guard_texts(LIFELINES, VARIABLES, SYMBOLS, max_leaves=6), max_edits=4))
def test_mutated_guards_raise_nothing_but_guard_error(text):
    _only_guard_errors(text)
