"""What a guard means: the literal evaluator of the definitions, and explanations.

:mod:`.reference` follows the semantics word by word (the oracle the
monitors are tested against, and ``cpl eval --engine reference``);
:func:`explain` says why a guard held or not at one event.
"""

from .explain import ExplainError, Explainer, explain
from .reference import Evaluator, evaluate, evaluate_all, recheck, vector_clocks

__all__ = ["Evaluator", "ExplainError", "Explainer", "evaluate", "evaluate_all", "explain",
           "recheck", "vector_clocks"]
