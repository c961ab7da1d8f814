"""The supervisor's side of a run over processes: every lifeline started, watched and
stopped in one scope.

:class:`Supervisor` owns the run; its launchers (:mod:`.launchers`, Ray's in
:mod:`.ray_launcher` on the cluster :mod:`.ray_cluster` joins) start lifelines here,
elsewhere or as forks (:mod:`.zygote`); :mod:`.parts` keeps the lifelines' logs until
the trace is whole; :mod:`.verdicts` decides and words how the run ended; :func:`run`
(:mod:`.recorded`) is the whole run as one call, its trace written and its parts settled.
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .interrupts import Interrupts
    from .launchers import launchers_for
    from .parts import Claim, IDENTITY, Parts, PartsError, Taken, keep_end
    from .ray_cluster import (
        ClusterError, Misplaced, RUN_FOLDER, on_cluster, place_of, ray_installed, ray_session,
        session_folder, stay_on_loopback,
    )
    from .ray_launcher import Place, RayActors, TOKEN, node_of
    from .ray_reaper import Reaper
    from .recorded import RunResult, TraceRefused, run
    from .results import LastValues
    from .supervisor import Supervisor
    from .verdicts import before_lost

__all__ = [
    'before_lost', 'Claim', 'ClusterError', 'IDENTITY', 'Interrupts', 'keep_end', 'LastValues',
    'launchers_for', 'Misplaced', 'node_of', 'on_cluster', 'Parts', 'PartsError', 'Place',
    'place_of', 'ray_installed', 'ray_session', 'RayActors', 'Reaper', 'run', 'RUN_FOLDER',
    'RunResult', 'session_folder', 'stay_on_loopback', 'Supervisor', 'Taken', 'TOKEN',
    'TraceRefused',
]

face(__name__, {
    ".interrupts": "Interrupts",
    ".launchers": "launchers_for",
    ".parts": "Claim IDENTITY keep_end Parts PartsError Taken",
    ".ray_cluster": "ClusterError Misplaced on_cluster place_of ray_installed ray_session "
                    "RUN_FOLDER session_folder stay_on_loopback",
    ".ray_launcher": "node_of Place RayActors TOKEN",
    ".ray_reaper": "Reaper",
    ".recorded": "run RunResult TraceRefused",
    ".results": "LastValues",
    ".supervisor": "Supervisor",
    ".verdicts": "before_lost",
})
