"""The textual syntax: each construct, precedence, names, literals, AST values."""

import json

import attrs
import pytest
from hypothesis import given, settings, strategies as st

import cpl
from cpl.lang import ast, tables
from cpl import parse, to_text
from cpl.lang.ast import (At, Bool, Compare, Const, Hist, Implies, Not, Once, Or, And, Past,
    Pred, Prev, Remote, Seen, Since, Span, Truth, Var)
from strategies import KEYWORDS, formulas, identifiers


def v(name):
    """A bare name as a formula: ``x`` alone."""
    return Truth(Var(name))


x, y, z = v("x"), v("y"), v("z")
a, b, c, d = v("a"), v("b"), v("c"), v("d")


# ------------------------------------------------------------- constructs

CONSTRUCTS = [
    ("true", Bool(True)),
    ("false", Bool(False)),
    ("(true)", Bool(True)),
    ("x", x),
    ("@A.x", Truth(Remote("A", "x"))),
    ("null", Truth(Const(None))),
    ("1", Truth(Const(1))),
    ("'s'", Truth(Const("s"))),
    ("x == 1", Compare("==", Var("x"), Const(1))),
    ("x != 1", Compare("!=", Var("x"), Const(1))),
    ("x < 1", Compare("<", Var("x"), Const(1))),
    ("x <= 1", Compare("<=", Var("x"), Const(1))),
    ("x > 1", Compare(">", Var("x"), Const(1))),
    ("x >= 1", Compare(">=", Var("x"), Const(1))),
    ("x==y", Compare("==", Var("x"), Var("y"))),
    ("true == x", Compare("==", Const(True), Var("x"))),
    ("x != null", Compare("!=", Var("x"), Const(None))),
    ("@A.x >= @B.y", Compare(">=", Remote("A", "x"), Remote("B", "y"))),
    ("status != failed", Compare("!=", Var("status"), Var("failed"))),
    ("f()", Pred("f", ())),
    ("defined(x)", Pred("defined", (Var("x"),))),
    ("between(x, 1, @A.y)", Pred("between", (Var("x"), Const(1), Remote("A", "y")))),
    ("member(null, 'abc')", Pred("member", (Const(None), Const("abc")))),
    ("@A(x)", At("A", x)),
    ("@A(x S y)", At("A", Since(x, y))),
    ("Y x", Prev(x)),
    ("x S y", Since(x, y)),
    ("x since y", Since(x, y)),
    ("!x", Not(x)),
    ("not x", Not(x)),
    ("x && y", And(x, y)),
    ("x and y", And(x, y)),
    ("x || y", Or(x, y)),
    ("x or y", Or(x, y)),
    ("x -> y", Implies(x, y)),
    ("P x", Past(x)),
    ("P @A(x)", Past(At("A", x))),
    ("O x", Once(x)),
    ("H x", Hist(x)),
    ("Seen(A)", Seen("A")),
    ("Seen( A )", Seen("A")),
    ("((x))", x),
    ("  x\n\t&&\r\n y  ", And(x, y)),
]


@pytest.mark.parametrize(("text", "expected"), CONSTRUCTS)
def test_each_construct_parses_to_its_ast(text, expected):
    assert parse(text) == expected


@pytest.mark.parametrize(("symbolic", "worded"), [
    ("a && b", "a and b"),
    ("a || b", "a or b"),
    ("!a", "not a"),
    ("a S b", "a since b"),
    ("!a S b && c || d", "not a since b and c or d"),
    ("!!a", "not not a"),
    ("not!a", "! not a"),
])
def test_keyword_spellings_are_the_same_formula(symbolic, worded):
    assert parse(symbolic) == parse(worded)


# ------------------------------------------------------------- precedence

