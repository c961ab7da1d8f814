"""Compiled per-lifeline monitors: what a guard needs carried, generated code, replay.

:func:`compile_guards` turns owned guards into one :class:`Program` per
lifeline; a :class:`Monitor` runs it event by event, reading and writing the
:class:`Metadata` that messages carry.  The offline functions replay a
recorded trace through fresh monitors (``cpl eval``).
"""

from ..lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .compile import OwnedFormula, Program, compile_guards
    from .metadata import Metadata, MetadataError
    from .monitor import Monitor
    from .offline import decisions, evaluate_trace, evaluations, recorded_guards, replay, value_step

__all__ = ["Metadata", "MetadataError", "Monitor", "OwnedFormula", "Program", "compile_guards",
           "decisions", "evaluate_trace", "evaluations", "recorded_guards", "replay",
           "value_step"]

face(__name__, {
    ".compile": "OwnedFormula Program compile_guards",
    ".metadata": "Metadata MetadataError",
    ".monitor": "Monitor",
    ".offline": "decisions evaluate_trace evaluations recorded_guards replay value_step",
})
