"""Name resolution: which identifiers are lifelines, variables, symbols and
predicates, checked against a schema, with did-you-mean suggestions.

A bare identifier is a variable when the schema declares it and otherwise
a symbol (the string of its name), so ``status != failed`` reads naturally.
A schema that lists its symbols is closed: any other bare name is an error.
Either way a bare name one edit from a declared variable (``reslt`` beside
``result``) is an error unless the schema lists it as a symbol: a misspelt
variable must never silently become a constant (:func:`misspelt`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import attrs

from . import ast, spelling
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
            raise _schema_error(origin, f"unknown key {unknown[0]!r} "
                                        "(keys are lifelines, vars, symbols)")
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
        self.misspelt = misspelt(_bare_names(formula), self.schema) if self.schema.variables \
            else {}
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
        near = self.misspelt.get(term.name)
        if near:
            quoted = [f"'{v}'" for v in near]
            options = " or ".join(filter(None, [", ".join(quoted[:-1]), quoted[-1]]))
            raise self.fail(term, f"'{term.name}' is not a declared variable; did you mean "
                                  f"{options}?",
                            hint=f"if you mean the string {json.dumps(term.name)}, write it in "
                                 f"quotes or declare it a symbol")
        symbols = self.schema.symbols
        if symbols is None or term.name in symbols:
            return ast.Symbol(term.name, span=term.span)
        raise self.fail(term, f"unknown name '{term.name}': "
                              "neither a declared variable nor a symbol"
                              + did_you_mean(term.name, variables | symbols))


def _bare_names(formula: ast.Formula) -> dict[str, None]:
    """The bare names a formula's atoms read, in order."""
    return {term.name: None for node in ast.walk(formula) if type(node) in ast.ATOMS
            for term in ast.terms(node) if isinstance(term, (ast.Var, ast.Symbol))}


SHORTEST = 3  # characters: ``x`` is one edit from ``y``, ``ok`` from ``on``: too close to judge
_REMEMBERED = 4096  # names whose verdict is kept per variable set (a system checks many guards)


def misspelt(names, schema: Schema) -> dict[str, tuple[str, ...]]:
    """The bare names of ``names`` that the near-variable rule refuses, each with the
    declared variables it is one edit from (sorted, at most three).

    The rule, the same for every guard of every command and API: a bare name that
    is not a declared variable, not a symbol the schema lists, at least
    ``SHORTEST`` characters long, and one insertion, deletion, substitution or swap
    of neighbours (``spelling.one_edit_apart``, counted in characters) from a declared
    variable of at least ``SHORTEST`` characters.  "Declared" means every variable
    of the schema, whichever lifeline sets it: ``@B(reslt == 1)`` is refused beside
    a variable ``result`` even if only ``A`` sets it (a schema's variables are not
    per lifeline, and ``@B.x`` may read any of them).
    """
    variables = schema.variables
    if not variables:
        return {}
    listed = schema.symbols or frozenset()
    asked = [n for n in names if len(n) >= SHORTEST and n not in variables and n not in listed]
    if not asked:
        return {}
    lengths, known = spelling.by_length(variables if isinstance(variables, frozenset)
                                        else frozenset(variables), SHORTEST)
    verdicts = {n: known.get(n) for n in asked}  # one read each: another thread may clear it
    unknown = [n for n, near in verdicts.items() if near is None]
    if unknown:
        verdicts.update(spelling.near(unknown, lengths))
        if len(known) + len(unknown) > _REMEMBERED:
            known.clear()
        known.update((n, verdicts[n]) for n in unknown)
    return {n: near for n, near in verdicts.items() if near}


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
