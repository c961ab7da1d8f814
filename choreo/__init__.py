"""Choreographies: a global protocol in Python, projected to one program per lifeline.

Write the protocol once from above (:mod:`choreo.dsl`), check it
(:func:`validate`), see each lifeline's part (:func:`project`, :func:`show`).
Imports go one way: ``cpl`` ← ``choreo`` ← ``runtime``.
"""

from .dsl import Choreography
from .errors import ChoreographyError, Where
from .load import load, load_one
from .model import Input, Lifeline, SymbolSet, Var
from .project import Projection, project
from .show import show
from .validate import Report, validate

__all__ = [
    "Choreography", "ChoreographyError", "Where", "load", "load_one", "Input", "Lifeline",
    "SymbolSet", "Var", "Projection", "project", "show", "Report", "validate",
]