PRECEDENCE = [
    ("a && b S c", "a && (b S c)"),
    ("a S b && c", "(a S b) && c"),
    ("!a S b", "(!a) S b"),
    ("not a since b", "(!a) S b"),
    ("a -> b -> c", "a -> (b -> c)"),
    ("a S b S c", "a S (b S c)"),
    ("a || b && c", "a || (b && c)"),
    ("a && b || c", "(a && b) || c"),
    ("a || b || c", "(a || b) || c"),
    ("a && b && c", "(a && b) && c"),
    ("a || b -> c", "(a || b) -> c"),
    ("a -> b || c", "a -> (b || c)"),
    ("a && b -> c && d", "(a && b) -> (c && d)"),
    ("P x S y", "(P x) S y"),
    ("O x S y", "(O x) S y"),
    ("H x S y", "(H x) S y"),
    ("Y x S y", "(Y x) S y"),
    ("x S Y y", "x S (Y y)"),
    ("Y Y x", "Y (Y x)"),
    ("! Y P O H x", "!(Y (P (O (H x))))"),
    ("@A(x) && y", "(@A(x)) && y"),
    ("@A(x) S y", "(@A(x)) S y"),
    ("x == 1 || y", "(x == 1) || y"),
    ("!x == 1", "!(x == 1)"),
    ("Y x != 1", "Y (x != 1)"),
    ("x == 1 S y < 2 && z", "((x == 1) S (y < 2)) && z"),
    ("!(a && b)", "!(a && b)"),
    ("(a -> b) -> c", "(a -> b) -> c"),
    ("(a S b) S c", "(a S b) S c"),
    ("a && @A(b || c -> d)", "a && @A((b || c) -> d)"),
]


@pytest.mark.parametrize(("text", "parenthesised"), PRECEDENCE)
def test_precedence_and_associativity(text, parenthesised):
    assert parse(text) == parse(parenthesised)


def test_precedence_table_is_not_vacuous():
    # The explicit shapes of a few rows, so the table cannot pass by parsing both sides wrongly.
    assert parse("a && b S c") == And(a, Since(b, c))
    assert parse("!a S b") == Since(Not(a), b)
    assert parse("a -> b -> c") == Implies(a, Implies(b, c))
    assert parse("a S b S c") == Since(a, Since(b, c))
    assert parse("a || b && c") == Or(a, And(b, c))
    assert parse("P x S y") == Since(Past(x), y)
    assert parse("Y Y x") == Prev(Prev(x))
    assert parse("@A(x) && y") == And(At("A", x), y)
    assert parse("x == 1 || y") == Or(Compare("==", Var("x"), Const(1)), y)
    assert parse("a && b && c") == And(And(a, b), c)


# ------------------------------------------------------------------ names


NAME_POSITIONS = ["{} == 1", "x == {}", "f({}, x)", "@{}(x)", "@{}.x", "@A.{}", "Seen({})",
                  "{}(x, y)"]
LITERALS = {"true", "false", "null"}  # these are terms: only the name positions proper reject them


@pytest.mark.parametrize(("keyword", "template"), [
    (keyword, template) for keyword in sorted(KEYWORDS) for template in NAME_POSITIONS
    if not (keyword in LITERALS and template in NAME_POSITIONS[:3])])
def test_keywords_are_not_names(keyword, template):
    with pytest.raises(cpl.GuardError):
        parse(template.format(keyword))


@pytest.mark.parametrize("name", ["Sx", "Yes", "Pass", "Once", "History", "nullable", "trueish",
                                  "falsey", "order", "android", "notice", "Seen_", "sinceX",
                                  "Since", "AND", "s", "_", "_1", "x9"])
def test_names_that_begin_like_keywords_are_names(name):
    assert parse(f"{name} == 1") == Compare("==", Var(name), Const(1))
    assert parse(f"@{name}({name})") == At(name, v(name))
    assert parse(f"@{name}.{name}") == Truth(Remote(name, name))


@given(identifiers(), identifiers())
def test_any_identifier_is_a_name(lifeline, name):
    expected = Compare("!=", Remote(lifeline, name), Var(name))
    assert parse(f"@{lifeline}.{name} != {name}") == expected


def test_keywords_are_case_sensitive_and_whole_words():
    with pytest.raises(cpl.GuardError):
        parse("x SINCE y")  # SINCE is a name, and two terms in a row do not parse
    assert parse("Sx S Sy") == Since(v("Sx"), v("Sy"))
    assert parse("xS") == v("xS")


# ------------------------------------------------------------ literals

