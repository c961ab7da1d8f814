"""Sugar → the primitive CPL of the paper (atoms, @, Y, S, !, &&, ||).

The monitor only knows primitive operators; the reference evaluator reads
the sugar literally, so the property tests also check these equations:

    φ -> ψ   = !φ || ψ              O φ     = true S φ
    H φ      = !(true S !φ)         Seen(A) = @A(true)
    P @A(φ)  = @A(true S φ)         P φ     = @B1(true S φ) || … || @Bn(true S φ)
"""

from __future__ import annotations

import functools

import attrs

from . import ast
from .errors import GuardError

TRUE = ast.Bool(True)


def desugar(formula: ast.Formula, lifelines, source: str = "") -> ast.Formula:
    """Primitive form; ``lifelines`` (ordered) are what an unqualified ``P`` ranges over.

    ``source`` is the guard text, for the caret of an error.
    """
    try:
        return _desugar(formula, tuple(lifelines))
    except GuardError as error:
        if error.line and not error.source:
            error.source = source
        raise


def _desugar(node, lifelines: tuple):
    kind = type(node)
    if kind is ast.Implies:
        return ast.Or(ast.Not(_desugar(node.left, lifelines)), _desugar(node.right, lifelines))
    if kind is ast.Once:
        return ast.Since(TRUE, _desugar(node.body, lifelines))
    if kind is ast.Hist:
        return ast.Not(ast.Since(TRUE, ast.Not(_desugar(node.body, lifelines))))
    if kind is ast.Seen:
        return ast.At(node.lifeline, TRUE)
    if kind is ast.Past:
        if isinstance(node.body, ast.At):
            return ast.At(node.body.lifeline, ast.Since(TRUE, _desugar(node.body.body, lifelines)))
        if not lifelines:
            where = (node.span.line, node.span.column) if node.span else ()
            raise GuardError("'P φ' needs the set of lifelines; none is known here", "", *where,
                             hint="write P @A(φ) for one lifeline, or give a schema")
        # One shared node for every lifeline: nested P stays a DAG of linear size
        # (and comparing its copies stays linear, for they are the same object).
        once = ast.Since(TRUE, _desugar(node.body, lifelines))
        return functools.reduce(ast.Or, [ast.At(b, once) for b in lifelines])
    if kind in (ast.At, ast.Prev, ast.Not):
        return attrs.evolve(node, body=_desugar(node.body, lifelines), span=None)
    if kind in (ast.Since, ast.And, ast.Or):
        return attrs.evolve(node, left=_desugar(node.left, lifelines),
                            right=_desugar(node.right, lifelines), span=None)
    return node


@attrs.frozen
class Exports:
    """What other lifelines must ship about one lifeline: ``@B(θ)`` bodies and ``@B.x`` names."""

    formulas: tuple[ast.Formula, ...]
    variables: tuple[str, ...]


def exports(formulas) -> dict[str, Exports]:
    """For each lifeline B: the θ with ``@B(θ)`` and the x with ``@B.x`` in primitive ``formulas``.

    Order is first occurrence (parents before children), so slot numbers are stable.
    """
    bodies: dict[str, dict] = {}
    names: dict[str, dict] = {}
    for formula in formulas:
        for node in _distinct(formula):
            if isinstance(node, ast.At):
                bodies.setdefault(node.lifeline, {}).setdefault(node.body, None)
            for term in ast.terms(node):
                if isinstance(term, ast.Remote):
                    names.setdefault(term.lifeline, {}).setdefault(term.name, None)
    return {b: Exports(tuple(bodies.get(b, ())), tuple(names.get(b, ())))
            for b in sorted(set(bodies) | set(names))}


def subformulas(formula: ast.Formula) -> set:
    """The distinct subformulas (equal ones counted once)."""
    return set(_distinct(formula))


def _distinct(formula: ast.Formula):
    """Like ``ast.walk`` but visits equal subformulas once: desugared ``P`` shares
    its body between lifelines, and nested ``P`` would make the tree exponential."""
    seen: set = set()
    stack = [formula]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        yield current
        stack.extend(reversed(ast.children(current)))
