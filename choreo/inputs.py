"""Run inputs: ``--arg key=value`` parsed by the declared type, and initial stores.

Values arrive as text; each is read by its input's declared type (``int``,
``float``, ``bool`` as true/false/yes/no/1/0, ``str``, a symbol set's
member, ``object`` as JSON if it parses and text otherwise).  Unknown keys,
bad values and missing required inputs are errors that say what is expected.
"""

from __future__ import annotations

import difflib
import json
from typing import Iterable, Mapping

from . import model
from .errors import ChoreographyError, Where

_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


def parse_args(choreography, pairs: Iterable[str] = (), given: Mapping | None = None) -> dict:
    """``["rounds=5"]`` (and/or already-typed ``given``) → every input's value."""
    where = Where(choreography.where.path, 0)
    values: dict = dict(given or {})
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ChoreographyError(f"--arg {pair!r}: expected KEY=VALUE", where)
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
                                    f"{values[declared.name]!r}", where)
    return values


def _input(choreography, key: str, where: Where):
    declared = choreography.inputs.get(key)
    if declared is None:
        close = difflib.get_close_matches(key, list(choreography.inputs), n=1)
        known = ", ".join(choreography.inputs) or "(none)"
        raise ChoreographyError(f"unknown input {key!r}"
                                + (f"; did you mean {close[0]!r}?" if close else ""),
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
            return kind(text)
        if kind is object:
            try:
                return json.loads(text)
            except ValueError:
                return text
        if isinstance(kind, model.SymbolSet) and text not in kind.members:
            raise ValueError
        return text
    except ValueError:
        raise ChoreographyError(f"input {declared.name!r}: {text!r} is not "
                                f"{model.type_name(kind)}", where) from None


def initial_stores(choreography, values: Mapping) -> dict[str, dict]:
    """Each lifeline's store before its first event: ``init=`` values and its inputs."""
    stores: dict[str, dict] = {name: {} for name in choreography.lifeline_names}
    for declared in choreography.variables.values():
        for place, value in declared.init:
            for name in (choreography.lifeline_names if place == "*" else [place]):
                stores[name][declared.name] = value
    for declared in choreography.inputs.values():
        for name in declared.at:
            stores[name][declared.name] = values[declared.name]
    return stores
