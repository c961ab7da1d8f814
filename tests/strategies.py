"""Reusable hypothesis strategies for CPL: names, literals, terms, formulas, guard texts.

Everything is parameterised by the lifelines, variables and symbols a test
wants, so the same strategies serve the parser round-trip tests here and the
monitor-vs-reference property tests elsewhere::

    from strategies import formulas   # tests/ is on sys.path under pytest
    @given(formulas(["A", "B"], ["x", "y"], sugar=False, literals=small_ints()))

Conventions the generated ASTs follow (so that ``parse(to_text(f)) == f``):

* names are identifiers that are not CPL keywords;
* ``Truth(Const(bool))`` is never built (the parser reads a lone ``true`` as
  ``Bool(True)``); booleans appear as ``Bool`` or inside comparisons;
* bare names are ``Var`` when drawn from ``variables`` and ``Symbol`` when
  drawn from ``symbols`` -- a parser yields ``Var`` for both, the resolver
  turns undeclared ones into ``Symbol``; keep the two lists disjoint;
* predicates come from a registry with their registered arity.
"""

from __future__ import annotations

import string
from typing import Sequence

from hypothesis import strategies as st

from cpl.lang import ast, DEFAULT, Registry, to_text

KEYWORDS = frozenset({"S", "Y", "P", "O", "H", "true", "false", "null",
                      "and", "or", "not", "since", "Seen"})

LIFELINES = ("A", "B", "TestRunner")
VARIABLES = ("x", "y", "status")
SYMBOLS = ("passed", "failed")


def _checked(kind: str, names: Sequence[str]) -> tuple[str, ...]:
    names = tuple(names)
    for name in names:
        if not name.isidentifier() or not name.isascii() or name in KEYWORDS:
            raise ValueError(f"{kind} name {name!r} is not a CPL identifier")
    return names


# ------------------------------------------------------------------ names


def identifiers(max_size: int = 8) -> st.SearchStrategy[str]:
    """CPL identifiers (ASCII, not a keyword); keyword prefixes like ``Sx`` included."""
    first = string.ascii_letters + "_"
    rest = first + string.digits
    return st.one_of(
        st.sampled_from(sorted(KEYWORDS)).flatmap(
            lambda k: st.text(rest, min_size=1, max_size=3).map(lambda tail: k + tail)),
        st.builds(lambda a, b: a + b, st.sampled_from(first), st.text(rest, max_size=max_size - 1)),
    ).filter(lambda name: name not in KEYWORDS)


# --------------------------------------------------------------- literals


def strings(max_size: int = 12) -> st.SearchStrategy[str]:
    """Text rich in what quoting must handle: quotes, backslashes, newlines, unicode."""
    tricky = st.sampled_from(['"', "'", "\\", "\n", "\r", "\t", "\0", "\x7f", "\u00e9",
                              "\u2028", "\u00a0", "\U0001f600", "\ud800", "\udfff", "@", "S"])
    return st.text(st.one_of(tricky, st.characters(exclude_categories=())), max_size=max_size)


def literal_values() -> st.SearchStrategy:
    """Python values with a CPL literal: int, finite float, str, bool, None."""
    return st.one_of(
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        strings(),
        st.booleans(),
        st.none(),
    )


def small_ints(low: int = 0, high: int = 3) -> st.SearchStrategy[int]:
    """A narrow literal domain, so that comparisons against trace values often hold."""
    return st.integers(low, high)


# ------------------------------------------------------------------ terms


def terms(lifelines: Sequence[str], variables: Sequence[str], symbols: Sequence[str] = (), *,
          literals: st.SearchStrategy | None = None, remote: bool = True,
          ) -> st.SearchStrategy:
    """Terms: ``Var`` over ``variables``, ``Symbol`` over ``symbols``,
    ``Remote(A, x)`` over lifelines × variables (when ``remote``), and ``Const``."""
    lifelines = _checked("lifeline", lifelines)
    variables = _checked("variable", variables)
    symbols = _checked("symbol", symbols)
    options = [st.builds(ast.Const, literal_values() if literals is None else literals)]
    if variables:
        options.append(st.builds(ast.Var, st.sampled_from(variables)))
        if remote and lifelines:
            options.append(st.builds(ast.Remote, st.sampled_from(lifelines),
                                     st.sampled_from(variables)))
    if symbols:
        options.append(st.builds(ast.Symbol, st.sampled_from(symbols)))
    return st.one_of(options)


def _not_boolean_const(term) -> bool:
    return not (isinstance(term, ast.Const) and isinstance(term.value, bool))


# --------------------------------------------------------------- formulas


