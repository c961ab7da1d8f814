"""Sugar → the primitive CPL of the paper (atoms, @, Y, S, !, &&, ||).

The monitor only knows primitive operators; the reference evaluator reads
the sugar literally, so the property tests also check these equations:

    φ -> ψ   = !φ || ψ              O φ     = true S φ
    H φ      = !(true S !φ)         Seen(A) = @A(true)
    P @A(φ)  = @A(true S φ)         P φ     = @B1(true S φ) || … || @Bn(true S φ)
"""

from __future__ import annotations

import attrs

from . import ast
from ..errors import GuardError
from .mentions import references

TRUE = ast.Bool(True)


def desugar(formula: ast.Formula, lifelines, source: str = "") -> ast.Formula:
    """Primitive form; ``lifelines`` (ordered) are what an unqualified ``P`` ranges over.

    ``source`` is the guard text, for the caret of an error.  The result is
    hash-consed (``ast.shared``): equal subformulas are one object, so the
    copies ``P`` makes of its body cost nothing to compare or to walk.
    """
    try:
        return ast.shared(_desugar(formula, tuple(lifelines)))
    except GuardError as error:
        if error.line and not error.source:
            error.source = source
        raise


def past(body: ast.Formula, lifelines: tuple) -> ast.Formula:
    """``P body`` in primitive form (``body`` already primitive): the printer re-sugars
    exactly this shape."""
    if isinstance(body, ast.At):
        return ast.At(body.lifeline, ast.Since(TRUE, body.body))
    # One shared node for every lifeline: nested P stays a DAG of linear size.
    once = ast.Since(TRUE, body)
    return ast.either([ast.At(b, once) for b in lifelines])


def _desugar(formula, lifelines: tuple):
    """Children first (``ast.fold``: no recursion); an unqualified ``P`` without lifelines
    is refused first, the outermost leftmost one named."""
    if not lifelines:
        for node in ast.walk(formula):
            if type(node) is ast.Past and not isinstance(node.body, ast.At):
                where = (node.span.line, node.span.column) if node.span else ()
                raise GuardError("'P φ' needs the set of lifelines; none is known here", "",
                                 *where, hint="write P @A(φ) for one lifeline, or give a schema")
    return ast.fold(formula, lambda node, kids: _primitive(node, kids, lifelines))


def _primitive(node, kids: list, lifelines: tuple):
    """``node`` in primitive form, given its children in primitive form."""
    kind = type(node)
    if kind is ast.Implies:
        return ast.Or(ast.Not(kids[0]), kids[1])
    if kind is ast.Once:
        return ast.Since(TRUE, kids[0])
    if kind is ast.Hist:
        return ast.Not(ast.Since(TRUE, ast.Not(kids[0])))
    if kind is ast.Seen:
        return ast.At(node.lifeline, TRUE)
    if kind is ast.Past:
        return past(kids[0], lifelines)
    if kids:
        return ast.rebuild(node, kids, span=None)
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
        for read in references(formula, where_read=False):
            if read.kind == "at":
                bodies.setdefault(read.lifeline, {}).setdefault(read.body, None)
            elif read.kind == "remote":
                names.setdefault(read.lifeline, {}).setdefault(read.variable, None)
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


def resugar(primitive: ast.Formula, lifelines) -> ast.Formula:
    """``primitive`` with every desugared ``P φ`` (the exact shape ``past`` builds for
    ``lifelines``) folded back into ``P φ``: its text is then as short as the guard
    that produced it, where the primitive text doubles with every nested ``P``.

    ``desugar(resugar(f, L), L) == f``.  Linear in the DAG; no recursion.
    """
    return resugar_all([primitive], lifelines)[0]


def resugar_all(primitives, lifelines) -> list:
    """``resugar`` of several formulas, sharing the work on their common subformulas."""
    lifelines = tuple(lifelines)
    roots = ast.shared_all(primitives)
    done: dict[int, ast.Formula] = {}
    stack = [(root, None) for root in reversed(roots)]
    while stack:
        node, plan = stack.pop()
        if id(node) in done:
            continue
        if plan is None:  # first visit: decide what to print below this node
            body = _folded_past(node, lifelines)
            plan = ("past", (body,)) if body is not None else ("keep", ast.children(node))
            stack.append((node, plan))
            stack.extend((child, None) for child in plan[1] if id(child) not in done)
            continue
        how, below = plan
        if how == "past":
            done[id(node)] = ast.Past(done[id(below[0])])
        else:
            done[id(node)] = ast.rebuild(node, [done[id(child)] for child in below])
    return [done[id(root)] for root in roots]


def _folded_past(node, lifelines: tuple):
    """φ when ``node`` is ``past(φ, lifelines)`` (shared), else None."""
    if not lifelines:
        return None
    # ``past`` builds a balanced ``||``: its leftmost @ is at most this deep (a longer
    # left spine is a chain the guard wrote, and walking it at each of its nodes
    # would cost its length squared)
    leftmost, depth = node, len(lifelines).bit_length()
    while type(leftmost) is ast.Or and depth:
        leftmost, depth = leftmost.left, depth - 1
    if not (type(leftmost) is ast.At and type(leftmost.body) is ast.Since
            and leftmost.body.left == TRUE):
        return None
    body = leftmost.body.right
    if leftmost is node and len(lifelines) != 1:
        return None  # @A(true S φ): that is P @A(φ), clearer written as it is
    try:
        return body if ast.shared(past(body, lifelines)) is node else None
    except TypeError:  # not a formula below: nothing to fold
        return None