STRINGS = [
    (r'"plain"', "plain"),
    (r"'single'", "single"),
    (r'""', ""),
    (r"''", ""),
    (r'"it\'s"', "it's"),
    (r"'it\'s'", "it's"),
    (r'''"it's"''', "it's"),
    (r"""'say "hi"'""", 'say "hi"'),
    (r'"say \"hi\""', 'say "hi"'),
    (r'"back\\slash"', "back\\slash"),
    (r'"a\nb"', "a\nb"),
    (r'"a\tb\rc"', "a\tb\rc"),
    (r'"nul\0"', "nul\0"),
    (r'"\u00e9t\u00C9"', "étÉ"),
    ('"été ☃ 😀"', "été ☃ 😀"),
    (r'"\\n"', "\\n"),
    (r'"S && ||"', "S && ||"),
]


@pytest.mark.parametrize(("text", "value"), STRINGS)
def test_string_literals_and_escapes(text, value):
    assert parse(f"x == {text}") == Compare("==", Var("x"), Const(value))


@pytest.mark.parametrize("text", [r'"\q"', r'"\u00"', r'"\u00zz"', r'"\x41"', '"a\nb"', r'"abc',
                                  "'abc", r'"abc\"'])
def test_bad_strings_are_guard_errors(text):
    with pytest.raises(cpl.GuardError):
        parse(f"x == {text}")


NUMBERS = [
    ("0", 0), ("42", 42), ("-7", -7), ("+7", 7), ("007", 7),
    ("12345678901234567890123", 12345678901234567890123),
    ("1.5", 1.5), ("-0.25", -0.25), ("1.", 1.0), (".5", 0.5), ("-.5", -0.5),
    ("1e3", 1000.0), ("1E3", 1000.0), ("2.5e-3", 0.0025), ("-1e+2", -100.0), ("0.0", 0.0),
]


@pytest.mark.parametrize(("text", "value"), NUMBERS)
def test_numbers(text, value):
    parsed = parse(f"x < {text}")
    assert parsed == Compare("<", Var("x"), Const(value))
    assert type(parsed.right.value) is type(value)


@pytest.mark.parametrize("text", ["1e999", "-1e999", "1" * 5000])
def test_numbers_out_of_range_are_guard_errors(text):
    with pytest.raises(cpl.GuardError):
        parse(f"x < {text}")


def test_negative_numbers_next_to_operators():
    assert parse("x==-1") == Compare("==", Var("x"), Const(-1))
    assert parse("-1 -> x") == Implies(Truth(Const(-1)), x)
    assert parse("x->-1") == Implies(x, Truth(Const(-1)))
    assert parse("!-1") == Not(Truth(Const(-1)))


# ----------------------------------------------------------- AST values


def test_spans_are_present_and_point_at_the_source():
    text = "a && @A(x ==\n 'b')"
    formula = parse(text)
    assert formula.span == Span(1, 1, 0, len(text))
    at = formula.right
    assert at.span == Span(1, 6, 5, len(text))
    compare = at.body
    assert (compare.span.line, compare.span.column) == (1, 9)
    assert text[compare.right.span.start:compare.right.span.end] == "'b'"
    assert (compare.right.span.line, compare.right.span.column) == (2, 2)
    for node in ast.walk(formula):
        assert node.span is not None
        for term in ast.terms(node):
            assert term.span is not None


def test_spans_take_no_part_in_equality_or_hashing():
    spaced, tight = parse("x   ==   1"), parse("x==1")
    assert spaced.span != tight.span
    assert spaced == tight == Compare("==", Var("x"), Const(1))
    assert hash(spaced) == hash(tight) == hash(Compare("==", Var("x"), Const(1)))
    assert len({spaced, tight, Compare("==", Var("x"), Const(1))}) == 1
    assert "span" not in repr(spaced)


def test_equal_subformulas_are_equal_values():
    formula = parse("(x S y) && @A(x S y) || Y (x   S   y)")
    found = [n for n in ast.walk(formula) if isinstance(n, Since)]
    assert len(found) == 3
    assert found[0] == found[1] == found[2]
    assert len({hash(n) for n in found}) == 1
    assert len(set(found)) == 1
    assert found[0].span != found[2].span


@given(formulas())
def test_equal_formulas_hash_equally(formula):
    again = parse(to_text(formula))
    assert again == formula and hash(again) == hash(formula)


