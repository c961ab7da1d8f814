"""A guard read, resolved and checked: the one call behind ``cpl check``."""

from __future__ import annotations

import functools

import attrs

from . import ast
from .desugar import desugar, exports, resugar_all, subformulas
from .names import Schema, resolve
from .parser import parse
from .printer import to_text
from .mentions import named_lifelines


@attrs.frozen
class CheckedGuard:
    source: str
    formula: ast.Formula  # resolved, as written (sugar kept)
    primitive: ast.Formula  # sugar removed: what the monitor compiles
    lifelines: tuple[str, ...]  # the lifelines the guard names
    universe: tuple[str, ...] = ()  # what an unqualified ``P`` ranges over (desugared with)

    @functools.cached_property
    def canonical(self) -> str:
        """Printed once: a run records it at every decision (bench/simulate_runs.py)."""
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


EVERY = "*"  # with ``anywhere``: each lifeline of wherever the guard is evaluated


def check(text: str, schema: Schema = Schema(),  # noqa: B008 (a frozen value)
          *, anywhere: bool = False) -> CheckedGuard:
    """Parse, resolve and desugar; raise ``GuardError`` on any problem.

    Without the schema's lifelines an unqualified ``P φ`` cannot be desugared:
    it ranges over the lifelines of the trace or run that evaluates it.  That is
    an error, unless ``anywhere`` (``cpl check``, which only shows the guard):
    then ``P`` ranges over the named lifelines and ``EVERY``, which stands for
    the others and must not reach a monitor.
    """
    formula = resolve(parse(text), schema, text)
    named = named_lifelines(formula)
    every = schema.lifelines if schema.lifelines is not None else named
    if anywhere and schema.lifelines is None and _unqualified_past(formula):
        every = named + (EVERY,)
    return CheckedGuard(text, formula, desugar(formula, every, text), named, tuple(every))


def _unqualified_past(formula: ast.Formula) -> bool:
    return any(type(node) is ast.Past and type(node.body) is not ast.At
               for node in ast.walk(formula))


__all__ = ["CheckedGuard", "check", "named_lifelines"]
