"""The guard parser's LALR tables, built once and shipped beside the grammar.

Why: building Lark's LALR parser from ``grammar.lark`` costs ~50 ms, paid by
every process that parses a guard — ``cpl run`` before it starts any
lifeline, each ``cpl`` command.  Loading the same parser from its serialized
tables costs ~2 ms.  The tables are plain JSON (tuples tagged, so they load
back equal), never a pickle, and carry the grammar's hash and Lark's version:
tables that do not match what is installed are ignored and the parser is
built as before, so a stale file costs time, never a different parse.

Regenerate after editing the grammar: ``python -m cpl.lang.tables``
(``tests/test_grammar.py`` fails while the shipped tables are stale).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

GRAMMAR = Path(__file__).with_name("grammar.lark")
TABLES = Path(__file__).with_name("grammar.tables.json")
OPTIONS = {"parser": "lalr", "lexer": "basic", "propagate_positions": True,
           "maybe_placeholders": True}
_TUPLE, _ITEMS = "__tuple__", "__items__"  # JSON has no tuples, and only text keys


def build(grammar: str) -> lark.Lark:
    return lark.Lark(grammar, **OPTIONS)


def stamp(grammar: str) -> dict:
    """What the tables must have been built from to be used."""
    return {"grammar_sha256": hashlib.sha256(grammar.encode("utf-8")).hexdigest(),
            "lark": lark.__version__}


def parser() -> lark.Lark:
    """The guard parser: from the shipped tables when they match, else built."""
    grammar = GRAMMAR.read_text(encoding="utf-8")
    try:
        shipped = json.loads(TABLES.read_text(encoding="utf-8"), object_hook=_untag)
        if shipped.get("stamp") == stamp(grammar):
            return lark.Lark.load({"data": shipped["data"], "memo": shipped["memo"]})
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # missing, unreadable or from another Lark: build it
    return build(grammar)


def serialized(grammar: str) -> dict:
    """The tables of ``grammar``'s parser as Lark serializes them (tuples and all)."""
    data, memo = build(grammar).memo_serialize([TerminalDef, Rule])
    return {"stamp": stamp(grammar), "data": data, "memo": memo}


def _tag(value):
    if isinstance(value, tuple):
        return {_TUPLE: [_tag(item) for item in value]}
    if isinstance(value, list):
        return [_tag(item) for item in value]
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _tag(item) for key, item in value.items()}
        return {_ITEMS: [[_tag(key), _tag(item)] for key, item in value.items()]}
    return value


def _untag(mapping: dict):
    if len(mapping) == 1 and _TUPLE in mapping:
        return tuple(mapping[_TUPLE])
    if len(mapping) == 1 and _ITEMS in mapping:
        return {key: item for key, item in mapping[_ITEMS]}
    return mapping


def write() -> None:
    tables = serialized(GRAMMAR.read_text(encoding="utf-8"))
    TABLES.write_text(json.dumps(_tag(tables), separators=(",", ":"), sort_keys=True) + "\n",
                      encoding="utf-8")


if __name__ == "__main__":
    write()
