"""Name resolution against a schema, schema files, desugaring and export sets."""

import json

import pytest
from hypothesis import given

import cpl
from cpl import ResolveError, Schema, exports, parse, resolve, to_text
from cpl.lang import desugar
from cpl.lang.ast import (At, Bool, Compare, Const, Not, Or, Pred, Prev, Remote, Since,
    Symbol, Truth, Var)
from cpl.lang.desugar import subformulas
from strategies import LIFELINES, VARIABLES, formulas

SCHEMA = Schema(lifelines=("TestRunner", "Security", "Committer"),
                variables=frozenset({"status", "candidate", "retries"}))
CLOSED = Schema(lifelines=SCHEMA.lifelines, variables=SCHEMA.variables,
                symbols=frozenset({"failed", "passed", "cleared", "critical"}))
TRUE = Bool(True)


def resolved(text, schema=SCHEMA):
    return resolve(parse(text), schema, text)


def resolve_error(text, schema=SCHEMA) -> ResolveError:
    with pytest.raises(ResolveError) as caught:
        resolved(text, schema)
    return caught.value


# -------------------------------------------------------------- variables


def test_declared_variable_is_a_var_and_undeclared_name_is_a_symbol():
    assert resolved("status != failed") == Compare("!=", Var("status"), Symbol("failed"))
    assert resolved("failed") == Truth(Symbol("failed"))
    assert resolved("f(status, passed)", Schema(variables=frozenset({"status"}),
                                                  predicates=_registry_with_f())) == \
        Pred("f", (Var("status"), Symbol("passed")))


def _registry_with_f():
    registry = cpl.lang.predicates.DEFAULT.child()
    registry.register("f", lambda a, b: True)
    return registry


def test_variable_declared_on_any_lifeline_is_a_variable_everywhere():
    assert resolved("@Security(retries > 2) && Y candidate == status") == cpl.ast.And(
        At("Security", Compare(">", Var("retries"), Const(2))),
        Prev(Compare("==", Var("candidate"), Var("status"))))


def test_without_declared_variables_names_stay_as_written():
    formula = parse("status != failed")
    assert resolve(formula, Schema()) == formula == Compare("!=", Var("status"), Var("failed"))


def test_resolution_keeps_spans_for_later_errors():
    formula = resolved("x == status")
    assert formula.left.span is not None and formula.right.span is not None


def test_closed_symbol_list_accepts_listed_symbols():
    assert resolved("status == passed || status == cleared", CLOSED) == Or(
        Compare("==", Var("status"), Symbol("passed")),
        Compare("==", Var("status"), Symbol("cleared")))


def test_closed_symbol_list_rejects_unknown_name_with_a_suggestion():
    error = resolve_error("status == faild", CLOSED)
    assert error.message == ("unknown name 'faild': neither a declared variable nor a symbol; "
                             "did you mean 'failed'?")
    assert (error.line, error.column, error.width) == (1, 11, 5)


def test_closed_symbol_list_suggests_variables_too():
    assert "did you mean 'candidate'?" in resolve_error("candidat == passed", CLOSED).message


def test_closed_symbol_list_without_anything_close():
    error = resolve_error("status == zzzzzz", CLOSED)
    assert error.message == "unknown name 'zzzzzz': neither a declared variable nor a symbol"


# -------------------------------------------------------------- lifelines


def test_unknown_lifeline_suggests_the_closest():
    text = "@TestRuner(status != failed)"
    error = resolve_error(text)
    assert str(error) == "\n".join([
        "guard:1:2: error: unknown lifeline 'TestRuner'; did you mean 'TestRunner'?",
        "  @TestRuner(status != failed)",
        "   ^^^^^^^^^",
        "  hint: known lifelines: TestRunner, Security, Committer",
    ])


