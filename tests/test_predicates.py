"""Application predicates: the built-ins, registration, arity; and value comparison."""

import math

import pytest
from hypothesis import given, strategies as st

import cpl
from cpl.lang import DEFAULT, Registry, predicate, COMPARE, is_number
from cpl.lang.predicates import Predicate
from cpl.lang.values import equal

BUILTINS = {"member": 2, "startswith": 2, "endswith": 2, "contains": 2, "between": 3, "defined": 1}


def call(name, *args):
    return DEFAULT.get(name).function(*args)


def test_builtins_are_registered_with_their_arity():
    assert {name: DEFAULT.get(name).arity for name in BUILTINS} == BUILTINS
    assert set(BUILTINS) <= set(DEFAULT.names())
    assert DEFAULT.names() == sorted(DEFAULT.names())
    assert DEFAULT.get("nosuch") is None


def test_builtins_have_a_one_line_doc():
    for name in BUILTINS:
        doc = DEFAULT.get(name).doc
        assert doc and "\n" not in doc


@pytest.mark.parametrize(("name", "args", "expected"), [
    ("member", ("b", ["a", "b"]), True),
    ("member", ("c", ["a", "b"]), False),
    ("member", (1, [1.0, 2]), True),        # numbers compare numerically
    ("member", (True, [1, 2]), False),      # booleans are not numbers
    ("member", (1, [True]), False),
    ("member", (None, [None]), True),
    ("member", ("1", [1]), False),
    ("member", ("b", ("a", "b")), True),
    ("member", ("bc", "abcd"), True),       # a substring of a string
    ("member", ("x", "abcd"), False),
    ("member", (1, "abc1"), False),         # wrong types: false, not an exception
    ("member", ("a", None), False),
    ("member", ("a", 3), False),
    ("member", ("a", {"a": 1}), False),
    ("startswith", ("passed", "pass"), True),
    ("startswith", ("passed", "ed"), False),
    ("startswith", ("passed", ""), True),
    ("startswith", (12, "1"), False),
    ("startswith", ("12", 1), False),
    ("startswith", (None, None), False),
    ("endswith", ("passed", "ed"), True),
    ("endswith", ("passed", "pass"), False),
    ("endswith", (["a"], "a"), False),
    ("contains", ("candidate-7", "-7"), True),
    ("contains", ("candidate", "x"), False),
    ("contains", (["x"], "x"), False),      # strings only
    ("contains", ("1", 1), False),
    ("between", (2, 1, 3), True),
    ("between", (1, 1, 3), True),           # inclusive
    ("between", (3, 1, 3.0), True),
    ("between", (0.5, 1, 3), False),
    ("between", (2, 3, 1), False),          # an empty range
    ("between", (True, 0, 2), False),       # booleans are not numbers
    ("between", (1, False, 2), False),
    ("between", ("b", "a", "c"), False),    # numbers only
    ("between", (None, 0, 1), False),
    ("between", (2, None, 3), False),
    ("between", (math.nan, 0, 1), False),
    ("defined", (None,), True),             # null is a value
    ("defined", (0,), True),
    ("defined", ("",), True),
])
def test_builtin_results(name, args, expected):
    assert call(name, *args) is expected


@given(st.sampled_from(sorted(BUILTINS)).flatmap(
    lambda name: st.tuples(st.just(name), st.lists(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
                  st.lists(st.integers(), max_size=3),
                  st.dictionaries(st.text(max_size=2), st.none())),
        min_size=BUILTINS[name], max_size=BUILTINS[name]))))
def test_builtins_never_raise_and_return_booleans(name_args):
    name, args = name_args
    assert call(name, *args) in (True, False)


# ----------------------------------------------------------- registration


def test_custom_predicate_on_a_child_registry():
    registry = DEFAULT.child()

    @predicate("is_urgent", registry=registry)
    def is_urgent(priority) -> bool:
        """Priority is high or critical.

        More words that are not the summary.
        """
        return priority in ("high", "critical")

    entry = registry.get("is_urgent")
    assert entry == Predicate("is_urgent", 1, is_urgent, "Priority is high or critical.")
    assert entry.function("high") is True
    assert registry.get("member") is DEFAULT.get("member")       # sees the built-ins
    assert DEFAULT.get("is_urgent") is None                       # and does not leak into them
    assert "is_urgent" in registry.names() and "member" in registry.names()
    assert registry.names() == sorted(registry.names())

    schema = cpl.Schema(predicates=registry)
    assert cpl.check("is_urgent(@Triage.priority) && member(x, y)", schema).canonical == \
        "is_urgent(@Triage.priority) && member(x, y)"
    with pytest.raises(cpl.ResolveError, match="takes 1 argument, but 2 given"):
        cpl.check("is_urgent(a, b)", schema)


