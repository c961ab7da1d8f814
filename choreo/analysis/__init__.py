"""What a choreography means for each lifeline, and whether it is well formed.

:func:`project` gives each lifeline its local program (:mod:`.local`);
:func:`validate` checks realizability, races between a lifeline's own threads
(:mod:`.races`) and guard references; :func:`show` prints a projection.
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .local import (
        LAct, LAtomic, LBranch, LChoose, LLoop, LPar, LRecv, LSend, LWhile, expected_messages,
        recipients, walk,
    )
    from .project import Projection, project
    from .show import show
    from .validate import Report, validate

__all__ = ["expected_messages", "LAct", "LAtomic", "LBranch", "LChoose", "LLoop", "LPar", "LRecv",
           "LSend", "LWhile", "project", "Projection", "recipients", "Report", "show", "validate",
           "walk"]

face(__name__, {
    ".local": ("expected_messages LAct LAtomic LBranch LChoose LLoop LPar LRecv LSend LWhile "
               "recipients walk"),
    ".project": "project Projection",
    ".show": "show",
    ".validate": "Report validate",
})
