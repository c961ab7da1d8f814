"""The guard language: grammar, parser, AST, printer, names, sugar and predicates.

A guard is text; :func:`check` turns it into a :class:`CheckedGuard` (parsed,
names resolved against a :class:`Schema`, sugar removed).  Nothing here
knows about traces or monitors: the other sub-packages build on this one.
"""

from . import ast
from .check import CheckedGuard, check
from .desugar import Exports, desugar, exports
from .mentions import named_lifelines, named_predicates, references
from .names import Schema, did_you_mean, resolve
from .parser import KEYWORDS, MAX_GUARD_LENGTH, parse
from .predicates import DEFAULT, Registry, application, predicate
from .printer import literal_text, term_text, to_text
from .values import COMPARE, UNSET, is_number

__all__ = [
    "ast", "COMPARE", "CheckedGuard", "DEFAULT", "Exports", "KEYWORDS", "MAX_GUARD_LENGTH",
    "Registry", "Schema", "UNSET", "application", "check", "desugar", "did_you_mean", "exports",
    "is_number", "literal_text", "named_lifelines", "named_predicates", "parse", "predicate",
    "references", "resolve", "term_text", "to_text",
]
