"""The supervisor's side of a run over processes: every lifeline started, watched and
stopped in one scope.

:class:`Supervisor` owns the run; its launchers (:mod:`.launchers`, Ray's in
:mod:`.ray_launcher`) start lifelines here, elsewhere or as forks
(:mod:`.zygote`); :mod:`.parts` keeps the lifelines' logs until the trace is whole;
:mod:`.verdicts` words how the run ended.
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .interrupts import Interrupts
    from .launchers import launchers_for
    from .parts import Claim, IDENTITY, Parts, PartsError, Taken, keep_end
    from .ray_launcher import Place, RayActors, TOKEN, node_of
    from .ray_reaper import Reaper
    from .results import LastValues
    from .supervisor import Supervisor
    from .verdicts import before_lost

__all__ = ['before_lost', 'Claim', 'IDENTITY', 'Interrupts', 'keep_end', 'LastValues', 'launchers_for', 'node_of', 'Parts', 'PartsError', 'Place', 'RayActors', 'Reaper', 'Supervisor', 'Taken', 'TOKEN']

face(__name__, {
    ".interrupts": "Interrupts",
    ".launchers": "launchers_for",
    ".parts": "Claim IDENTITY keep_end Parts PartsError Taken",
    ".ray_launcher": "node_of Place RayActors TOKEN",
    ".ray_reaper": "Reaper",
    ".results": "LastValues",
    ".supervisor": "Supervisor",
    ".verdicts": "before_lost",
})
