"""How a run ends: one closed set of statuses, and the failure that names its cause.

Every driver (the simulator, a lifeline process, the supervisor) ends a run
with exactly one of ``STATUSES``; the trace records it in ``meta.status``
and ``cpl run`` maps it to an exit code (``EXIT_CODES``, cli.md: 0 success,
1 the run failed, 130 interrupted).  Anything that goes wrong *inside* a
running lifeline — a user action that raises, exits or returns a value the
declaration or the trace cannot hold, a predicate that raises while a guard
is evaluated — is one :class:`RunFailure`: it names the lifeline, the event
it was taking and the cause, at the user's file and line where known.
"""

from __future__ import annotations

# A status, never a driver's: a merge that could not place every event.
from cpl.trace import INCOMPLETE as INCOMPLETE

from choreo.authoring import UNKNOWN, LocatedError, Where

OK = "ok"
FAILED = "failed"  # a RunFailure
DEADLOCK = "deadlock"  # no event can happen and some lifeline is not done
LIMIT = "limit"  # --max-steps reached
TIMEOUT = "timeout"  # --timeout reached
INTERRUPTED = "interrupted"  # Ctrl-C / SIGTERM
DIED = "died"  # a lifeline process exited, or went silent where nobody sees its process (runtime)
UNRESPONSIVE = "unresponsive"  # a lifeline process alive but silent past the heartbeat window
NOT_JOINED = "not joined"  # a lifeline never said hello within its launcher's patience (runtime)
VANISHED = "vanished"  # never a driver's: cpl merge's, for a run whose supervisor was lost
LOST = "lost"  # a run over processes whose parts or trace were deleted or replaced as it ran

STATUSES = (OK, FAILED, DEADLOCK, LIMIT, TIMEOUT, INTERRUPTED, DIED, UNRESPONSIVE, NOT_JOINED,
            LOST)
EXIT_CODES = {OK: 0, FAILED: 1, DEADLOCK: 1, LIMIT: 1, TIMEOUT: 1, DIED: 1, UNRESPONSIVE: 1,
              NOT_JOINED: 1, LOST: 1, INTERRUPTED: 130, INCOMPLETE: 1}


class RunFailure(LocatedError):
    """A lifeline could not take an event: ``lifeline``, where it was, and the cause.

    ``event`` is always an id the trace holds (or ``None``): with ``after`` (the usual
    case) the lifeline's latest event, the failed one never being taken, so the message
    says ``after Tester.1`` (``before its first event`` for ``None``); without, the
    event whose step failed.  ``traceback``: the frames of the user's own code the
    failure came from, shown under the message (``choreo.execution.actions.user_traceback``).
    Exit code 1, a run that failed (``EXIT_CODES[FAILED]``); a driver catches it and ends
    its run ``failed``."""

    def __init__(self, lifeline: str, event: str | None, cause: str, where: Where = UNKNOWN,
                 kind: str = "run", after: bool = True, traceback: str = ""):
        place = (f"event {event}" if not after else f"after {event}" if event
                 else "before its first event")
        super().__init__(f"{lifeline}, {place}: {cause}", where, traceback, kind=kind)
        self.lifeline = lifeline
        self.event = event
        self.after = after
        self.cause = cause

    @property
    def failed(self) -> dict:
        """``meta.failed``: the lifeline, and the event of the trace it failed at or after."""
        if self.event is None:
            return {"lifeline": self.lifeline}
        return {"lifeline": self.lifeline, "after" if self.after else "event": self.event}


def timed_out(seconds: float) -> str:
    """The line a run stopped by ``--timeout`` ends with, in every mode."""
    return f"stopped after {seconds:g} s (--timeout)"


def deadlocked(waits) -> str:
    """The line a deadlocked run ends with: what each waiting lifeline waits for."""
    return "deadlock: no event can happen; " + "; ".join(waits)


def run_meta(choreography: str, seed, inputs: dict, status: str, error: str | None = None,
             **facts) -> dict:
    """A finished run's ``meta`` (trace.md), whoever drove it: which run, how it ended —
    ``error``, the line ``cpl run`` prints, for any status but ok, and ``traceback``, the
    lines it prints under it (a failed action's frames: ``error``'s lines after its
    first) — then ``facts`` only its driver knows, in order."""
    meta = {"choreography": choreography, "seed": seed, "inputs": dict(inputs),
            "status": status, **facts}
    if error:
        meta["error"], _, traceback = error.partition("\n")
        if traceback:  # a failed action's own frames (RunFailure): one line stays one line
            meta["traceback"] = traceback
    return meta
