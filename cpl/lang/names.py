"""Name resolution: which identifiers are lifelines, variables, symbols and
predicates, checked against a schema, with did-you-mean suggestions.

A bare identifier is a variable when the schema declares it and otherwise
a symbol (the string of its name), so ``status != failed`` reads naturally.
A schema that lists its symbols is closed: any other bare name is an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs

from . import ast
from ..errors import GuardError, ResolveError
from .predicates import DEFAULT, Registry

MAX_SCHEMA = 16 << 20  # characters of a --schema file: names only, so megabytes at most


@attrs.frozen
class Schema:
    """What a guard may name.  ``None`` means "not known, accept anything"."""

    lifelines: tuple[str, ...] | None = None
    variables: frozenset[str] | None = None
    symbols: frozenset[str] | None = None
    predicates: Registry = attrs.field(default=DEFAULT, eq=False)

    @classmethod
    def from_dict(cls, data, origin: str = "schema") -> "Schema":
        """Read ``{"lifelines": [...], "vars": {...} or [...], "symbols": [...]}``."""
        if not isinstance(data, dict):
            raise _schema_error(origin, "expected a JSON object with lifelines, vars and symbols")
        unknown = sorted(set(data) - {"lifelines", "vars", "symbols"})
        if unknown:
            raise _schema_error(origin, f"unknown key {unknown[0]!r} (keys are lifelines, vars, symbols)")
        return cls(
            lifelines=_names(data, "lifelines", origin, tuple),
            variables=_names(data, "vars", origin, frozenset),
            symbols=_names(data, "symbols", origin, frozenset),
        )

    @classmethod
    def load(cls, path: str | Path) -> "Schema":
        if os.path.exists(path) and not os.path.isfile(path):  # a FIFO waits, a device never ends
            raise _schema_error(str(path), "cannot read the schema: it is not a regular file")
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read(MAX_SCHEMA + 1)
            if len(text) > MAX_SCHEMA:
                raise _schema_error(str(path), f"the schema is longer than {MAX_SCHEMA >> 20} "
                                    f"MiB, far more than any choreography declares")
            data = json.loads(text)
        except OSError as error:
            raise _schema_error(str(path), f"cannot read the schema: {error.strerror}") from None
        except (ValueError, UnicodeDecodeError) as error:
            raise _schema_error(str(path), f"the schema is not JSON: {error}") from None
        return cls.from_dict(data, str(path))


def _names(data: dict, key: str, origin: str, kind):
    if key not in data:
        return None
    value = data[key]
    names = list(value) if isinstance(value, (dict, list)) else None
    if names is None or not all(isinstance(n, str) and n.isidentifier() for n in names):
        raise _schema_error(origin, f"'{key}' must be a list (or object) of identifiers")
    return kind(names)


def _schema_error(origin: str, message: str) -> GuardError:
    """An error in the schema itself, rendered as ``FILE: error: ...``."""
    error = GuardError(message)
    error.origin = origin
    return error


def resolve(formula: ast.Formula, schema: Schema, source: str = "") -> ast.Formula:
    """Check every name against ``schema``; bare undeclared names become symbols."""
    return _Resolver(schema, source).formula(formula)


class _Resolver:
    def __init__(self, schema: Schema, source: str):
        self.schema = schema
        self.source = source

    def fail(self, node, message: str, hint: str | None = None, word: str = "") -> ResolveError:
        """An error underlining ``word`` inside ``node`` (or the whole node)."""
        span = node.span
        if span is None:
            return ResolveError(message, hint=hint)
        found = self.source.find(word, span.start, span.end) if word else -1
        if found < 0:
            return ResolveError(message, self.source, span.line, span.column,
                                span.end - span.start, hint)
        return ResolveError.at_offset(message, self.source, found, len(word), hint)

    def lifeline(self, node, name: str) -> None:
        known = self.schema.lifelines
        if known is not None and name not in known:
            raise self.fail(node, f"unknown lifeline '{name}'" + did_you_mean(name, known),
                            hint=f"known lifelines: {', '.join(known) or '(none)'}", word=name)

    def formula(self, formula):
        """Names checked parents first, left to right (the first error is the leftmost
        outermost), then the formula rebuilt children first: no recursion either way."""
        atoms = {}
        for node in ast.walk(formula):
            kind = type(node)
            if kind in (ast.At, ast.Seen):
                self.lifeline(node, node.lifeline)
            if kind is ast.Pred:
                self.predicate(node)
            if kind in ast.ATOMS:
                terms = [self.term(t) for t in ast.terms(node)]
                atoms[id(node)] = ast.rebuild(node, new_terms=terms)
        return ast.fold(formula, lambda node, kids: atoms[id(node)] if id(node) in atoms
                        else ast.rebuild(node, kids))

    def predicate(self, node: ast.Pred) -> None:
        entry = self.schema.predicates.get(node.name)
        if entry is None:
            raise self.fail(node, f"unknown predicate '{node.name}'"
                            + did_you_mean(node.name, self.schema.predicates.names()),
                            hint=f"known predicates: {', '.join(self.schema.predicates.names())}",
                            word=node.name)
        if entry.arity != len(node.args):
            plural = "" if entry.arity == 1 else "s"
            raise self.fail(node, f"predicate '{node.name}' takes {entry.arity} argument{plural}, "
                                  f"but {len(node.args)} given")

    def term(self, term):
        variables = self.schema.variables
        if isinstance(term, ast.Remote):
            self.lifeline(term, term.lifeline)
            if variables is not None and term.name not in variables:
                raise self.fail(term, f"unknown variable '{term.name}' in @{term.lifeline}."
                                      f"{term.name}" + did_you_mean(term.name, variables),
                                word="." + term.name)
            return term
        if not isinstance(term, (ast.Var, ast.Symbol)) or variables is None:
            return term
        if term.name in variables:
            return ast.Var(term.name, span=term.span)
        symbols = self.schema.symbols
        if symbols is None or term.name in symbols:
            return ast.Symbol(term.name, span=term.span)
        raise self.fail(term, f"unknown name '{term.name}': neither a declared variable nor a symbol"
                              + did_you_mean(term.name, variables | symbols))


def symbol_warnings(formula: ast.Formula, schema: Schema) -> list[str]:
    """Bare names that became symbols but are one edit from a declared variable.

    ``statuss == passed`` compares two constants: the atom is silently always
    false, so the likely typo deserves a word even though the guard resolves.
    A symbol the schema declares is meant (``decision == merged`` beside a
    variable ``merges``), and names shorter than 3 characters are left alone
    (``x`` is one edit from ``y``).
    """
    variables, declared = schema.variables, schema.symbols or frozenset()
    if not variables:
        return []
    warnings: dict[str, None] = {}
    for node in ast.walk(formula):
        for term in ast.terms(node):
            if type(term) is ast.Symbol and len(term.name) >= 3 and term.name not in declared:
                near = [v for v in variables if len(v) >= 3 and one_edit_apart(term.name, v)]
                if near:
                    import difflib  # only for a warning: every start-up would pay it
                    best = max(sorted(near), key=lambda v: difflib.SequenceMatcher(
                        None, term.name, v).ratio())
                    warnings.setdefault(f"`{term.name}` is a symbol (the string "
                                        f"{json.dumps(term.name)}), not a variable; did you "
                                        f"mean `{best}`?", None)
    return list(warnings)


def one_edit_apart(a: str, b: str) -> bool:
    """``a != b`` and one insertion, deletion, substitution or swap of neighbours apart."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    a, b = a[start:], b[start:]
    return (a[1:] == b[1:] or a[1:] == b or a == b[1:]
            or (len(a) == len(b) >= 2 and a[0] == b[1] and a[1] == b[0] and a[2:] == b[2:]))


_MOST_CANDIDATES = 10_000


def did_you_mean(name, candidates) -> str:
    """``"; did you mean 'X'?"`` for the closest candidate to a mistyped name, else "".

    The one suggester of the project (guards, traces, choreographies, inputs):
    close spellings first, then the same name in another case.
    """
    name = str(name)
    known = sorted(str(c) for c in candidates)
    if len(known) > _MOST_CANDIDATES:  # the search would cost more than it helps
        return ""
    import difflib  # only when a name is wrong: every start-up would pay it
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if not close:
        lowered = {c.lower(): c for c in known}
        close = [lowered[name.lower()]] if name.lower() in lowered else []
    return f"; did you mean '{close[0]}'?" if close else ""
