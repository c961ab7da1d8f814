"""Checking a choreography against its declarations: the names it declares, and the
lifelines, variables and guards its statements name.

Declarations come first in a choreography file, because guards are checked
against them as soon as they are written: every declared variable and input is
a CPL variable, every member of a symbol set a CPL symbol (so ``status !=
failed`` resolves), any other bare name in a guard is an error.  Names are
checked as they are declared: identifiers, no CPL keyword, no clash between
variables and symbols.  A reference to an unknown lifeline or variable, or a
guard that does not check, is recorded as a problem at the user's file and line
(see ``Choreography.problems``); a DSL call given the wrong kind of thing raises.
Each function takes the :class:`~choreo.authoring.dsl.Choreography` being written, ``c``.
"""

from __future__ import annotations

from typing import Iterable

import cpl
from cpl.lang import KEYWORDS, did_you_mean

from . import model
from .errors import ChoreographyError, Where, guard_detail
from .model import Guard, Input, Lifeline, SymbolSet, Var


def check_name(name, what: str, where: Where) -> None:
    """``name`` can name a ``what`` (a lifeline, a symbol, a variable)."""
    if not (isinstance(name, str) and name.isidentifier()) or name in KEYWORDS:
        raise ChoreographyError(f"{name!r} cannot name a {what}: use an identifier that is "
                                f"not a guard keyword ({' '.join(sorted(KEYWORDS))})", where)


def check_type(name: str, kind, symbol_sets: dict[str, SymbolSet], where: Where) -> None:
    """A variable ``name`` of type ``kind`` can be declared beside ``symbol_sets``."""
    check_name(name, "variable", where)
    if not (isinstance(kind, SymbolSet) or kind in model.TYPES):
        raise ChoreographyError(f"type of {name!r} must be int, float, str, bool, object or "
                                f"a symbol set from c.symbols(...), not {kind!r}", where)
    if any(name in s.members for s in symbol_sets.values()):
        raise ChoreographyError(f"variable {name!r} is also a symbol", where)


def lifeline_of(c, value, where: Where, context: str) -> str | None:
    """The lifeline ``value`` names, or None (a problem recorded) if ``c`` has none such."""
    name = value.name if isinstance(value, Lifeline) else value
    if not isinstance(name, str):
        raise ChoreographyError(f"{context}: expected a lifeline, got {value!r}", where)
    if name not in c.lifeline_names:
        c._problem(f"unknown lifeline '{name}' in {context}" + did_you_mean(name,
                   c.lifeline_names), where, "unknown-lifeline",
                   f"  hint: known lifelines: {', '.join(c.lifeline_names) or '(none)'}")
        return None
    return name


def lifelines_of(c, value, where: Where, context: str) -> tuple[str, ...]:
    """The known lifelines of ``value``: one, or several."""
    items = [value] if isinstance(value, (str, Lifeline)) else list(value)
    return tuple(n for n in (lifeline_of(c, v, where, context) for v in items) if n)


def variables_of(c, values: Iterable, where: Where,
                 context: str) -> tuple[str, ...]:
    """The variables ``values`` name, a problem recorded for each ``c`` does not declare."""
    names = []
    for value in values:
        name = value.name if isinstance(value, (Var, Input)) else value
        if not isinstance(name, str):
            raise ChoreographyError(f"{context}: expected a variable, got {value!r}", where)
        if name not in c.variables:
            c._problem(f"unknown variable '{name}' in {context}"
                       + did_you_mean(name, c.variables), where, "unknown-variable",
                       "  fix: declare it with c.var(...) before using it")
        names.append(name)
    return tuple(names)


def decision_of(c, guard, at, label, tell, where: Where, what: str):
    """An ``if_``'s or ``while_``'s owner, its guard checked against the declarations so
    far, its label and the lifelines it tells: (owner, ``Guard``, label, told)."""
    owner = lifeline_of(c, at, where, f"{what}(at=...)") or "?"
    if isinstance(guard, (Var, Input)):
        if guard.type is not bool:
            c._problem(f"{what} guard: variable '{guard.name}' is "
                       f"{model.type_name(guard.type)}; a variable alone as a guard "
                       "must be bool", where, "guard")
        guard = guard.name
    if not isinstance(guard, str):
        raise ChoreographyError(f"{what} needs a CPL guard text or a bool variable, "
                                f"got {guard!r}", where)
    text = label or " ".join(guard.split())
    try:
        checked = cpl.check(guard, c.schema)
    except cpl.GuardError as error:
        c._problem(f"in the guard of {text!r}: {error.message}", where, "guard",
                   guard_detail(error))
        checked = None
    if tell is None or tell == "all":
        told = tell
    else:
        told = tuple(n for n in lifelines_of(c, tell, where, f"{what}(tell=...)")
                     if n != owner)
    return owner, Guard(guard, checked), text, told
