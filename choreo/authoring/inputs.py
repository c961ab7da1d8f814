"""Run inputs: ``--arg key=value`` parsed by the declared type, and initial stores.

Values arrive as text; each is read by its input's declared type (``int``,
``float``, ``bool`` as true/false/yes/no/1/0, ``str``, a symbol set's
member, ``object`` as JSON if it parses and text otherwise).  Unknown keys,
bad values and missing required inputs are errors that say what is expected.

Values are hostile text: NaN and ±Infinity (``NaN``, ``1e999``) are refused
for ``float`` and inside JSON, because CPL compares values by equality and a
NaN equals nothing — not even itself — and JSON cannot write them to a trace;
JSON nested deeper than ``MAX_DEPTH`` is refused before it is decoded, since
the values are walked recursively later (copies, traces, comparisons).
"""

from __future__ import annotations

import copy
import json
import math
from typing import Iterable, Mapping

from cpl.lang import did_you_mean
from cpl.trace import value_problem

from . import model
from .errors import ChoreographyError, Where

_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}
_BOOLEANS = ("true", "false", "yes", "no", "1", "0", "on", "off")  # as a bool error lists them
MAX_DEPTH = 100  # nesting of a JSON value, like a guard's operators


def parse_args(choreography, pairs: Iterable[str] = (), given: Mapping | None = None) -> dict:
    """``["rounds=5"]`` (and/or already-typed ``given``) → every input's value."""
    where = Where(choreography.where.path, 0)
    values: dict = dict(given or {})
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ChoreographyError(f"--arg {_shown(pair)}: expected KEY=VALUE", where)
        declared = _input(choreography, key, where)
        values[key] = read_value(declared, text, where)
    for key in values:
        _input(choreography, key, where)
    for declared in choreography.inputs.values():
        if declared.name not in values:
            if declared.required:
                raise ChoreographyError(f"input {declared.name!r} is required", where,
                                        f"  fix: --arg {declared.name}=VALUE "
                                        f"({model.type_name(declared.type)})")
            values[declared.name] = declared.default
        elif not model.conforms(values[declared.name], declared.type):
            raise ChoreographyError(f"input {declared.name!r} must be "
                                    f"{model.type_name(declared.type)}, got "
                                    f"{values[declared.name]!r}"[:300], where)
        elif isinstance(values[declared.name], float) and not math.isfinite(values[declared.name]):
            raise ChoreographyError(f"input {declared.name!r} must be a finite number, got "
                                    f"{values[declared.name]!r}", where)
        problem = value_problem(values[declared.name], (list, tuple), recorded=True)
        if problem:  # the trace's header and the lifelines' stores carry every input
            raise ChoreographyError(f"input {declared.name!r} {problem}"[:300], where)
    return values


def _input(choreography, key: str, where: Where):
    declared = choreography.inputs.get(key)
    if declared is None:
        known = ", ".join(choreography.inputs) or "(none)"
        raise ChoreographyError(f"unknown input {_shown(key)}"
                                + did_you_mean(key, choreography.inputs),
                                where, f"  hint: the inputs are {known}")
    return declared


def read_value(declared, text: str, where: Where):
    kind = declared.type
    try:
        if kind is bool:
            lowered = text.strip().lower()
            if lowered in _TRUE | _FALSE:
                return lowered in _TRUE
            raise ValueError
        if kind in (int, float):
            value = kind(text)
            if kind is float and not math.isfinite(value):
                raise _Refused(f"{_shown(text)} is not a finite number (NaN and ±Infinity "
                               "have no place in a guard's comparisons or a JSON trace)")
            return value
        if kind is object:
            return _json_or_text(text)
        if isinstance(kind, model.SymbolSet) and text not in kind.members:
            raise ValueError
        return text
    except _Refused as refused:
        raise ChoreographyError(f"input {declared.name!r}: {refused}", where,
                                f"  fix: --arg {declared.name}=VALUE "
                                f"({model.type_name(kind)})") from None
    except ValueError:
        accepted = f" (give one of {', '.join(_BOOLEANS)})" if kind is bool else ""
        raise ChoreographyError(f"input {declared.name!r}: {_shown(text)} is not "
                                f"{model.type_name(kind)}{accepted}", where) from None


class _Refused(Exception):
    """A value that parses but must not be used (its message says why)."""


def _shown(text: str) -> str:
    """The value as quoted in a message, cut short: a hostile one may be megabytes."""
    return repr(text) if len(text) <= 60 else repr(text[:60]) + f"... ({len(text)} characters)"


def _json_or_text(text: str):
    """JSON if the text is JSON (finite numbers, at most ``MAX_DEPTH`` deep), else the text."""
    depth = _nesting(text)
    if depth > MAX_DEPTH:
        raise _Refused(f"the JSON value is nested {depth} levels deep; at most {MAX_DEPTH} are "
                       "allowed")

    def refuse(constant: str):
        raise _Refused(f"{constant} in the JSON value is not a finite number")

    def number(digits: str) -> float:
        value = float(digits)
        if not math.isfinite(value):
            raise _Refused(f"{_shown(digits)} in the JSON value is too large for a number")
        return value

    try:
        return json.loads(text, parse_constant=refuse, parse_float=number)
    except ValueError:  # not JSON (or an integer of over 4,300 digits): the text itself
        return text


def _nesting(text: str) -> int:
    """How deep ``[`` and ``{`` nest outside JSON strings (a linear scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def initial_stores(choreography, values: Mapping) -> dict[str, dict]:
    """Each lifeline's store before its first event: ``init=`` values and its inputs, a
    copy of each per store (as each lifeline's own process has): an action that changes a
    list in place changes its own lifeline's, in this run only."""
    stores: dict[str, dict] = {name: {} for name in choreography.lifeline_names}
    for declared in choreography.variables.values():
        for place, value in declared.init:
            for name in (choreography.lifeline_names if place == "*" else [place]):
                stores[name][declared.name] = copy.deepcopy(value)
    for declared in choreography.inputs.values():
        for name in declared.at:
            stores[name][declared.name] = copy.deepcopy(values[declared.name])
    return stores
