"""What a guard means: the literal evaluator of the definitions, and explanations.

:mod:`.reference` follows the semantics word by word (the oracle the
monitors are tested against, and ``cpl eval --engine reference``);
:func:`explain` says why a guard held or not at one event, and
:func:`explain_stream` says it from a ``.jsonl`` stream keeping only its last
events (:class:`Recent`).
"""

from ..lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .explain import Explainer, ExplainError, Explanation, Step, Term, explain
    from .recent import Recent, explain_stream
    from .reference import (
        BeyondSlice,
        Evaluator,
        Horizon,
        evaluate,
        evaluate_all,
        recheck,
        vector_clocks,
    )

__all__ = ["BeyondSlice", "Evaluator", "ExplainError", "Explainer", "Explanation", "Horizon",
           "Recent", "Step", "Term", "evaluate", "evaluate_all", "explain", "explain_stream",
           "recheck", "vector_clocks"]

face(__name__, {
    ".explain": "ExplainError Explainer Explanation Step Term explain",
    ".recent": "Recent explain_stream",
    ".reference": "BeyondSlice Evaluator Horizon evaluate evaluate_all recheck vector_clocks",
})