def atoms(lifelines: Sequence[str], variables: Sequence[str], symbols: Sequence[str] = (), *,
          literals: st.SearchStrategy | None = None, remote: bool = True,
          predicates: Registry | None = DEFAULT) -> st.SearchStrategy:
    """Bool, Compare (all six ops), Pred (registered names, right arity) and Truth."""
    term = terms(lifelines, variables, symbols, literals=literals, remote=remote)
    options = [
        st.builds(ast.Bool, st.booleans()),
        st.builds(ast.Compare, st.sampled_from(ast.COMPARISON_OPS), term, term),
        st.builds(ast.Truth, term.filter(_not_boolean_const)),
    ]
    # The default registry's names drawn are the built-ins only: a predicate a test
    # registered there (one that raises, on purpose) must not leak into random guards.
    names = [n for n in (predicates.names() if predicates is not None else ())
             if n not in KEYWORDS and (predicates is not DEFAULT or _builtin(predicates.get(n)))]
    if names:
        def application(name):
            arity = predicates.get(name).arity
            return st.lists(term, min_size=arity, max_size=arity).map(
                lambda args: ast.Pred(name, tuple(args)))
        options.append(st.sampled_from(names).flatmap(application))
    return st.one_of(options)


def _builtin(entry) -> bool:
    return entry.function.__module__ == "cpl.lang.predicates"


def formulas(lifelines: Sequence[str] = LIFELINES, variables: Sequence[str] = VARIABLES,
             symbols: Sequence[str] = (), *, max_leaves: int = 12, sugar: bool = True,
             literals: st.SearchStrategy | None = None, remote: bool = True,
             predicates: Registry | None = DEFAULT) -> st.SearchStrategy:
    """CPL formulas over every operator.

    Primitive: Bool, Compare, Pred, Truth, At, Prev, Since, Not, And, Or.
    With ``sugar`` also Implies, Past, Once, Hist and Seen.  ``At``/``Seen``
    and ``@A.x`` need ``lifelines``; pass ``predicates=None`` for no ``Pred``.
    """
    lifelines = _checked("lifeline", lifelines)
    leaves = atoms(lifelines, variables, symbols, literals=literals, remote=remote,
                   predicates=predicates)
    if sugar and lifelines:
        leaves = st.one_of(leaves, st.builds(ast.Seen, st.sampled_from(lifelines)))

    def extend(children):
        unary = [ast.Prev, ast.Not] + ([ast.Past, ast.Once, ast.Hist] if sugar else [])
        binary = [ast.Since, ast.And, ast.Or] + ([ast.Implies] if sugar else [])
        options = [
            st.builds(lambda kind, body: kind(body), st.sampled_from(unary), children),
            st.builds(lambda kind, left, right: kind(left, right), st.sampled_from(binary),
                      children, children),
        ]
        if lifelines:
            options.append(st.builds(ast.At, st.sampled_from(lifelines), children))
        return st.one_of(options)

    return st.recursive(leaves, extend, max_leaves=max_leaves)


def guard_texts(*args, **kwargs) -> st.SearchStrategy[str]:
    """Canonical texts of random formulas (same parameters as ``formulas``)."""
    return formulas(*args, **kwargs).map(to_text)


# -------------------------------------------------------------- mutations

# Characters and words a mutation inserts: CPL's own alphabet, so that
# mutants stay close to valid guards and reach deep into the parser.
CPL_PIECES = (list("()@.,!=<>&|-+\"'\\ \t\n_0123456789aAxSYPOH")
              + ["==", "!=", "<=", ">=", "&&", "||", "->", " S ", " since ", "and", "or", "not",
                 "true", "false", "null", "Seen", "@A", "@A.", "1e9", "\\u12", "\u00e9"])


@st.composite
def mutated(draw, texts: st.SearchStrategy[str], max_edits: int = 3) -> str:
    """``texts`` after a few character edits: delete, insert, replace, swap."""
    text = draw(texts)
    for _ in range(draw(st.integers(1, max_edits))):
        edit = draw(st.sampled_from(("delete", "insert", "replace", "swap")))
        i = draw(st.integers(0, len(text)))
        if edit == "insert":
            text = text[:i] + draw(st.sampled_from(CPL_PIECES)) + text[i:]
        elif not text or i == len(text):
            continue
        elif edit == "delete":
            text = text[:i] + text[i + 1:]
        elif edit == "replace":
            text = text[:i] + draw(st.sampled_from(CPL_PIECES)) + text[i + 1:]
        elif i + 1 < len(text):
            text = text[:i] + text[i + 1] + text[i] + text[i + 2:]
    return text


def msgpack_values() -> st.SearchStrategy:
    """Small values of every type msgpack decodes (bytes, floats, 64-bit ints, nesting): what
    a hostile frame's fields may hold."""
    return st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) |
                        st.floats() | st.text(max_size=5) | st.binary(max_size=5),
                        lambda inner: st.lists(inner, max_size=3) |
                        st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=8)
