"""Sub-choreographies: inline one choreography into another, lifelines renamed.

A sub-choreography is an ordinary :class:`~choreo.authoring.dsl.Choreography` whose
lifelines are roles.  ``c.include(sub, lifelines={"Reviewer": TestRunner})``
copies its declarations (same name must mean the same type) and its
statements, each role renamed and every statement given a fresh id (so two
inclusions are two different protocols at run time).  Guards are renamed on
their syntax tree and checked again against the including choreography, so
a name that the host means differently is caught; statements keep pointing
at the sub-choreography's file and line.
"""

from __future__ import annotations

import attrs

import cpl
from cpl.lang import ast
from .errors import ChoreographyError, Where, guard_detail
from .model import Act, Atomic, Guard, If, Lifeline, Parallel, Send, While


def include(host, sub, mapping: dict, where: Where) -> None:
    if sub is host:
        raise ChoreographyError("a choreography cannot include itself", where)
    if not hasattr(sub, "body") or not hasattr(sub, "lifeline_names"):
        raise ChoreographyError(f"c.include needs a Choreography, got {sub!r}", where)
    renames = _renames(host, sub, mapping, where)
    for name, symbols in sub.symbol_sets.items():
        known = host.symbol_sets.get(name)
        if known is not None and known != symbols:
            raise ChoreographyError(f"symbol set {name!r} of {sub.name!r} differs from this "
                                    "choreography's", where)
        host.symbol_sets[name] = symbols
    for name, declared in sub.variables.items():
        known = host.variables.get(name)
        if known is not None and known.type != declared.type:
            raise ChoreographyError(f"variable {name!r} of {sub.name!r} has another type here",
                                    where)
        if known is None:
            init = tuple((renames.get(k, k), v) for k, v in declared.init)
            host.variables[name] = attrs.evolve(declared, init=init)
    for name, declared in sub.inputs.items():
        if name not in host.inputs:
            at = tuple(renames[n] for n in declared.at)
            host.inputs[name] = attrs.evolve(declared, at=at)
    host.problems.extend(sub.problems)
    sub.included_in.append(host.name)  # so loading a file picks the host, not its parts
    copier = _Copier(host, renames)
    for statement in sub.body:
        host._append(copier.statement(statement))


def _renames(host, sub, mapping: dict, where: Where) -> dict[str, str]:
    renames = {}
    for role, target in mapping.items():
        role = role.name if isinstance(role, Lifeline) else role
        target = target.name if isinstance(target, Lifeline) else target
        if role not in sub.lifeline_names:
            raise ChoreographyError(f"{sub.name!r} has no lifeline {role!r} "
                                    f"(it has {', '.join(sub.lifeline_names)})", where)
        renames[role] = target
    for role in sub.lifeline_names:
        target = renames.setdefault(role, role)
        if target not in host.lifeline_names:
            raise ChoreographyError(
                f"lifeline {role!r} of {sub.name!r} has no counterpart here", where,
                f"  fix: pass lifelines={{{role!r}: <one of {', '.join(host.lifeline_names)}>}}")
    return renames


class _Copier:
    def __init__(self, host, renames: dict[str, str]):
        self.host = host
        self.renames = renames

    def block(self, statements) -> tuple:
        return tuple(self.statement(s) for s in statements)

    def statement(self, s):
        r = self.renames
        if isinstance(s, Send):
            return attrs.evolve(s, id=self.host._id(), sender=r[s.sender], receiver=r[s.receiver])
        if isinstance(s, Act):
            return attrs.evolve(s, id=self.host._id(), lifeline=r[s.lifeline])
        if isinstance(s, If):
            return attrs.evolve(s, id=self.host._id(), owner=r[s.owner],
                                guard=self.guard(s.guard, s.where, s.label),
                                then=self.block(s.then), else_=self.block(s.else_),
                                tell=self.tell(s.tell))
        if isinstance(s, While):
            return attrs.evolve(s, id=self.host._id(), owner=r[s.owner],
                                guard=self.guard(s.guard, s.where, s.label),
                                body=self.block(s.body), tell=self.tell(s.tell))
        if isinstance(s, Parallel):
            return attrs.evolve(s, id=self.host._id(),
                                threads=tuple(self.block(t) for t in s.threads))
        if isinstance(s, Atomic):
            return attrs.evolve(s, id=self.host._id(), lifeline=r[s.lifeline],
                                body=self.block(s.body))
        raise TypeError(f"unknown statement {s!r}")

    def tell(self, tell):
        if tell is None or tell == "all":
            return tell
        return tuple(self.renames[n] for n in tell)

    def guard(self, guard: Guard, where: Where, label: str) -> Guard:
        if guard.checked is None:
            return guard  # its error is already among the sub-choreography's problems
        text = cpl.to_text(_rename(guard.checked.formula, self.renames))
        try:
            return Guard(text, cpl.check(text, self.host.schema))
        except cpl.GuardError as error:
            self.host._problem(f"in the guard of {label!r} (included): {error.message}", where,
                               "guard", guard_detail(error))
            return Guard(text, None)


def _rename(node, renames: dict[str, str]):
    """The formula with every lifeline name mapped (``@A(...)``, ``@A.x``, ``Seen(A)``)."""
    def term(t):
        return ast.rebuild(t, lifeline=renames.get(t.lifeline, t.lifeline)) \
            if isinstance(t, ast.Remote) else t
    changes = ({"lifeline": renames.get(node.lifeline, node.lifeline)}
               if isinstance(node, (ast.At, ast.Seen)) else {})
    return ast.rebuild(node, [_rename(c, renames) for c in ast.children(node)],
                       [term(t) for t in ast.terms(node)], **changes)
