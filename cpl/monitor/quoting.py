"""How text from input reaches a generated monitor: as a literal, or escaped in a comment.

Lifelines, variables, symbols, predicates and values come from guards, traces
and choreographies, which are anybody's text.  ``MonitorWriter.constant`` writes
a value as its ``repr`` only when :func:`plain_literal` says that is a Python
literal of the same value (anything else is bound by name in the namespace);
every other piece of input text in the source is inside a ``#`` comment, made
safe by :func:`comment`.
"""

from __future__ import annotations

import math

from ..lang import ast, to_text


def plain_literal(value) -> bool:
    """Values whose ``repr`` is a Python literal of the same value (and nothing else)."""
    kind = type(value)
    return kind in (str, int, bool, type(None)) or (kind is float and math.isfinite(value))


def hashable(value) -> bool:
    """A value that can key the table of constants (else it is keyed by identity)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


COMMENT_LENGTH = 100


def comment(text) -> str:
    """User text made safe for a ``#`` comment: every non-printable or non-ASCII
    character escaped (nothing can end the line), and the length capped."""
    text = str(text).encode("unicode_escape").decode("ascii")  # \n, \x7f, \u2028, ...
    return text if len(text) <= COMMENT_LENGTH else text[:COMMENT_LENGTH - 3] + "..."


_SHOWN = {ast.Since: "v{} S v{}", ast.And: "v{} && v{}", ast.Or: "v{} || v{}",
          ast.Not: "!v{}", ast.Prev: "Y v{}"}


def named(lifeline) -> str:
    """`` (name)`` for a comment, or nothing for the shared monitor of no lifeline."""
    return f" ({comment(lifeline)})" if lifeline is not None else ""


def slot_comment(node, slot_of, positions) -> str:
    """A slot's comment: its operator over child slots (never the whole subtree, which
    nested ``P`` makes exponential), or an atom's text, escaped and capped."""
    kind = type(node)
    if kind in _SHOWN:
        return _SHOWN[kind].format(*(slot_of[child] for child in ast.children(node)))
    if kind is ast.At:
        return f"@{comment(node.lifeline)}(...) as lifeline {positions[node.lifeline]} shows it"
    try:
        return comment(to_text(node))
    except (TypeError, ValueError):  # a value with no CPL literal (NaN, say): still a comment
        return comment(repr(node))