@pytest.mark.parametrize(("text", "suggestion", "column"), [
    ("@Securty.status == cleared", "Security", 2),
    ("Seen(Comitter)", "Committer", 6),
    ("x && P @testrunner(x)", "TestRunner", 9),
    ("@A(x) && @TestRunner(@Secrity(x))", None, 2),
])
def test_unknown_lifeline_everywhere_a_lifeline_is_named(text, suggestion, column):
    error = resolve_error(text)
    assert error.message.startswith("unknown lifeline")
    if suggestion:
        assert error.message.endswith(f"did you mean '{suggestion}'?")
    else:
        assert "did you mean" not in error.message
    assert (error.line, error.column) == (1, column)


def test_unknown_lifeline_in_a_multi_line_guard():
    text = "@TestRunner(\n  status != failed) &&\n  @Secrity.candidate == candidate"
    error = resolve_error(text)
    assert (error.line, error.column, error.width) == (3, 4, 7)
    assert str(error).split("\n")[1:3] == ["    @Secrity.candidate == candidate", "     ^^^^^^^"]


def test_unknown_remote_variable_with_suggestion():
    error = resolve_error("@TestRunner.statu == passed")
    assert error.message == "unknown variable 'statu' in @TestRunner.statu; did you mean 'status'?"
    assert str(error).split("\n")[1:3] == ["  @TestRunner.statu == passed", "             ^^^^^^"]


def test_remote_variables_are_checked_only_when_variables_are_declared():
    schema = Schema(lifelines=("A",))
    assert resolved("@A.anything == 1", schema) == Compare("==", Remote("A", "anything"), Const(1))


def test_lifelines_are_checked_only_when_declared():
    assert resolved("@Nobody(x) && @Nowhere.y", Schema()) == parse("@Nobody(x) && @Nowhere.y")


# ------------------------------------------------------------- predicates


def test_unknown_predicate_with_suggestion():
    error = resolve_error("startwith(status, 'pa')")
    assert error.message == "unknown predicate 'startwith'; did you mean 'startswith'?"
    assert error.hint.startswith("known predicates: between, contains, defined, endswith, member")
    assert (error.column, error.width) == (1, len("startwith"))


def test_unknown_predicate_even_without_a_schema():
    with pytest.raises(ResolveError, match="unknown predicate 'nosuch'"):
        cpl.check("nosuch(x)")


@pytest.mark.parametrize(("text", "message"), [
    ("member(status)", "predicate 'member' takes 2 arguments, but 1 given"),
    ("defined()", "predicate 'defined' takes 1 argument, but 0 given"),
    ("defined(x, y)", "predicate 'defined' takes 1 argument, but 2 given"),
    ("between(x, 1)", "predicate 'between' takes 3 arguments, but 2 given"),
])
def test_predicate_arity_errors(text, message):
    error = resolve_error(text)
    assert error.message == message
    assert (error.line, error.column, error.width) == (1, 1, len(text))


def test_predicates_come_from_the_schema_registry():
    registry = cpl.lang.predicates.DEFAULT.child()
    registry.register("urgent", lambda priority: priority == "high")
    schema = Schema(predicates=registry)
    assert resolved("urgent(p)", schema) == Pred("urgent", (Var("p"),))
    with pytest.raises(ResolveError, match="unknown predicate 'urgent'"):
        resolved("urgent(p)")


# ----------------------------------------------------------- schema files


def test_schema_from_dict_accepts_lists_and_objects():
    schema = Schema.from_dict({"lifelines": ["A", "B"], "vars": {"x": "int", "y": "str"},
                               "symbols": ["ok"]})
    assert schema.lifelines == ("A", "B")
    assert schema.variables == frozenset({"x", "y"})
    assert schema.symbols == frozenset({"ok"})
    assert Schema.from_dict({}) == Schema()
    assert Schema.from_dict({"vars": ["x"]}).lifelines is None


