"""The guard parser's tables, built by Lark once and shipped beside the grammar.

Why: building Lark's LALR parser from ``grammar.lark`` costs ~50 ms, and even
loading Lark's own serialized parser means importing Lark (~30 ms): paid by every
process that parses a guard — ``cpl run`` before it starts any lifeline, each
``cpl`` command.  So Lark runs only here, when the grammar changes: its lexer's
terminals (in the order it tries them), its keywords, its LALR states and what
each rule keeps of its children go into ``grammar.tables.json`` (plain JSON, never a
pickle), and ``lalr.Parser`` reads them.  The file carries the grammar it was
built from: when that is not the grammar installed beside it, the tables are
built again with Lark (a slower start, never a different parse).

Regenerate after editing the grammar: ``python -m cpl.lang.tables``
(``tests/test_grammar.py`` fails while the shipped tables are stale).
"""

from __future__ import annotations

import json
from pathlib import Path

from .lalr import Parser, UnexpectedCharacters, UnexpectedToken

GRAMMAR = Path(__file__).with_name("grammar.lark")
TABLES = Path(__file__).with_name("grammar.tables.json")
OPTIONS = {"parser": "lalr", "lexer": "basic", "propagate_positions": True,
           "maybe_placeholders": True}
FORMAT = 2  # of the file: 1 was Lark's own serialization


def stamp(grammar: str) -> dict:
    """What the tables must have been built from to be used."""
    return {"format": FORMAT, "grammar": grammar}


def parser() -> Parser:
    """The guard parser: from the shipped tables when they are this grammar's, else
    from tables Lark builds now."""
    grammar = GRAMMAR.read_text(encoding="utf-8")
    try:
        shipped = json.loads(TABLES.read_text(encoding="utf-8"))
        if shipped.get("stamp") == stamp(grammar):
            return Parser(shipped)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        pass  # missing, unreadable or broken: build them
    return Parser(serialized(grammar))


def build(grammar: str):
    """Lark's own parser of ``grammar`` (a ``lark.Lark``)."""
    import lark
    return lark.Lark(grammar, **OPTIONS)


def serialized(grammar: str) -> dict:
    """The tables of ``grammar``, as ``lalr.Parser`` reads them, from Lark's parser."""
    built = build(grammar)
    lexer = built.parser.lexer
    scanner = lexer.scanner  # its terminals in the order it tries them, keywords left out
    assert not built.options.lexer_callbacks and built.options.postlex is None
    assert all(not t.pattern.flags for t in lexer.terminals), "flags are not carried"
    keywords = {kind: {t.pattern.value: t.name for t in unless.scanner.terminals}
                for kind, unless in lexer.callback.items()}
    table = built.parser.parser._parse_table
    rules = [rule for rule, _ in built._parse_tree_builder.rule_builders]
    index = {rule: number for number, rule in enumerate(rules)}
    states = [{symbol: (target if action.name == "Shift" else -1 - index[target])
               for symbol, (action, target) in table.states[state].items()}
              for state in range(len(table.states))]
    return {
        "stamp": stamp(grammar),
        "terminals": [[t.name, t.pattern.to_regexp()] for t in scanner.terminals],
        "keywords": keywords,
        "ignore": sorted(lexer.ignore_types),
        "newlines": sorted(lexer.newline_types),
        "literals": {t.name: t.pattern.value for t in built.terminals},
        "states": states,
        "start": table.start_states["start"],
        "end": table.end_states["start"],
        "rules": [_rule(rule, chain) for rule, chain in built._parse_tree_builder.rule_builders],
    }


def _rule(rule, chain) -> list:
    """(symbol, children taken, node name, kept when alone, kept children): what Lark's
    tree builder does for ``rule``, read from the wrappers it chose."""
    import functools
    single, kept = False, None
    for wrapper in chain:
        kind = wrapper.func.__name__ if isinstance(wrapper, functools.partial) \
            else wrapper.__name__
        if kind == "ExpandSingleChild":
            single = True
        elif kind == "ChildFilterLALR":
            included, trailing = wrapper.args
            kept = [[[i, bool(splice), nones] for i, splice, nones in included], trailing]
        elif kind == "ChildFilterLALR_NoPlaceholders":
            (included,) = wrapper.args
            kept = [[[i, bool(splice), 0] for i, splice in included], 0]
        else:
            assert kind == "PropagatePositions", kind
    name = rule.alias or rule.options.template_source or rule.origin.name
    return [rule.origin.name, len(rule.expansion), name, single, kept]


class Built:
    """Lark's own parser with ``lalr.Parser``'s interface: what the tests compare the
    shipped tables' parser with."""

    def __init__(self, grammar: str):
        self._lark = build(grammar)

    def literal(self, terminal: str) -> str | None:
        return next((t.pattern.value for t in self._lark.terminals if t.name == terminal), None)

    def _lark_errors(self, work):
        from lark.exceptions import UnexpectedCharacters as Characters
        from lark.exceptions import UnexpectedToken as Unexpected
        try:
            return work()
        except Characters as error:
            raise UnexpectedCharacters(error.pos_in_stream) from None
        except Unexpected as error:
            raise UnexpectedToken(error.token, set(error.expected)) from None

    def parse(self, text: str):
        return self._lark_errors(lambda: self._lark.parse(text))

    def lex(self, text: str):
        return self._lark_errors(lambda: list(self._lark.lex(text)))


def write() -> None:
    TABLES.write_text(json.dumps(serialized(GRAMMAR.read_text(encoding="utf-8")),
                                 separators=(",", ":"), sort_keys=True) + "\n",
                      encoding="utf-8")


if __name__ == "__main__":
    write()
