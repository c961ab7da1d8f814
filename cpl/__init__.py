"""Causal Past Logic: guards that decide from the causal past of one lifeline.

Sub-packages, each with a small public face: :mod:`cpl.lang` (the guard
language), :mod:`cpl.trace` (``cpl-msc/1`` traces), :mod:`cpl.monitor`
(compiled monitors), :mod:`cpl.semantics` (the reference evaluator and
explanations), :mod:`cpl.view` (pictures) and :mod:`cpl.anomalies`.
"""

from .lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .errors import CplError, EvaluationError, GuardError, ResolveError
    from .lang import (
        CheckedGuard,
        Schema,
        ast,
        check,
        desugar,
        exports,
        parse,
        predicate,
        resolve,
        to_text,
    )

__all__ = [
    "ast", "CheckedGuard", "check", "CplError", "desugar", "exports", "EvaluationError",
    "GuardError", "ResolveError", "Schema", "resolve", "parse", "predicate", "to_text",
]

face(__name__, {
    ".errors": "CplError EvaluationError GuardError ResolveError",
    ".lang": "CheckedGuard Schema ast check desugar exports parse predicate resolve to_text",
})
