"""Checking a ``cpl-msc/1`` trace's header (docs/traces.md): its top-level fields but
``events`` and ``meta``, and the checks of a lifeline's name, a store and a value that
the events' checks (``cpl.trace.checker``) share with it.

A document's header is its top-level object less those two; a ``.jsonl``
stream's is its first line, which may hold neither.  Every problem raises the
``TraceError`` that names the first one, worded as the checker words it.
"""

from __future__ import annotations

import re

import attrs

from ..errors import TraceError
from ..lang import KEYWORDS, did_you_mean
from .caps import lifelines_within_cap
from .codec import FORMAT, value_problem
from .wording import shown

TOP_FIELDS = ("format", "lifelines", "vars", "symbols", "predicates", "init", "parts", "events",
              "meta")
HEADER_FIELDS = ("format", "lifelines", "vars", "symbols", "predicates", "init", "parts")
MOST_PREDICATES = 10_000  # more than any choreography's guards name: a hostile or broken file
_LONGEST_NAME = 200
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a predicate a guard can call: the grammar's NAME


@attrs.frozen
class Header:
    """What a trace's header declares, checked."""
    lifelines: tuple[str, ...]
    vars: tuple[str, ...] | None  # None: not declared (the events' ``set`` say which)
    symbols: tuple[str, ...] | None
    predicates: tuple[str, ...] | None  # the application predicates its guards call
    init: dict  # lifeline → {variable: value}
    parts: str | None  # the folder of a run's lifeline logs, beside the trace


def read_header(data, origin: str, stream: bool = False) -> Header:
    """The header of the decoded document ``data`` (with ``stream``, a stream's first line)."""
    if not isinstance(data, dict):
        raise TraceError(f"expected a JSON object with \"format\", \"lifelines\" and "
                         f"\"events\", found {type_name(data)}", origin)
    fields = HEADER_FIELDS if stream else TOP_FIELDS
    for key in data:
        if stream and key in ("events", "meta"):
            raise TraceError(f'the header line has "{key}": in a .jsonl stream every event '
                             f'is a line of its own and meta is the last line '
                             f'{{"end": META}}', origin)
        if key not in fields:
            raise TraceError(f"unknown top-level field {key!r}{did_you_mean(key, fields)} "
                             f"(fields are {', '.join(fields)})", origin)
    if "format" not in data:
        raise TraceError(f'missing "format": add "format": "{FORMAT}"', origin)
    if data["format"] != FORMAT:
        raise TraceError(f"format is {data['format']!r}, but this reader understands "
                         f"'{FORMAT}'", origin)
    if "lifelines" not in data:
        raise TraceError('missing "lifelines": list the lifeline names', origin)
    lifelines = _names(lifelines_within_cap(data["lifelines"], origin), "lifelines", origin)
    variables = _names(data.get("vars"), "vars", origin, optional=True)
    symbols = _names(data.get("symbols"), "symbols", origin, optional=True)
    if variables is not None and symbols is not None:
        both = sorted(set(variables) & set(symbols))
        if both:
            raise TraceError(f"{both[0]!r} is listed both in \"vars\" and in \"symbols\"; "
                             f"a name is one or the other", origin)
    declared = None if variables is None else frozenset(variables)
    return Header(lifelines, variables, symbols, _predicate_names(data.get("predicates"), origin),
                  _init(data.get("init"), lifelines, declared, origin),
                  _parts_name(data.get("parts"), origin))


def _parts_name(value, origin: str) -> str | None:
    """A folder's name beside the trace: one path component, nothing that leads elsewhere."""
    if value is None:
        return None
    if not (isinstance(value, str) and 0 < len(value) <= 255 and value not in (".", "..")
            and not set(value) & {"/", "\\", "\0"}):
        raise TraceError(f'"parts" must name a folder beside the trace (one name, no "/"), '
                         f'found {shown(value)}', origin)
    return value


def _names(value, field: str, origin: str, optional: bool = False) -> tuple[str, ...] | None:
    if value is None and optional:
        return None
    if not isinstance(value, list):
        raise TraceError(f'"{field}" must be a list of names, found {type_name(value)}', origin)
    seen: set[str] = set()
    for name in value:
        if not isinstance(name, str) or not name:
            raise TraceError(f'"{field}" must list non-empty strings, found {shown(name)}',
                             origin)
        if name in seen:
            raise TraceError(f'"{field}" lists {shown(name)} twice', origin)
        seen.add(name)
    return tuple(value)


def _predicate_names(value, origin: str) -> tuple[str, ...] | None:
    """``predicates``: the application predicates the recorded guards call, by name."""
    if value is None:
        return None
    if isinstance(value, list) and len(value) > MOST_PREDICATES:
        raise TraceError(f'"predicates" lists {len(value)} names; a trace names at most '
                         f"{MOST_PREDICATES} (the predicates its guards call)", origin)
    names = _names(value, "predicates", origin)
    for name in names:
        if not (len(name) <= _LONGEST_NAME and _NAME.fullmatch(name)) or name in KEYWORDS:
            raise TraceError(f'"predicates" lists {shown(name)}, which no guard can call: a '
                             f"predicate is named by an identifier (letters, digits, _; "
                             f"not a keyword; at most {_LONGEST_NAME} characters)", origin)
    return names


def _init(value, lifelines: tuple[str, ...], declared: frozenset[str] | None,
          origin: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TraceError(f'"init" must be an object lifeline → {{variable: value}}, '
                         f"found {type_name(value)}", origin)
    for name, store in value.items():
        check_lifeline(name, lifelines, '"init"', origin)
        check_store(store, f'"init" of {name}', declared, origin)
    return value


def check_lifeline(name, lifelines: tuple[str, ...], what: str, origin: str,
                   index: int | None = None, event_id=None) -> str:
    """``name``, if it is one of ``lifelines``; ``what`` says where it was found."""
    if not isinstance(name, str):
        raise TraceError(f"{what} must be a lifeline name, found {type_name(name)}",
                         origin, index, event_id)
    if name not in lifelines:
        raise TraceError(f"{what}: unknown lifeline {name!r}{did_you_mean(name, lifelines)} "
                         f"(lifelines: {', '.join(lifelines) or 'none'}); add it to "
                         f'"lifelines" or fix the name', origin, index, event_id)
    return name


def check_store(store, where: str, declared: frozenset[str] | None, origin: str, index=None,
                event_id=None) -> None:
    """A map variable → value: names ``declared`` (if the header declares ``vars``)."""
    if not isinstance(store, dict):
        raise TraceError(f"{where} must be an object variable → value, found "
                         f"{type_name(store)}", origin, index, event_id)
    for key, value in store.items():
        if not isinstance(key, str) or not key:
            raise TraceError(f"{where} has the key {key!r}; variable names are non-empty "
                             f"strings", origin, index, event_id)
        if declared is not None and key not in declared:
            raise TraceError(f"{where} assigns {key!r}, which \"vars\" does not declare"
                             f"{did_you_mean(key, declared)}; add it to \"vars\"",
                             origin, index, event_id)
        check_value(value, f"{where}: {key!r}", origin, index, event_id)


def check_value(value, where: str, origin: str, index=None, event_id=None) -> None:
    """JSON values only, so every trace can be written back as JSON."""
    if value is None or isinstance(value, (bool, int, str)):
        return
    problem = value_problem(value)
    if problem:
        raise TraceError(f"{where} {problem}", origin, index, event_id)


def type_name(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(value),
                                                                        type(value).__name__)