@pytest.mark.parametrize(("left", "right"), [
    (Const(1), Const(True)),
    (Const(0), Const(False)),
    (Const(1), Const(1.0)),
    (Const(0), Const(None)),
    (Const("1"), Const(1)),
    (Const(""), Const(None)),
    (Var("x"), ast.Symbol("x")),
    (Bool(True), Truth(Const(True))),
    (And(x, y), Or(x, y)),
    (And(x, y), And(y, x)),
])
def test_distinct_values_are_unequal(left, right):
    assert left != right
    assert len({left, right}) == 2


def test_literals_of_different_types_are_different_formulas():
    assert parse("x == 1") != parse("x == true")
    assert parse("x == 1") != parse("x == 1.0")
    assert parse("x == 0") != parse("x == false")
    assert parse("x == 1.0") == parse("x == 1.00") == parse("x == 1e0")
    assert parse("x == 'a'") == parse('x == "a"')


def test_ast_nodes_are_frozen():
    formula = parse("x")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        formula.term = Var("y")


def test_parse_rejects_non_text():
    with pytest.raises(cpl.GuardError):
        parse(b"x")  # type: ignore[arg-type]


@given(st.integers(1, 100))
def test_nesting_up_to_the_limit_parses(depth):
    assert parse("!" * depth + "x") == _nest(Not, depth, x)
    assert parse("@A(" * depth + "x" + ")" * depth) == _nest(lambda f: At("A", f), depth, x)


def _nest(wrap, depth, inner):
    for _ in range(depth):
        inner = wrap(inner)
    return inner


# ----------------------------------------------------------- the shipped tables

def test_the_shipped_parser_tables_are_of_this_grammar():
    """Stale tables are ignored (a slower start, same parse); this says to regenerate."""
    shipped = json.loads(tables.TABLES.read_text(encoding="utf-8"))
    assert shipped["stamp"] == tables.stamp(tables.GRAMMAR.read_text(encoding="utf-8")), \
        "cpl/lang/grammar.tables.json is stale: run python -m cpl.lang.tables"


def _outcome(text):
    try:
        return ("ok", parse(text), to_text(parse(text)), attrs.asdict(parse(text)))  # spans
    except cpl.GuardError as error:
        return ("error", str(error))


@settings(max_examples=300)
@given(formulas(), st.integers(min_value=0, max_value=40), st.sampled_from(
    ["", ")", "(", "&&", "S", "@", "!", "==", "'", '"', "1e999", " x", ".", ",", "->"]))
def test_the_loaded_parser_parses_and_refuses_as_the_built_one(parsers, formula,
                                                                cut, insert):
    """Same trees, same spans, same error text, for guards and broken guards alike."""
    text = to_text(formula)
    broken = text[:cut] + insert + text[cut:]
    loaded, built = parsers
    for guard in (text, broken):
        with loaded():
            from_tables = _outcome(guard)
        with built():
            from_grammar = _outcome(guard)
        assert from_tables == from_grammar


@pytest.fixture(scope="module")
def parsers():
    import contextlib
    from cpl.lang import parser as module
    grammar = tables.GRAMMAR.read_text(encoding="utf-8")
    assert tables.TABLES.exists()
    instances = {"loaded": tables.parser(), "built": tables.Built(grammar)}  # Lark's own
    assert instances["loaded"] is not None

    @contextlib.contextmanager
    def using(which):
        original = module._parser
        module._parser = lambda: instances[which]
        try:
            yield
        finally:
            module._parser = original
    return (lambda: using("loaded")), (lambda: using("built"))


def test_stale_or_broken_tables_are_ignored(tmp_path, monkeypatch):
    grammar = tables.GRAMMAR.read_text(encoding="utf-8")
    for content in ("", "{", '{"stamp": {}}', json.dumps({"stamp": tables.stamp(grammar)}),
                    json.dumps({"stamp": tables.stamp(grammar + " "), "data": {}, "memo": {}})):
        bad = tmp_path / "tables.json"
        bad.write_text(content, encoding="utf-8")
        monkeypatch.setattr(tables, "TABLES", bad)
        assert tables.parser().parse("a && b") == tables.build(grammar).parse("a && b")
