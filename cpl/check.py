"""A guard read, resolved and checked: the one call behind ``cpl check``."""

from __future__ import annotations

import functools

import attrs

from . import ast
from .desugar import desugar, exports, resugar, resugar_all, subformulas
from .names import Schema, resolve
from .parser import parse
from .printer import to_text
from .references import named_lifelines


@attrs.frozen
class CheckedGuard:
    source: str
    formula: ast.Formula  # resolved, as written (sugar kept)
    primitive: ast.Formula  # sugar removed: what the monitor compiles
    lifelines: tuple[str, ...]  # the lifelines the guard names
    universe: tuple[str, ...] = ()  # what an unqualified ``P`` ranges over (desugared with)

    @functools.cached_property
    def canonical(self) -> str:
        """Printed once: a run records it at every decision (bench P5)."""
        return to_text(self.formula)

    def to_json(self) -> dict:
        """The machine form of ``cpl check``.  Shipped formulas are printed with ``P``
        folded back (``resugar``): their primitive text doubles with each nested ``P``."""
        shipped = exports([self.primitive])
        folded = iter(resugar_all([f for entry in shipped.values() for f in entry.formulas],
                                  self.universe))
        return {
            "canonical": self.canonical,
            "lifelines": list(self.lifelines),
            "subformulas": len(subformulas(self.primitive)),
            "remote": {
                lifeline: {"formulas": [to_text(next(folded)) for _ in entry.formulas],
                           "vars": list(entry.variables)}
                for lifeline, entry in shipped.items()
            },
        }

    def text_of(self, primitive: ast.Formula) -> str:
        """Text of a subformula of ``primitive`` that checks back to it (``P`` folded)."""
        return to_text(resugar(primitive, self.universe))


def check(text: str, schema: Schema = Schema()) -> CheckedGuard:
    """Parse, resolve and desugar; raise ``GuardError`` on any problem."""
    formula = resolve(parse(text), schema, text)
    named = named_lifelines(formula)
    every = schema.lifelines if schema.lifelines is not None else named
    return CheckedGuard(text, formula, desugar(formula, every, text), named, tuple(every))


__all__ = ["CheckedGuard", "check", "named_lifelines"]
