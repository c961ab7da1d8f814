"""One lifeline as an OS process: its loop, its event log, its outgoing frames.

:class:`LifelineProcess` drives the same runner the simulator drives, over
ZeroMQ; :mod:`.eventlog` writes every event the moment it happens;
:mod:`.outgoing` batches frames on their way out.
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .process import LifelineProcess, main

__all__ = ['LifelineProcess', 'main']

face(__name__, {
    ".process": "LifelineProcess main",
})