def test_decorator_uses_the_function_name_and_returns_the_function():
    registry = Registry()

    def same_team(a, b):
        return a == b

    assert predicate(registry=registry)(same_team) is same_team
    assert registry.get("same_team").arity == 2
    assert registry.names() == ["same_team"]


def test_child_may_shadow_a_parent_predicate():
    registry = DEFAULT.child()
    registry.register("member", lambda value: True)
    assert registry.get("member").arity == 1
    assert DEFAULT.get("member").arity == 2
    assert registry.names().count("member") == 1


def test_grandchild_sees_both_ancestors():
    child = DEFAULT.child()
    child.register("p", lambda: True)
    grandchild = child.child()
    grandchild.register("q", lambda a: True)
    assert {"p", "q", "member"} <= set(grandchild.names())
    assert child.get("q") is None


@pytest.mark.parametrize(("function", "arity"), [
    (lambda: True, 0),
    (lambda a: True, 1),
    (lambda a, b, c, d: True, 4),
    (lambda a, b=1: True, 2),               # every positional parameter is passed
    (lambda a, /, b: True, 2),
    (lambda a, *, key=None: True, 1),       # keyword-only with a default is never passed
    (lambda a, **options: True, 1),
])
def test_arity_inference(function, arity):
    assert Registry().register("p", function).arity == arity


def test_arity_inference_of_a_bound_method():
    class Checker:
        def check(self, value):
            return bool(value)

    assert Registry().register("p", Checker().check).arity == 1


@pytest.mark.parametrize("function", [lambda *values: True, lambda a, *, b: True])
def test_unclear_arity_must_be_given(function):
    with pytest.raises(ValueError, match="pass arity=N"):
        Registry().register("p", function)
    assert Registry().register("p", function, arity=2).arity == 2
    registry = Registry()
    predicate("p", registry=registry, arity=3)(function)
    assert registry.get("p").arity == 3


@pytest.mark.parametrize("name", ["not a name", "1st", "", "a-b"])
def test_predicate_names_must_be_identifiers(name):
    with pytest.raises(ValueError, match="not an identifier"):
        Registry().register(name, lambda: True)


def test_lambda_needs_a_name():
    with pytest.raises(ValueError):
        predicate(registry=Registry())(lambda value: True)


# ------------------------------------------------------------------ values


@pytest.mark.parametrize(("a", "b", "expected"), [
    (1, 1.0, True), (1, True, False), (0, False, False), (True, True, True),
    ("1", 1, False), (None, None, True), (None, 0, False), ("a", "a", True),
    (math.nan, math.nan, False), ([1], [1], True), ([1], (1,), False),
])
def test_equality_without_coercion(a, b, expected):
    assert equal(a, b) is expected
    assert COMPARE["=="](a, b) is expected
    assert COMPARE["!="](a, b) is (not expected)


@pytest.mark.parametrize(("op", "a", "b", "expected"), [
    ("<", 1, 2, True), ("<", 1, 1.5, True), ("<=", 2, 2.0, True), (">", "b", "a", True),
    (">=", "a", "a", True), ("<", "a", "b", True),
    ("<", 1, "2", False), (">", "2", 1, False), ("<", None, 1, False), (">=", None, None, False),
    ("<", False, True, False), ("<=", True, 1, False), ("<", [1], [2], False),
])
def test_ordering_only_between_numbers_or_between_strings(op, a, b, expected):
    assert COMPARE[op](a, b) is expected


def test_is_number():
    assert is_number(1) and is_number(1.5) and not is_number(True) and not is_number("1")



# ----------------------------------------------------- every decorator form


def test_every_decorator_form_registers(monkeypatch):
    monkeypatch.setattr(DEFAULT, "_own", dict(DEFAULT._own))  # undone after the test

    @predicate
    def bare(value):
        return value == 1

    @predicate()
    def empty_call(value):
        return value == 2

    @predicate("named")
    def under_a_name(value):
        return value == 3

    @predicate(name="keyword", arity=2)
    def with_arity(*values):
        return len(values) == 2

    assert bare(1) is True and empty_call(2) is True  # the functions themselves come back
    for name, arity in (("bare", 1), ("empty_call", 1), ("named", 1), ("keyword", 2)):
        entry = DEFAULT.get(name)
        assert entry is not None and entry.arity == arity, name
    assert DEFAULT.get("under_a_name") is None
    assert cpl.check("bare(x) && named(x) && keyword(x, y)", cpl.Schema()).canonical == \
        "bare(x) && named(x) && keyword(x, y)"


def test_bare_decorator_form_with_a_registry_and_arity():
    registry = Registry()

    def spread(*values):
        return True

    assert predicate(spread, registry=registry, arity=3) is spread
    assert registry.get("spread").arity == 3


@pytest.mark.parametrize("name", [3, ["p"]])
def test_a_name_that_is_not_text_is_refused(name):
    with pytest.raises(TypeError, match="takes a name"):
        predicate(name, registry=Registry())
