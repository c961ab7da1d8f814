"""AST → canonical text with the fewest parentheses the precedence allows.

``parse(to_text(f)) == f`` for every formula: the printer parenthesises a
child exactly when the grammar would otherwise attach it differently.
"""

from __future__ import annotations

import math

from . import ast

# Binding strength, loosest first, as in the grammar.
IMPLIES, OR, AND, SINCE, PREFIX, PRIMARY = range(1, 7)

_PREFIX_WORD = {ast.Not: "!", ast.Prev: "Y ", ast.Past: "P ", ast.Once: "O ", ast.Hist: "H "}
# operator, own level, minimum level of the left and the right operand
_BINARY = {
    ast.Implies: ("->", IMPLIES, OR, IMPLIES),
    ast.Or: ("||", OR, OR, AND),
    ast.And: ("&&", AND, AND, SINCE),
    ast.Since: ("S", SINCE, PREFIX, SINCE),
}


def to_text(formula: ast.Formula) -> str:
    """The canonical text of a formula."""
    return _print(formula, IMPLIES)


def term_text(term: ast.Term) -> str:
    if isinstance(term, (ast.Var, ast.Symbol)):
        return term.name
    if isinstance(term, ast.Remote):
        return f"@{term.lifeline}.{term.name}"
    return literal_text(term.value)


def literal_text(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} has no CPL literal")
        text = repr(value)
        return text if any(c in text for c in ".e") else text + ".0"
    if isinstance(value, str):
        return _quote(value)
    raise TypeError(f"{type(value).__name__} values have no CPL literal")


def _quote(text: str) -> str:
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) < 0x20 or not char.isprintable():
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else char)
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def _level(node) -> int:
    if type(node) in _BINARY:
        return _BINARY[type(node)][1]
    if type(node) in _PREFIX_WORD:
        return PREFIX
    return PRIMARY


def _print(formula, minimum: int) -> str:
    """Pieces written left to right from a stack of nodes still to print and text already
    decided: no recursion (a chain of 10,000 ``&&`` is a formula 10,000 deep), and no
    piece copied more than once (joined at the end)."""
    pieces: list[str] = []
    stack: list = [(formula, minimum)]
    while stack:
        item = stack.pop()
        if type(item) is str:
            pieces.append(item)
            continue
        node, at_least = item
        kind = type(node)
        wrap = _level(node) < at_least
        later: list = [")"] if wrap else []  # pushed in reverse: the last piece first
        if kind in _BINARY:
            word, _, left_min, right_min = _BINARY[kind]
            later += [(node.right, right_min), f" {word} ", (node.left, left_min)]
        elif kind in _PREFIX_WORD:
            later += [(node.body, PREFIX), _PREFIX_WORD[kind]]
        elif kind is ast.At:
            later += [")", (node.body, IMPLIES), f"@{node.lifeline}("]
        else:
            later.append(_atom_text(node))
        if wrap:
            later.append("(")
        stack.extend(later)
    return "".join(pieces)


def _atom_text(node) -> str:
    kind = type(node)
    if kind is ast.Bool:
        return "true" if node.value else "false"
    if kind is ast.Compare:
        return f"{term_text(node.left)} {node.op} {term_text(node.right)}"
    if kind is ast.Pred:
        return f"{node.name}({', '.join(term_text(a) for a in node.args)})"
    if kind is ast.Truth:
        return term_text(node.term)
    if kind is ast.Seen:
        return f"Seen({node.lifeline})"
    raise TypeError(f"not a CPL formula: {node!r}")
