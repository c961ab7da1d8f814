"""Many seeded simulations of one choreography: their decisions, and the anomalies
detectors find in them.

:func:`explore_file` runs them (in a pool of worker processes), and
:func:`user_detectors` loads a user's own detectors, each run in a process with
a deadline.
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .detector_process import DEFAULT_TIMEOUT
    from .explore import Source, explore_file
    from .pool import WorkerDied
    from .user_detectors import DetectorError, user_detectors
    from .verification import Counterexample, Verification
    from .verifier import CATALOG, verify

__all__ = ['CATALOG', 'Counterexample', 'DEFAULT_TIMEOUT', 'DetectorError', 'explore_file',
           'Source', 'user_detectors', 'Verification', 'verify', 'WorkerDied']

face(__name__, {
    ".detector_process": "DEFAULT_TIMEOUT",
    ".explore": "explore_file Source",
    ".pool": "WorkerDied",
    ".user_detectors": "DetectorError user_detectors",
    ".verification": "Counterexample Verification",
    ".verifier": "CATALOG verify",
})
