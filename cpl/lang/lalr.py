"""The guard parser's run-time half: a lexer and an LALR(1) driver reading prebuilt tables.

Why: Lark (and the ``regex`` module it imports) cost ~30 ms of every ``cpl``
process's start, even with its tables prebuilt, for a job that is a loop over a
table.  Lark still builds the tables from ``grammar.lark`` (``tables.py``, when
the grammar changes); this module reads them and gives what ``parser.py`` used
from Lark: the same tokens (with their positions), the same trees (rule names,
children, placeholders for an absent ``[...]``, positions of each node) and the same
errors (the unexpected token and the terminals the state expected, or the offset of
a character no terminal matches).  ``tests/test_grammar.py`` parses and refuses
guards with this and with Lark's own parser and compares.
"""

from __future__ import annotations

import re


class UnexpectedInput(Exception):
    """The text is not a guard."""


class UnexpectedCharacters(UnexpectedInput):
    """No terminal matches at ``pos_in_stream``."""

    def __init__(self, pos_in_stream: int):
        super().__init__(f"no terminal matches at offset {pos_in_stream}")
        self.pos_in_stream = pos_in_stream


class UnexpectedToken(UnexpectedInput):
    """``token`` where the parser's state takes only the terminals ``expected``."""

    def __init__(self, token: "Token", expected: set[str]):
        super().__init__(f"unexpected {token.type} {str(token)!r}")
        self.token = token
        self.expected = expected


class Token(str):
    """A terminal's text, its ``type`` (terminal name) and where it was written: 1-based
    line and column, 0-based offsets (``end_pos`` one past its last character)."""

    def __new__(cls, type_, value, start_pos, line, column, end_line, end_column, end_pos):
        token = super().__new__(cls, value)
        token.type = type_
        token.start_pos, token.line, token.column = start_pos, line, column
        token.end_pos, token.end_line, token.end_column = end_pos, end_line, end_column
        return token


class Meta:
    """A node's position: from its first token to its last (``empty`` when it has none).
    ``outer_*`` is the span of what the node stands for in its parent, which may be
    wider: ``(x)`` is the node ``x`` whose outer span includes the parentheses."""

    __slots__ = ("empty", "line", "column", "start_pos", "end_line", "end_column", "end_pos",
                 "outer_start", "outer_end")

    def __init__(self):
        self.empty = True
        self.line = self.column = self.start_pos = None
        self.end_line = self.end_column = self.end_pos = None
        self.outer_start = self.outer_end = None


class Tree:
    """A rule's node: its name (``data``), its kept children (``None`` for an absent
    optional part) and its ``meta``.  Equal to a Lark tree of the same shape."""

    __slots__ = ("data", "children", "meta")

    def __init__(self, data: str, children: list):
        self.data, self.children, self.meta = data, children, Meta()

    def __eq__(self, other):
        try:
            return self.data == other.data and self.children == other.children
        except AttributeError:
            return False

    __hash__ = None

    def __repr__(self):
        return f"Tree({self.data!r}, {self.children!r})"


def _first(children) -> tuple | None:
    """The outer start of the first child that has a position."""
    for child in children:
        if isinstance(child, Tree):
            if not child.meta.empty:
                return child.meta.outer_start
        elif isinstance(child, Token):
            return (child.line, child.column, child.start_pos)
    return None


def _last(children) -> tuple | None:
    for child in reversed(children):
        if isinstance(child, Tree):
            if not child.meta.empty:
                return child.meta.outer_end
        elif isinstance(child, Token):
            return (child.end_line, child.end_column, child.end_pos)
    return None


class Parser:
    """The guard grammar's lexer and LALR(1) parser, from the tables ``tables.py`` made."""

    def __init__(self, tables: dict):
        self._scanner = re.compile("|".join(f"(?P<{name}>{pattern})"
                                            for name, pattern in tables["terminals"]))
        self._keywords = tables["keywords"]  # NAME "since" is the terminal SINCE
        self._ignore = frozenset(tables["ignore"])
        self._newlines = frozenset(tables["newlines"])
        self._literals = tables["literals"]
        self._states = [dict(state) for state in tables["states"]]
        self._start, self._end = tables["start"], tables["end"]
        # (symbol reduced to, children taken, node name, kept when alone, kept children)
        self._rules = [tuple(rule) for rule in tables["rules"]]

    def literal(self, terminal: str) -> str | None:
        """The text (or pattern) that defines ``terminal``."""
        return self._literals.get(terminal)

    def lex(self, text: str):
        """The tokens of ``text``, whitespace left out; ``UnexpectedCharacters`` where
        no terminal matches (raised when the lexing reaches there)."""
        match, keywords = self._scanner.match, self._keywords
        pos, line, line_start, size = 0, 1, 0, len(text)
        while pos < size:
            found = match(text, pos)
            if found is None:
                raise UnexpectedCharacters(pos)
            value, kind = found.group(0), found.lastgroup
            start, start_line, start_column = pos, line, pos - line_start + 1
            if kind in self._newlines and "\n" in value:
                line += value.count("\n")
                line_start = pos + value.rindex("\n") + 1
            pos += len(value)
            if kind in self._ignore:
                continue
            kind = keywords.get(kind, {}).get(value, kind)
            yield Token(kind, value, start, start_line, start_column, line,
                        pos - line_start + 1, pos)

    def parse(self, text: str) -> Tree | Token:
        states, rules, end = self._states, self._rules, self._end
        state_stack, value_stack = [self._start], []

        def feed(token, at_end: bool):
            while True:
                state = state_stack[-1]
                action = states[state].get(token.type)
                if action is None:
                    raise UnexpectedToken(token, {s for s in states[state] if s.isupper()})
                if action >= 0:  # shift
                    state_stack.append(action)
                    value_stack.append(token)
                    return None
                origin, size, name, single, kept = rules[-1 - action]
                if size:
                    children = value_stack[-size:]
                    del state_stack[-size:]
                    del value_stack[-size:]
                else:
                    children = []
                state_stack.append(states[state_stack[-1]][origin])
                value_stack.append(_reduce(children, name, single, kept))
                if at_end and state_stack[-1] == end:
                    return value_stack[-1]

        last = None
        for last in self.lex(text):
            feed(last, False)
        if last is None:
            closing = Token("$END", "", 0, 1, 1, 1, 1, 0)
        else:
            closing = Token("$END", "", last.start_pos, last.line, last.column, last.end_line,
                            last.end_column, last.end_pos)
        return feed(closing, True)


def _reduce(children: list, name: str, single: bool, kept):
    """The value of a rule over ``children``: the kept children (anonymous punctuation
    dropped, ``_rule``s spliced in, ``None`` for an absent ``[...]``), the only one of
    them if the rule is ``?inlined``, else a node; a node's position is its children's."""
    kids = children
    if kept is not None:
        included, trailing = kept
        kids = []
        for index, splice, nones in included:
            kids.extend([None] * nones)
            if splice:
                kids.extend(children[index].children)
            else:
                kids.append(children[index])
        kids.extend([None] * trailing)
    if single and len(kids) == 1:
        result = kids[0]
    else:
        result = Tree(name, kids)
    if isinstance(result, Tree):
        meta = result.meta
        first = _first(children)
        if first is not None:
            if meta.line is None:
                meta.line, meta.column, meta.start_pos = first
                meta.empty = False
            meta.outer_start = first
        last = _last(children)
        if last is not None:
            if meta.end_line is None:
                meta.end_line, meta.end_column, meta.end_pos = last
                meta.empty = False
            meta.outer_end = last
    return result
