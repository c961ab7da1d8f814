"""Text → AST.  ``lalr`` does the parsing, from the tables Lark built
(``tables``); this module turns its trees into frozen AST values and its
errors into ``GuardError`` with words a person can act on ("expected a term
after '=='", "unclosed '('": ``refusals``)."""

from __future__ import annotations

import functools
import math

from . import ast, tables
from .lalr import UnexpectedInput
from ..errors import GuardError

# The words of the grammar that cannot name a variable or a lifeline (cpl.md,
# Syntax): the one list, also used to check choreography declarations.
KEYWORDS = frozenset("S Y P O H true false null and or not since Seen".split())
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}
# Operators nested deeper than this are refused with a located error.  A chain of
# ``&&`` (or of ``||``), however parenthesised, is one level: the operator is
# associative, so ``x && x && …`` is long, not deep.  No stage recurses over a
# formula's depth (``ast.fold``); the limit keeps guards readable and the
# reference evaluator's recursion over real nesting (``S``, ``@``, ``!``, …) short.
MAX_DEPTH = 100
_OPERATORS = {"at", "not_", "prev", "past", "once", "hist", "since", "and_", "or_", "implies"}
_CHAINS = {"and_", "or_"}
# Longer guards are refused before parsing: parsing costs 10-20 µs a character
# (a 1 MB guard took 10 s), and a guard this long is a program, not a condition.
MAX_GUARD_LENGTH = 100_000


_parser = functools.lru_cache(maxsize=None)(tables.parser)


def parse(text: str) -> ast.Formula:
    """Parse guard text; raise ``GuardError`` (never a parser exception)."""
    if not isinstance(text, str):
        raise GuardError(f"a guard must be text, not {type(text).__name__}")
    if not text.strip():
        raise GuardError("the guard is empty; expected a formula", text, 1, 1)
    if len(text) > MAX_GUARD_LENGTH:
        raise GuardError(f"the guard is {len(text):,} characters long; at most "
                         f"{MAX_GUARD_LENGTH:,} are read",
                         hint="split it into several smaller guards")
    try:
        tree = _parser().parse(text)
        _check_depth(tree, text)
        return ast.hashed(_Builder(text).transform(tree))
    except UnexpectedInput as error:
        from .refusals import explain  # only a refused guard needs its wording
        raise explain(_parser(), text, error, KEYWORDS) from None
    except RecursionError:
        raise GuardError("the guard is nested too deeply to read", text, 1, 1) from None


def _check_depth(tree, text: str) -> None:
    """Refuse formulas nested more than ``MAX_DEPTH`` operators deep (without recursing)."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if node.data not in _OPERATORS:  # an atom: terms only below
            continue
        if depth > MAX_DEPTH:
            raise GuardError(f"the guard nests operators more than {MAX_DEPTH} deep",
                             text, node.meta.line, node.meta.column,
                             hint="split it into several smaller guards")
        stack.extend((child, depth + (child.data != node.data or node.data not in _CHAINS))
                     for child in node.children if _is_tree(child))


def _is_tree(node) -> bool:
    """A rule's node, not a token (a ``str``) or an absent option (``None``)."""
    return node is not None and not isinstance(node, str)


# ------------------------------------------------------------ tree → AST


def _span(meta) -> ast.Span | None:
    if getattr(meta, "empty", True):
        return None
    return ast.Span(meta.line, meta.column, meta.start_pos, meta.end_pos)


def _token_span(token) -> ast.Span:
    return ast.Span(token.line, token.column, token.start_pos, token.end_pos)


class _Builder:
    """The parse tree → AST, one method per rule called with (meta, children), children
    first.  Iterative: a chain of ``&&`` is a tree as deep as the chain is long."""

    def __init__(self, text: str):
        self._text = text

    def transform(self, tree):
        results: list = []
        stack = [(tree, False)]
        while stack:
            node, expanded = stack.pop()
            if not _is_tree(node):  # a token, or None for an absent option
                results.append(node)
            elif not expanded:
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(node.children))
            else:
                first = len(results) - len(node.children)
                children = results[first:]
                del results[first:]
                results.append(getattr(self, node.data)(node.meta, children))
        (formula,) = results
        return formula

    def _fail(self, message: str, token) -> GuardError:
        return GuardError.at_offset(message, self._text, token.start_pos,
                                    token.end_pos - token.start_pos)

    # terms
    def var(self, meta, children):
        (name,) = children
        return ast.Var(str(name), span=_token_span(name))

    def remote(self, meta, children):
        lifeline, name = children
        return ast.Remote(str(lifeline), str(name), span=_span(meta))

    def number(self, meta, children):
        (token,) = children
        text = str(token)
        if any(c in text for c in ".eE"):
            value = float(text)
            if not math.isfinite(value):
                raise self._fail(f"number {text} is out of range", token)
        else:
            try:
                value = int(text)
            except ValueError:  # more digits than Python converts
                raise self._fail(f"number {text[:20]}… has too many digits", token) from None
        return ast.Const(value, span=_token_span(token))

    def string(self, meta, children):
        (token,) = children
        return ast.Const(self._unescape(token), span=_token_span(token))

    def true(self, meta, children):
        return ast.Const(True, span=_span(meta))

    def false(self, meta, children):
        return ast.Const(False, span=_span(meta))

    def null(self, meta, children):
        return ast.Const(None, span=_span(meta))

    def _unescape(self, token) -> str:
        body, out, i = str(token)[1:-1], [], 0
        while i < len(body):
            char = body[i]
            if char != "\\":
                out.append(char)
                i += 1
                continue
            code = body[i + 1]
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                i += 2
            elif code == "u" and len(body) >= i + 6 and _is_hex(body[i + 2:i + 6]):
                out.append(chr(int(body[i + 2:i + 6], 16)))
                i += 6
            else:
                offset = token.start_pos + 1 + i
                raise GuardError.at_offset(
                    f"unknown escape '\\{code}' in a string", self._text, offset, 2,
                    hint="escapes are \\\\ \\\" \\' \\n \\t \\r \\0 and \\uXXXX")
        return "".join(out)

    # formulas
    def compare(self, meta, children):
        left, op, right = children
        return ast.Compare(str(op), left, right, span=_span(meta))

    def pred(self, meta, children):
        name, *args = children
        return ast.Pred(str(name), tuple(a for a in args if a is not None), span=_span(meta))

    def truth(self, meta, children):
        (term,) = children
        if isinstance(term, ast.Const) and isinstance(term.value, bool):
            return ast.Bool(term.value, span=_span(meta))
        return ast.Truth(term, span=_span(meta))

    def at(self, meta, children):
        lifeline, body = children
        return ast.At(str(lifeline), body, span=_span(meta))

    def seen(self, meta, children):
        (lifeline,) = children
        return ast.Seen(str(lifeline), span=_span(meta))

    def _unary(cls):
        return lambda self, meta, children: cls(children[0], span=_span(meta))

    def _binary(cls):
        return lambda self, meta, children: cls(children[0], children[1], span=_span(meta))

    not_ = _unary(ast.Not)
    prev = _unary(ast.Prev)
    past = _unary(ast.Past)
    once = _unary(ast.Once)
    hist = _unary(ast.Hist)
    since = _binary(ast.Since)
    and_ = _binary(ast.And)
    or_ = _binary(ast.Or)
    implies = _binary(ast.Implies)
    del _unary, _binary


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)
