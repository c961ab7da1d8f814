"""Declarations of a choreography: lifelines, symbol sets, variables, inputs, results.

They come first in a choreography file, because guards are checked against
them as soon as they are written: every declared variable and input is a CPL
variable, every member of a symbol set a CPL symbol (so ``status != failed``
resolves), any other bare name in a guard is an error.  Names are checked
here too: identifiers, no CPL keyword, no clash between variables and
symbols; a reference to an unknown lifeline or variable is recorded as a
problem at the user's file and line (see ``Choreography.problems``).
"""

from __future__ import annotations

from typing import Any, Iterable

import cpl
from cpl.lang import did_you_mean, KEYWORDS
from . import model
from .errors import ChoreographyError, Where, caller
from .model import Input, Lifeline, SymbolSet, Var

_REQUIRED = object()


class Declarations:
    """The declaring half of :class:`~choreo.authoring.dsl.Choreography`."""

    def __init__(self) -> None:
        self.lifeline_names: list[str] = []
        self.variables: dict[str, Var] = {}
        self.inputs: dict[str, Input] = {}
        self.symbol_sets: dict[str, SymbolSet] = {}
        self.results: dict[str, tuple[str, ...]] = {}
        self.problems: list[ChoreographyError] = []

    def lifeline(self, name: str) -> Lifeline:
        where = caller()
        self._new_name(name, "lifeline", where)
        if name in self.lifeline_names:
            raise ChoreographyError(f"lifeline {name!r} is declared twice", where)
        self.lifeline_names.append(name)
        return Lifeline(name)

    def lifelines(self, *names: str) -> tuple[Lifeline, ...]:
        return tuple(self.lifeline(name) for name in names)

    def symbols(self, name: str, *members: str) -> SymbolSet:
        """An enumerated type; ``status != failed`` then reads ``failed`` as a symbol."""
        where = caller()
        if not members:
            raise ChoreographyError(f"symbol set {name!r} needs members", where)
        for member in members:
            self._new_name(member, "symbol", where)
            if member in self.variables:
                raise ChoreographyError(f"symbol {member!r} is also a variable name", where)
        if name in self.symbol_sets and self.symbol_sets[name].members != tuple(members):
            raise ChoreographyError(f"symbol set {name!r} is declared twice", where)
        self.symbol_sets[name] = SymbolSet(name, tuple(members))
        return self.symbol_sets[name]

    def var(self, name: str, type: Any = object, *, init: Any = _REQUIRED) -> Var:
        """A variable; ``init`` is its initial value everywhere, or ``{lifeline: value}``."""
        where = caller()
        self._check_type(name, type, where)
        pairs: tuple = ()
        if init is not _REQUIRED:
            if isinstance(init, dict):
                pairs = tuple((self._lifeline(k, where, "init of " + name) or "?", v)
                              for k, v in init.items())
            else:
                pairs = (("*", init),)  # every lifeline, also those declared later
            for _, value in pairs:
                if not model.conforms(value, type):
                    raise ChoreographyError(f"initial value {value!r} of {name!r} is not "
                                            f"{model.type_name(type)}", where)
        return self._declare(Var(name, type, pairs, where), where)

    def input(self, name: str, type: Any = str, *, default: Any = _REQUIRED,
              at: Lifeline | str | Iterable | None = None) -> Input:
        """A run parameter, ``--arg name=value``; held from the start by ``at`` (default: all)."""
        where = caller()
        self._check_type(name, type, where)
        required = default is _REQUIRED
        if not required and not model.conforms(default, type):
            raise ChoreographyError(f"default {default!r} of input {name!r} is not "
                                    f"{model.type_name(type)}", where)
        places = self._lifeline_list(at, where, f"input {name!r}") if at is not None \
            else tuple(self.lifeline_names)
        declared = Input(name, type, None if required else default, required, places, where)
        self.inputs[name] = declared
        self._declare(Var(name, type, (), where), where)
        return declared

    def result(self, lifeline: Lifeline | str, *variables: Var | str) -> None:
        """The variables a run reports for ``lifeline`` (default: its whole store)."""
        where = caller()
        name = self._lifeline(lifeline, where, "result")
        names = self._variables(variables, where, "result")
        if name:
            self.results[name] = self.results.get(name, ()) + names

    def reported_names(self, lifeline: str, store) -> tuple[str, ...]:
        """The variables a run reports for ``lifeline``: those ``result`` declared, else
        every variable in its ``store``."""
        return self.results.get(lifeline) or tuple(store)

    def reported(self, lifeline: str, store) -> dict:
        """The values a run reports for ``lifeline`` (:meth:`reported_names`), unset ones
        left out."""
        return {x: store[x] for x in self.reported_names(lifeline, store) if x in store}

    @property
    def schema(self) -> cpl.Schema:
        members = frozenset(m for s in self.symbol_sets.values() for m in s.members)
        return cpl.Schema(tuple(self.lifeline_names), frozenset(self.variables), members)

    # ----------------------------------------------------------------- helpers

    def _problem(self, message: str, where: Where, kind: str, detail: str = "") -> None:
        self.problems.append(ChoreographyError(message, where, detail, kind))

    def _new_name(self, name, what: str, where: Where) -> None:
        if not (isinstance(name, str) and name.isidentifier()) or name in KEYWORDS:
            raise ChoreographyError(f"{name!r} cannot name a {what}: use an identifier that is "
                                    f"not a guard keyword ({' '.join(sorted(KEYWORDS))})", where)

    def _check_type(self, name: str, kind, where: Where) -> None:
        self._new_name(name, "variable", where)
        if not (isinstance(kind, SymbolSet) or kind in model.TYPES):
            raise ChoreographyError(f"type of {name!r} must be int, float, str, bool, object or "
                                    f"a symbol set from c.symbols(...), not {kind!r}", where)
        if any(name in s.members for s in self.symbol_sets.values()):
            raise ChoreographyError(f"variable {name!r} is also a symbol", where)

    def _declare(self, declared: Var, where: Where) -> Var:
        known = self.variables.get(declared.name)
        if known is not None and known.type != declared.type:
            raise ChoreographyError(f"variable {declared.name!r} is declared twice with "
                                    f"different types", where)
        self.variables[declared.name] = declared
        return declared

    def _lifeline(self, value, where: Where, context: str) -> str | None:
        name = value.name if isinstance(value, Lifeline) else value
        if not isinstance(name, str):
            raise ChoreographyError(f"{context}: expected a lifeline, got {value!r}", where)
        if name not in self.lifeline_names:
            self._problem(f"unknown lifeline '{name}' in {context}" + did_you_mean(name,
                          self.lifeline_names), where, "unknown-lifeline",
                          f"  hint: known lifelines: {', '.join(self.lifeline_names) or '(none)'}")
            return None
        return name

    def _lifeline_list(self, value, where: Where, context: str) -> tuple[str, ...]:
        items = [value] if isinstance(value, (str, Lifeline)) else list(value)
        return tuple(n for n in (self._lifeline(v, where, context) for v in items) if n)

    def _variables(self, values: Iterable, where: Where, context: str) -> tuple[str, ...]:
        names = []
        for value in values:
            name = value.name if isinstance(value, (Var, Input)) else value
            if not isinstance(name, str):
                raise ChoreographyError(f"{context}: expected a variable, got {value!r}", where)
            if name not in self.variables:
                self._problem(f"unknown variable '{name}' in {context}"
                              + did_you_mean(name, self.variables), where, "unknown-variable",
                              "  fix: declare it with c.var(...) before using it")
            names.append(name)
        return tuple(names)
