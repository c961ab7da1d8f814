"""Choreographies run over processes: one OS process per lifeline, over ZeroMQ.

:func:`run` runs a choreography and returns its :class:`RunResult` (how it ended, each
lifeline's results, the trace written); ``cpl run`` is argument parsing and printing
around it.  Inside, three rooms follow a message: :mod:`runtime.supervisor` starts,
watches and stops the lifelines and merges their logs into the trace;
:mod:`runtime.lifeline` is one lifeline's process; :mod:`runtime.frames` is what
both say to each other (wire and control frames, tickets, CURVE keys).
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .supervisor import RunResult, TraceRefused, run

__all__ = ["run", "RunResult", "TraceRefused"]

face(__name__, {
    ".supervisor": "run RunResult TraceRefused",
})
