"""A guard read, resolved and checked: the one call behind ``cpl check``."""

from __future__ import annotations

import attrs

from . import ast
from .desugar import desugar, exports, subformulas
from .names import Schema, resolve
from .parser import parse
from .printer import to_text


@attrs.frozen
class CheckedGuard:
    source: str
    formula: ast.Formula  # resolved, as written (sugar kept)
    primitive: ast.Formula  # sugar removed: what the monitor compiles
    lifelines: tuple[str, ...]  # the lifelines the guard names

    @property
    def canonical(self) -> str:
        return to_text(self.formula)

    def to_json(self) -> dict:
        return {
            "canonical": self.canonical,
            "lifelines": list(self.lifelines),
            "subformulas": len(subformulas(self.primitive)),
            "remote": {
                lifeline: {"formulas": [to_text(f) for f in entry.formulas],
                           "vars": list(entry.variables)}
                for lifeline, entry in exports([self.primitive]).items()
            },
        }


def named_lifelines(formula: ast.Formula) -> tuple[str, ...]:
    """Lifelines the formula names, in order of first mention."""
    seen: dict[str, None] = {}
    for node in ast.walk(formula):
        if isinstance(node, (ast.At, ast.Seen)):
            seen.setdefault(node.lifeline, None)
        for term in ast.terms(node):
            if isinstance(term, ast.Remote):
                seen.setdefault(term.lifeline, None)
    return tuple(seen)


def check(text: str, schema: Schema = Schema()) -> CheckedGuard:
    """Parse, resolve and desugar; raise ``GuardError`` on any problem."""
    formula = resolve(parse(text), schema, text)
    named = named_lifelines(formula)
    every = schema.lifelines if schema.lifelines is not None else named
    return CheckedGuard(text, formula, desugar(formula, every, text), named)
