"""Running the projected lifelines: one ``Runner`` per lifeline, driven by the simulator
or by a process.

:func:`prepare` turns a choreography and its inputs into a :class:`Plan`; the
runner (:mod:`.runner`) steps one lifeline; :class:`Driver` is the seam that
picks what happens next; :class:`Simulator` drives every lifeline in one process
(:func:`simulate`), under a watchdog for ``--timeout`` (:mod:`.watchdog`), and
:mod:`.lineage` makes sure no process outlives its run. :mod:`.status` words how
a run ended.
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .actions import Awaiter, Background, Interrupted
    from .coin import coin
    from .drive import Driver, complete
    from .fingerprint import fingerprint
    from .lineage import Keeper, Sweep, die_with_parent, kill_group
    from .plan import Plan, prepare
    from .runner import Message, Undeliverable
    from .schedules import MIXED, RANDOM, SCHEDULES
    from .simulate import RunResult, Simulator, simulate
    from .status import (
        DEADLOCK, DIED, EXIT_CODES, FAILED, INCOMPLETE, INTERRUPTED, LIMIT, LOST, NOT_JOINED, OK,
        RunFailure, TIMEOUT, UNRESPONSIVE, VANISHED, deadlocked, run_meta, timed_out,
    )
    from .watchdog import simulate_watched

__all__ = ["Awaiter", "Background", "coin", "complete", "DEADLOCK", "deadlocked",
           "die_with_parent", "DIED", "Driver", "EXIT_CODES", "FAILED", "fingerprint",
           "INCOMPLETE", "INTERRUPTED", "Interrupted", "Keeper", "kill_group", "LIMIT", "LOST",
           "Message", "MIXED", "NOT_JOINED", "OK", "Plan", "prepare", "RANDOM", "run_meta",
           "RunFailure", "RunResult", "SCHEDULES", "simulate", "simulate_watched", "Simulator",
           "Sweep", "timed_out", "TIMEOUT", "Undeliverable", "UNRESPONSIVE", "VANISHED"]

face(__name__, {
    ".actions": "Awaiter Background Interrupted",
    ".coin": "coin",
    ".drive": "complete Driver",
    ".fingerprint": "fingerprint",
    ".lineage": "die_with_parent Keeper kill_group Sweep",
    ".plan": "Plan prepare",
    ".runner": "Message Undeliverable",
    ".schedules": "MIXED RANDOM SCHEDULES",
    ".simulate": "RunResult Simulator simulate",
    ".status": ("DEADLOCK deadlocked DIED EXIT_CODES FAILED INCOMPLETE INTERRUPTED LIMIT LOST "
                "NOT_JOINED OK run_meta RunFailure timed_out TIMEOUT UNRESPONSIVE VANISHED"),
    ".watchdog": "simulate_watched",
})
