"""What a formula reads, and from which lifeline: the one collector behind
``named_lifelines``, the export sets of the compiler and the visibility check
of a choreography.

Shared subformulas (desugared ``P``) are visited once per lifeline context, so
the walk is linear in the formula's DAG, not its (possibly exponential) tree.
"""

from __future__ import annotations

from typing import Iterator

import attrs

from . import ast


@attrs.frozen
class Reference:
    """One read.  ``kind`` is

    * ``"at"``: ``@B(θ)`` reads B's view of θ (``body`` is θ);
    * ``"seen"``: ``Seen(B)`` reads whether any B-event is visible;
    * ``"remote"``: ``@B.x`` reads B's view of variable x;
    * ``"var"``: ``x`` read in the store of ``lifeline``, the one evaluating it
      (``owner`` outside any ``@``, else the innermost ``@B``).
    """

    kind: str
    lifeline: str | None
    variable: str | None = None
    body: ast.Formula | None = attrs.field(default=None, eq=False)


def references(formula: ast.Formula, owner: str | None = None, *,
               follow_past: bool = True, where_read: bool = True) -> Iterator[Reference]:
    """Every read in ``formula``, parents first, left to right, each distinct one once.

    ``where_read=False`` gives every ``"var"`` read the lifeline ``owner``: a
    walk that needs no such lifeline visits each shared subformula once, not
    once per ``@B`` above it.  ``follow_past=False`` does not look inside ``P φ``
    unless φ is ``@A(…)``: a read anywhere in the causal past depends on no
    particular lifeline.
    """
    seen_nodes: set = set()
    seen_refs: set = set()
    stack = [(formula, owner)]
    while stack:
        node, at = stack.pop()
        if (id(node), at) in seen_nodes:
            continue
        seen_nodes.add((id(node), at))
        kind = type(node)
        found = []
        if kind is ast.Past and not follow_past and not isinstance(node.body, ast.At):
            continue
        if kind is ast.At:
            found.append(Reference("at", node.lifeline, body=node.body))
        elif kind is ast.Seen:
            found.append(Reference("seen", node.lifeline))
        for term in ast.terms(node):
            if isinstance(term, ast.Var):
                found.append(Reference("var", at, term.name))
            elif isinstance(term, ast.Remote):
                found.append(Reference("remote", term.lifeline, term.name))
        for reference in found:
            key = (reference.kind, reference.lifeline, reference.variable,
                   id(reference.body) if reference.body is not None else None)
            if key not in seen_refs:
                seen_refs.add(key)
                yield reference
        inner = node.lifeline if kind is ast.At and where_read else at
        stack.extend((child, inner) for child in reversed(ast.children(node)))


def named_lifelines(formula: ast.Formula) -> tuple[str, ...]:
    """Lifelines the formula names, in order of first mention."""
    return tuple(dict.fromkeys(r.lifeline for r in references(formula) if r.kind != "var"))


def named_predicates(formula: ast.Formula) -> tuple[str, ...]:
    """Predicates the formula calls, in order of first mention (built-ins included).
    Each shared subformula is visited once, as in ``references``."""
    found: dict[str, None] = {}
    seen: set = set()
    stack = [formula]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if type(node) is ast.Pred:
            found.setdefault(node.name, None)
        stack.extend(reversed(ast.children(node)))
    return tuple(found)