@pytest.mark.parametrize(("data", "message"), [
    ([], "schema: error: expected a JSON object with lifelines, vars and symbols"),
    (None, "schema: error: expected a JSON object with lifelines, vars and symbols"),
    ("A", "schema: error: expected a JSON object with lifelines, vars and symbols"),
    ({"lifeline": ["A"]},
     "schema: error: unknown key 'lifeline' (keys are lifelines, vars, symbols)"),
    ({"lifelines": "A"}, "schema: error: 'lifelines' must be a list (or object) of identifiers"),
    ({"lifelines": [1]}, "schema: error: 'lifelines' must be a list (or object) of identifiers"),
    ({"vars": ["a b"]}, "schema: error: 'vars' must be a list (or object) of identifiers"),
    ({"vars": 3}, "schema: error: 'vars' must be a list (or object) of identifiers"),
    ({"symbols": [None]}, "schema: error: 'symbols' must be a list (or object) of identifiers"),
])
def test_schema_from_dict_errors(data, message):
    with pytest.raises(cpl.GuardError) as caught:
        Schema.from_dict(data)
    assert str(caught.value) == message


def test_schema_load(tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"lifelines": ["A"], "vars": ["x"]}), encoding="utf-8")
    assert Schema.load(path) == Schema(lifelines=("A",), variables=frozenset({"x"}))
    assert Schema.load(str(path)) == Schema.load(path)


@pytest.mark.parametrize(("content", "message"), [
    ("{", "the schema is not JSON: Expecting property name enclosed in double quotes"),
    ("", "the schema is not JSON: Expecting value"),
    (b"\xff\xfe", "the schema is not JSON: 'utf-8' codec can't decode"),
    ("[1, 2]", "expected a JSON object with lifelines, vars and symbols"),
    ('{"lifelines": {"A": 1}, "vars": "x"}', "'vars' must be a list (or object) of identifiers"),
])
def test_schema_load_errors_name_the_file(tmp_path, content, message):
    path = tmp_path / "schema.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(cpl.GuardError) as caught:
        Schema.load(path)
    assert str(caught.value).startswith(f"{path}: error: {message}")
    assert caught.value.origin == str(path)


def test_schema_load_missing_file(tmp_path):
    path = tmp_path / "missing.json"
    with pytest.raises(cpl.GuardError) as caught:
        Schema.load(path)
    assert str(caught.value) == f"{path}: error: cannot read the schema: No such file or directory"
    with pytest.raises(cpl.GuardError, match="it is not a regular file"):
        Schema.load(tmp_path)


# -------------------------------------------------------------- desugaring

LIFELINE_ORDER = ("A", "B", "C")


def primitive(text, lifelines=LIFELINE_ORDER):
    return desugar(parse(text), lifelines)


@pytest.mark.parametrize(("text", "expected"), [
    ("O x", "true S x"),
    ("H x", "!(true S !x)"),
    ("Seen(B)", "@B(true)"),
    ("x -> y", "!x || y"),
    ("x -> y -> z", "!x || (!y || z)"),
    ("(x -> y) -> z", "!(!x || y) || z"),
    ("P @A(x)", "@A(true S x)"),
    ("P @B(x S y)", "@B(true S (x S y))"),
    ("P x", "@A(true S x) || @B(true S x) || @C(true S x)"),
    ("P (x && Y y)", "@A(true S (x && Y y)) || @B(true S (x && Y y)) || @C(true S (x && Y y))"),
    ("O H x", "true S !(true S !x)"),
    ("!O x && Y H y", "!(true S x) && Y !(true S !y)"),
    ("@A(O x) S Seen(C)", "@A(true S x) S @C(true)"),
    ("P @A(O x)", "@A(true S (true S x))"),
    ("P @A(P @B(x))", "@A(true S @B(true S x))"),
    ("x S y && @A(Y z)", "x S y && @A(Y z)"),
])
def test_desugaring(text, expected):
    assert primitive(text) == parse(expected)


def test_generic_past_ranges_over_the_given_lifelines_in_order():
    assert primitive("P x", ("B",)) == At("B", Since(TRUE, Truth(Var("x"))))
    assert primitive("P x", ("C", "A")) == Or(At("C", Since(TRUE, Truth(Var("x")))),
                                             At("A", Since(TRUE, Truth(Var("x")))))


