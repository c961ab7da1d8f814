"""Causal Past Logic: guards that decide from the causal past of one lifeline."""

from . import ast
from .check import CheckedGuard, check
from .desugar import desugar, exports
from .errors import EvaluationError, GuardError, ResolveError
from .names import Schema, resolve
from .parser import parse
from .predicates import predicate
from .printer import to_text

__all__ = [
    "ast", "CheckedGuard", "check", "desugar", "exports", "EvaluationError", "GuardError",
    "ResolveError", "Schema", "resolve", "parse", "predicate", "to_text",
]
