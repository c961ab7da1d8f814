"""Many seeded simulations of one choreography: their decisions, and the anomalies
detectors find in them.

:func:`explore_file` runs them (in a pool of worker processes), and
:func:`user_detectors` loads a user's own detectors, each run in a process with
a deadline.
"""

from cpl.lazy import face

__all__ = ['DEFAULT_TIMEOUT', 'DetectorError', 'explore_file', 'user_detectors', 'WorkerDied']

face(__name__, {
    ".detector_process": "DEFAULT_TIMEOUT",
    ".explore": "explore_file WorkerDied",
    ".user_detectors": "DetectorError user_detectors",
})