def test_generic_past_without_lifelines_is_a_located_error():
    with pytest.raises(cpl.GuardError) as caught:
        cpl.check("x && P y")
    error = caught.value
    assert error.message == "'P φ' needs the set of lifelines; none is known here"
    assert (error.line, error.column) == (1, 6)
    assert str(error).split("\n")[1:3] == ["  x && P y", "       ^"]


def test_check_desugars_generic_past_over_the_schema_lifelines():
    guard = cpl.check("P status == passed", CLOSED)
    assert guard.primitive == resolved(
        "@TestRunner(true S status == passed) || @Security(true S status == passed)"
        " || @Committer(true S status == passed)", CLOSED)
    assert guard.lifelines == ()


def test_check_without_schema_lets_generic_past_range_over_named_lifelines():
    guard = cpl.check("@A(x) && P y")
    assert guard.primitive == parse("@A(x) && @A(true S y)")


@given(formulas(LIFELINES, VARIABLES, sugar=True))
def test_desugared_formulas_are_primitive_and_print_back(formula):
    result = desugar(formula, LIFELINES)
    nodes = list(cpl.ast.walk(result))
    assert not any(isinstance(node, cpl.ast.SUGAR) for node in nodes)
    assert parse(to_text(result)) == result
    assert desugar(result, LIFELINES) == result  # idempotent on primitive formulas


@given(formulas(LIFELINES, VARIABLES, sugar=False))
def test_desugaring_leaves_primitive_formulas_alone(formula):
    assert desugar(formula, ()) == formula


def test_nested_past_is_not_exponential():
    # Each P copies its body into one disjunct per lifeline; the copies are shared.
    guard = cpl.check("P " * 40 + "x", Schema(lifelines=("A", "B")))
    assert len(subformulas(guard.primitive)) == 4 * 40 + 2  # per P: Or, two @, one S
    assert set(exports([guard.primitive])) == {"A", "B"}


# ----------------------------------------------------------------- exports


def test_exports_of_the_committer_guard():
    guard = cpl.check("@TestRunner.candidate == candidate && @Security.candidate == candidate"
                      " && @TestRunner(status != failed S status == passed)"
                      " && @Security(status != critical S status == cleared)")
    result = exports([guard.primitive])
    assert list(result) == ["Security", "TestRunner"]
    assert result["TestRunner"].formulas == (parse("status != failed S status == passed"),)
    assert result["TestRunner"].variables == ("candidate",)
    assert result["Security"].formulas == (parse("status != critical S status == cleared"),)
    assert result["Security"].variables == ("candidate",)


def test_exports_are_distinct_and_in_order_of_first_occurrence():
    result = exports([primitive("@A(y) && @A(x) && @B(@A.v || @A.u) && @A(y) || @A.v > @A.w"),
                      primitive("@A(z) && @C.q")])
    assert result["A"].formulas == (parse("y"), parse("x"), parse("z"))
    assert result["A"].variables == ("v", "u", "w")
    assert result["B"].formulas == (parse("@A.v || @A.u"),)
    assert result["B"].variables == ()
    assert result["C"].formulas == () and result["C"].variables == ("q",)


def test_exports_include_nested_at_bodies():
    result = exports([primitive("@A(@B(x) S @C(Y y))")])
    assert result["A"].formulas == (parse("@B(x) S @C(Y y)"),)
    assert result["B"].formulas == (parse("x"),)
    assert result["C"].formulas == (parse("Y y"),)


def test_exports_of_a_local_formula_are_empty():
    assert exports([primitive("x S Y y && !z")]) == {}


def test_exports_of_seen_and_past():
    result = exports([primitive("Seen(B) && P @A(x)")])
    assert result["B"].formulas == (TRUE,)
    assert result["A"].formulas == (Since(TRUE, Truth(Var("x"))),)


def test_exports_are_keyed_by_lifeline_name_in_sorted_order():
    assert list(exports([primitive("@C(x) && @A(x) && @B.y")])) == ["A", "B", "C"]


def test_not_is_primitive():
    assert primitive("!x") == Not(Truth(Var("x")))
