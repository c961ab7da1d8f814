"""A guard the parser refused, in words a person can act on: "expected a term after
'=='", "unclosed '('", "did you mean '&&'?".

Apart from ``parser.py`` because only a refused guard needs it: every ``cpl`` process
that parses guards would otherwise compile it at start-up (no ``.pyc`` kept).
"""

from __future__ import annotations

from ..errors import GuardError
from .lalr import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

_WORDS = {"NAME": "a name", "NUMBER": "a number", "STRING": "a string",
          "COMPARE": "a comparison operator", "$END": "the end of the guard"}


def _describe(parser, terminal: str) -> str:
    if terminal in _WORDS:
        return _WORDS[terminal]
    text = parser.literal(terminal)
    return terminal.lower() if text is None else f"'{text}'"


def _tokens_before(parser, text: str, offset: int) -> list:
    try:
        return list(parser.lex(text[:offset]))
    except UnexpectedInput:
        return []


def _open_paren(tokens) -> object | None:
    """The innermost '(' still open among ``tokens``."""
    stack = []
    for token in tokens:
        if token.type == "LPAR":
            stack.append(token)
        elif token.type == "RPAR" and stack:
            stack.pop()
    return stack[-1] if stack else None


def explain(parser, text: str, error: UnexpectedInput, keywords: frozenset) -> GuardError:
    """``error`` of ``parser`` on ``text`` as a ``GuardError`` in words (``keywords``: the
    grammar's words that cannot be names, ``parser.KEYWORDS``)."""
    if isinstance(error, UnexpectedCharacters):
        return _bad_character(text, error.pos_in_stream)
    assert isinstance(error, UnexpectedToken)
    token, expected = error.token, set(error.expected)
    at_end = token.type == "$END"
    offset = len(text.rstrip()) if at_end else token.start_pos
    width = 1 if at_end else max(1, len(str(token)))
    before = _tokens_before(parser, text, offset)
    previous = f" after '{before[-1]}'" if before else ""
    found = "the guard ends" if at_end else f"found '{token}'"
    opened = _open_paren(before)
    hint = None
    if opened is not None:
        hint = f"the '(' at line {opened.line}, column {opened.column} is still open"

    keyword = str(token) in keywords and token.type != "NAME" and "NAME" in expected
    if keyword:
        hint = f"'{token}' is a keyword and cannot be used as a name"
    if before and before[-1].type == "AT":
        message = f"expected a lifeline name after '@', but {found}"
    elif before and before[-1].type == "DOT":
        message = f"expected a variable name after '.', but {found}"
    elif [t.type for t in before[-2:]] == ["SEEN", "LPAR"]:
        message = f"expected a lifeline name after 'Seen(', but {found}"
    elif "BANG" in expected:
        message = f"expected a formula{previous}, but {found}"
    elif "NUMBER" in expected:
        message = f"expected a term{previous}, but {found}"
    elif at_end and opened is not None and "RPAR" in expected:
        message, hint = f"unclosed '(' (opened at line {opened.line}, column {opened.column})", None
    elif token.type == "RPAR" and opened is None:
        message = "unmatched ')'"
    elif expected & {"AND", "OR", "S"}:
        closing = ", '->' or ')'" if opened is not None else " or '->'"
        message = (f"unexpected '{token}'{previous}; expected an operator such as "
                   f"'&&', '||', 'S'{closing}")
    else:
        wanted = sorted({_describe(parser, name) for name in expected if name != "$END"})
        if "$END" in expected:
            wanted.append("the end of the guard")
        listing = ", ".join(wanted[:-1]) + (" or " if len(wanted) > 1 else "") + wanted[-1]
        message = f"expected {listing}{previous}, but {found}"
    return GuardError.at_offset(message, text, offset, width, hint)


def _bad_character(text: str, offset: int) -> GuardError:
    char = text[offset]
    if char in "\"'":
        return GuardError.at_offset("unterminated string", text, offset,
                                    hint=f"close it with {char} on the same line")
    rest = text[offset:offset + 2]
    # Longer prefixes first: '=!' and '=<' are swapped operators, '=>' an arrow.
    suggestions = {"=!": "'!='", "=<": "'<='", "=>": "'->' or '>='", "=": "'=='", "&": "'&&'",
                   "|": "'||'", "!": "'!' before a formula or '!='"}
    for prefix, word in suggestions.items():
        if rest.startswith(prefix):
            return GuardError.at_offset(f"unexpected '{char}'; did you mean {word}?", text, offset)
    if char == "@":
        return GuardError.at_offset("'@' must be followed by a lifeline name", text, offset)
    shown = f"'{char}'" if char.isprintable() else f"U+{ord(char):04X}"
    return GuardError.at_offset(f"unexpected character {shown}", text, offset)
