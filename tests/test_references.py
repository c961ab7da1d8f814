"""The one reference collector, the one did-you-mean and the one node rebuilder."""

from __future__ import annotations

from hypothesis import given

from cpl.lang import ast, did_you_mean, named_lifelines, references
from cpl import parse
from cpl.lang.mentions import Reference
from strategies import LIFELINES, VARIABLES, formulas


def reads(text: str, owner: str | None = "Me", **options) -> list[tuple]:
    return [(r.kind, r.lifeline, r.variable) for r in references(parse(text), owner, **options)]


def test_each_read_in_order_with_where_a_variable_is_read():
    assert reads("x && @A(y && @B.z) && Seen(C) && @A(y)") == [
        ("var", "Me", "x"), ("at", "A", None), ("var", "A", "y"), ("remote", "B", "z"),
        ("seen", "C", None), ("at", "A", None)]  # another body: exports need each one


def test_past_bodies_are_followed_unless_asked_not_to():
    assert reads("P @A(x) && P y") == [("at", "A", None), ("var", "A", "x"), ("var", "Me", "y")]
    assert reads("P @A(x) && P y", follow_past=False) == [("at", "A", None), ("var", "A", "x")]


def test_without_where_read_variables_have_no_lifeline():
    assert reads("@A(y) && y", None, where_read=False) == [("at", "A", None), ("var", None, "y")]
    assert reads("@A(y)", "Me", where_read=False) == [("at", "A", None), ("var", "Me", "y")]


def test_at_references_carry_their_body():
    (at,) = [r for r in references(parse("@A(x S y)")) if r.kind == "at"]
    assert at == Reference("at", "A") and at.body == parse("x S y")


@given(formulas(LIFELINES, VARIABLES, sugar=True))
def test_named_lifelines_are_those_of_at_seen_and_remote_in_first_mention_order(formula):
    expected: dict = {}
    for node in ast.walk(formula):
        if isinstance(node, (ast.At, ast.Seen)):
            expected.setdefault(node.lifeline)
        for term in ast.terms(node):
            if isinstance(term, ast.Remote):
                expected.setdefault(term.lifeline)
    assert named_lifelines(formula) == tuple(expected)


def test_did_you_mean_suggests_close_spellings_then_other_case():
    assert did_you_mean("Comitter", ["Committer", "TestRunner"]) == "; did you mean 'Committer'?"
    assert did_you_mean("ab", ["AB", "xyz"]) == "; did you mean 'AB'?"
    assert did_you_mean("zzz", ["Committer"]) == ""
    assert did_you_mean(3, [1, 3.5]) == ""  # non-text names from a trace do not crash it


def test_rebuild_replaces_children_and_terms_and_keeps_unchanged_nodes():
    node = parse("x == 1 && @A(y)")
    assert ast.rebuild(node, ast.children(node)) is node
    swapped = ast.rebuild(node, ast.children(node)[::-1])
    assert swapped == parse("@A(y) && x == 1")
    atom = parse("member(x, y)")
    assert ast.rebuild(atom, new_terms=[ast.Var("z"), ast.Var("y")]) == parse("member(z, y)")
    assert ast.fold(parse("!a"), lambda n, kids: ast.rebuild(n, kids) if kids else parse("b")) \
        == parse("!b")
