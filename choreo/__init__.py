"""Choreographies: a global protocol in Python, projected to one program per lifeline.

Write the protocol once from above (:mod:`choreo.dsl`), check it
(:func:`validate`), see each lifeline's part (:func:`project`, :func:`show`).
Imports go one way: ``cpl`` ← ``choreo`` ← ``runtime``.
"""

from cpl.lazy import face

__all__ = [
    "Choreography", "ChoreographyError", "Where", "load", "load_one", "Input", "Lifeline",
    "SymbolSet", "Var", "Projection", "project", "show", "Report", "validate",
]

face(__name__, {
    ".dsl": "Choreography",
    ".errors": "ChoreographyError Where",
    ".load": "load load_one",
    ".model": "Input Lifeline SymbolSet Var",
    ".project": "Projection project",
    ".show": "show",
    ".validate": "Report validate",
})
