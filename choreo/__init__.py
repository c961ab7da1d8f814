"""Choreographies: a global protocol in Python, projected to one program per lifeline.

Write the protocol once from above (:mod:`choreo.authoring`), check it
(:func:`validate`), see each lifeline's part (:func:`project`, :func:`show`,
:mod:`choreo.analysis`), run it (:mod:`choreo.execution`), explore many runs of it
(:mod:`choreo.exploration`); model calls as actions are :mod:`choreo.models`.
Imports go one way: ``cpl`` ← ``choreo`` ← ``runtime``, and inside ``choreo``
authoring ← analysis ← execution ← exploration.
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .analysis import Projection, Report, project, show, validate
    from .execution import coin
    from .exploration import verify
    from .authoring import (
        Choreography, ChoreographyError, Input, Lifeline, SymbolSet, Var, Where, load, load_one,
    )

__all__ = [
    "Choreography", "ChoreographyError", "Where", "load", "load_one", "Input", "Lifeline",
    "SymbolSet", "Var", "Projection", "project", "show", "Report", "validate", "verify",
    "coin",
]

face(__name__, {
    ".authoring": "Choreography ChoreographyError Where load load_one Input Lifeline SymbolSet Var",
    ".analysis": "Projection project show Report validate",
    ".execution": "coin",
    ".exploration": "verify",
})
