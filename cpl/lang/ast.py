"""The CPL abstract syntax: frozen values with structural equality.

Equal subformulas are equal (and hash equally) wherever they occur, so the
compiler can share them as one slot of a formula DAG.  Source spans travel
with nodes for error messages but take no part in equality or hashing.
"""

from __future__ import annotations

import weakref
from typing import Union

import attrs


@attrs.frozen
class Span:
    """Where a node was written: 1-based line and column, 0-based offsets."""

    line: int
    column: int
    start: int
    end: int


def _node(cls):
    """A frozen AST class.  Nodes cache their hash (the compiler keys dictionaries by
    whole subformulas).  Equality is ``_equal``: attrs would compare field by field
    with ``==``, recursing as deep as the formula and unfolding a shared DAG (nested
    ``P``) into its exponential tree, even when both sides are the very same object.
    ``repr``: attrs' text, one function here (attrs generating one a class: ~4 ms a start)."""
    cls = attrs.frozen(cache_hash=True, repr=False)(cls)
    _SHALLOW_EQUAL[cls] = cls.__eq__
    shown = tuple(field.name for field in attrs.fields(cls) if field.repr)
    cls.__repr__ = lambda self: f"{type(self).__qualname__}(" + ", ".join(
        f"{name}={getattr(self, name)!r}" for name in shown) + ")"

    def __eq__(self, other):
        if self is other:
            return True
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _equal(self, other)

    cls.__eq__ = __eq__
    return cls


_SHALLOW_EQUAL: dict = {}  # class -> attrs' field-by-field equality (used on atoms only)


def _equal(left, right) -> bool:
    """Structural equality without recursion, each pair of objects compared once."""
    compared: set = set()
    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        if a is b or (id(a), id(b)) in compared:
            continue
        compared.add((id(a), id(b)))
        kind = type(a)
        if type(b) is not kind:
            return False
        fields = _FORMULA_FIELDS.get(kind)
        if fields is None:  # an atom or Seen: terms only below, attrs compares them
            if not _SHALLOW_EQUAL[kind](a, b):
                return False
            continue
        if kind is At and a.lifeline != b.lifeline:
            return False
        stack.extend((getattr(a, f), getattr(b, f)) for f in fields)
    return True


def _span_field():
    return attrs.field(default=None, eq=False, repr=False, kw_only=True)


def _as_tuple(values) -> tuple:  # not the builtin: attrs would tokenize its signature (~7 ms)
    return tuple(values)


def _typed_value(value):
    # Literals compare by type too: `x == 1` and `x == true` differ though 1 == True.
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
    args: tuple[Term, ...] = attrs.field(converter=_as_tuple)
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


Formula = Union[Bool, Compare, Pred, Truth, At, Prev, Since, Not, And, Or, Implies, Past, Once,
                Hist, Seen]
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


def fold(formula, combine):
    """``combine(node, [its children's results])`` for every distinct node object below
    and including ``formula``, children first, left to right; the result of ``formula``.

    Without recursion: a chain of 10,000 ``&&`` is a formula 10,000 deep,
    and every pass that maps a formula to something is one call of this.
    """
    return fold_all([formula], combine)[0]


def fold_all(formulas, combine) -> list:
    """``fold`` of several formulas, their common subformulas combined once."""
    formulas = list(formulas)
    done: dict[int, object] = {}
    stack = [(formula, False) for formula in reversed(formulas)]
    while stack:
        node, expanded = stack.pop()
        if id(node) in done:
            continue
        kids = children(node)
        if kids and not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in reversed(kids) if id(child) not in done)
            continue
        done[id(node)] = combine(node, [done[id(child)] for child in kids])
    return [done[id(formula)] for formula in formulas]


def hashed(formula):
    """``formula``, its hash cached bottom-up: hashing it later recurses no more."""
    fold(formula, lambda node, _: hash(node))
    return formula


_FORMULA_FIELDS = {Since: ("left", "right"), And: ("left", "right"), Or: ("left", "right"),
                   Implies: ("left", "right"), At: ("body",), Prev: ("body",), Not: ("body",),
                   Past: ("body",), Once: ("body",), Hist: ("body",)}
_TERM_FIELDS = {Compare: ("left", "right"), Truth: ("term",)}


def rebuild(node, new_children=None, new_terms=None, **changes):
    """``node`` with its subformulas (in ``children`` order), its terms (in ``terms``
    order) and any other fields replaced; ``node`` itself when nothing changes.

    The one place that knows which field holds which child, for every pass that
    maps over a formula (resolving names, desugaring, renaming lifelines).
    """
    if new_children is not None:
        for field, child in zip(_FORMULA_FIELDS.get(type(node), ()), new_children):
            if getattr(node, field) is not child:
                changes[field] = child
    if new_terms is not None:
        new_terms = tuple(new_terms)
        if isinstance(node, Pred):
            if new_terms != node.args or any(a is not b for a, b in zip(new_terms, node.args)):
                changes["args"] = new_terms
        else:
            for field, term in zip(_TERM_FIELDS.get(type(node), ()), new_terms):
                if getattr(node, field) is not term:
                    changes[field] = term
    return attrs.evolve(node, **changes) if changes else node


def either(formulas):
    """The disjunction of one or more formulas as a balanced tree: its depth grows with
    the log of their number, so no later recursive pass meets a long ``||`` chain."""
    formulas = list(formulas)
    if len(formulas) == 1:
        return formulas[0]
    half = (len(formulas) + 1) // 2
    return Or(either(formulas[:half]), either(formulas[half:]))


# Hash-consing: one object per distinct formula, so that comparing two formulas
# compares their children by identity (constant time) instead of unfolding a DAG
# whose tree (nested ``P``) is exponential.  Values are held weakly: a formula no
# one uses any more leaves the table.
_INTERNED: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def _intern_key(node) -> tuple:
    kind = type(node)
    fields = _FORMULA_FIELDS.get(kind)
    if fields is not None:
        extra = (node.lifeline,) if kind is At else ()
        return (kind, *extra, *(id(getattr(node, f)) for f in fields))
    if kind is Compare:
        return (kind, node.op, node.left, node.right)
    if kind is Pred:
        return (kind, node.name, node.args)
    if kind is Truth:
        return (kind, node.term)
    if kind is Bool:
        return (kind, node.value)
    if kind is Seen:
        return (kind, node.lifeline)
    raise TypeError(f"not a CPL formula: {node!r}")


def shared(formula):
    """``formula`` with every subformula replaced by the one interned object equal to it.

    Linear in the number of distinct objects (not the tree size); no recursion.
    """
    return shared_all([formula])[0]


def shared_all(formulas) -> list:
    """``shared`` of several formulas, walking their common subformulas once."""
    return fold_all(formulas, _interned)


def _interned(node, kids):
    node = rebuild(node, kids) if kids else node
    key = _intern_key(node)
    found = _INTERNED.get(key)
    if found is None:
        _INTERNED[key] = found = node
        hash(found)  # cached now, bottom-up: hashing a deep formula later recurses no more
    return found
