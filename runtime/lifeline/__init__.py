"""One lifeline as an OS process: its loop, its event log, its outgoing frames.

:class:`LifelineProcess` drives the same runner the simulator drives, over
ZeroMQ; :mod:`.eventlog` writes every event the moment it happens;
:mod:`.outgoing` batches frames on their way out.
"""

from cpl.lazy import face

__all__ = ['LifelineProcess', 'main']

face(__name__, {
    ".process": "LifelineProcess main",
})
