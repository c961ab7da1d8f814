"""The CPL abstract syntax: frozen values with structural equality.

Equal subformulas are equal (and hash equally) wherever they occur, so the
compiler can share them as one slot of a formula DAG.  Source spans travel
with nodes for error messages but take no part in equality or hashing.
"""

from __future__ import annotations

from typing import Union

import attrs


@attrs.frozen
class Span:
    """Where a node was written: 1-based line and column, 0-based offsets."""

    line: int
    column: int
    start: int
    end: int


# Nodes cache their hash: the compiler keys dictionaries by whole subformulas.
_node = attrs.frozen(cache_hash=True)


def _span_field():
    return attrs.field(default=None, eq=False, repr=False, kw_only=True)


def _typed_value(value):
    # Literals compare by type too: `x == 1` and `x == true` are different
    # formulas even though Python says 1 == True.
    return (type(value).__name__, value)


# ---------------------------------------------------------------- terms


@_node
class Const:
    """A literal: int, float, str, bool or None (``null``)."""

    value: object = attrs.field(eq=_typed_value)
    span: Span | None = _span_field()


@_node
class Var:
    """An unqualified variable, read from the current event's store."""

    name: str
    span: Span | None = _span_field()


@_node
class Symbol:
    """A bare identifier that is not a declared variable: the string of its name."""

    name: str
    span: Span | None = _span_field()


@_node
class Remote:
    """``@A.x``: x at the latest event of lifeline A visible here."""

    lifeline: str
    name: str
    span: Span | None = _span_field()


Term = Union[Const, Var, Symbol, Remote]

# ------------------------------------------------------------- formulas


@_node
class Bool:
    value: bool
    span: Span | None = _span_field()


COMPARISON_OPS = ("==", "!=", "<", "<=", ">", ">=")


@_node
class Compare:
    op: str
    left: Term
    right: Term
    span: Span | None = _span_field()


@_node
class Pred:
    """An application predicate ``p(t, ...)``, looked up by name in a registry."""

    name: str
    args: tuple[Term, ...] = attrs.field(converter=tuple)
    span: Span | None = _span_field()


@_node
class Truth:
    """A term alone: holds iff its value is boolean true."""

    term: Term
    span: Span | None = _span_field()


@_node
class At:
    """``@A(φ)``: φ at the latest event of A visible here."""

    lifeline: str
    body: Formula
    span: Span | None = _span_field()


@_node
class Prev:
    """``Y φ``: φ at the previous local event."""

    body: Formula
    span: Span | None = _span_field()


@_node
class Since:
    left: Formula
    right: Formula
    span: Span | None = _span_field()


@_node
class Not:
    body: Formula
    span: Span | None = _span_field()


@_node
class And:
    left: Formula
    right: Formula
    span: Span | None = _span_field()


@_node
class Or:
    left: Formula
    right: Formula
    span: Span | None = _span_field()


@_node
class Implies:
    left: Formula
    right: Formula
    span: Span | None = _span_field()


@_node
class Past:
    """``P φ``: some causally visible event satisfies φ (sugar)."""

    body: Formula
    span: Span | None = _span_field()


@_node
class Once:
    """``O φ`` = ``true S φ`` (sugar)."""

    body: Formula
    span: Span | None = _span_field()


@_node
class Hist:
    """``H φ`` = ``!(true S !φ)`` (sugar)."""

    body: Formula
    span: Span | None = _span_field()


@_node
class Seen:
    """``Seen(A)`` = ``@A(true)`` (sugar)."""

    lifeline: str
    span: Span | None = _span_field()


Formula = Union[
    Bool, Compare, Pred, Truth, At, Prev, Since, Not, And, Or, Implies, Past, Once, Hist, Seen
]
ATOMS = (Bool, Compare, Pred, Truth)
SUGAR = (Implies, Past, Once, Hist, Seen)


def children(node) -> tuple:
    """The direct subformulas of a formula node (terms are not formulas)."""
    if isinstance(node, (Since, And, Or, Implies)):
        return (node.left, node.right)
    if isinstance(node, (At, Prev, Not, Past, Once, Hist)):
        return (node.body,)
    return ()


def terms(node) -> tuple:
    """The terms an atom reads."""
    if isinstance(node, Compare):
        return (node.left, node.right)
    if isinstance(node, Pred):
        return node.args
    if isinstance(node, Truth):
        return (node.term,)
    return ()


def walk(node):
    """Every formula node below and including ``node``, parents first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(children(current)))
