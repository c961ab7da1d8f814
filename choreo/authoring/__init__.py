"""Writing a choreography: the protocol from above, in Python, loaded from its file.

:class:`Choreography` is the DSL (sends, actions, choices, loops, parallel threads,
atomic blocks, guards); :mod:`.model` holds the statements it builds; :func:`load`
runs a choreography file and finds its choreographies; :class:`ChoreographyError`
names where (:class:`Where`) a protocol went wrong.
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .dsl import Choreography
    from .errors import ChoreographyError, LocatedError, DetectorFailed, UNKNOWN, Where, shown_path
    from .inputs import initial_stores, parse_args
    from .load import import_file, load, load_one
    from .model import (
        Act, Atomic, Guard, If, Input, Lifeline, Parallel, Send, SymbolSet, Var, While, blocks,
        conforms, participants, type_name, walk,
    )

__all__ = ["Act", "Atomic", "blocks", "Choreography", "ChoreographyError", "conforms",
           "DetectorFailed", "Guard", "If", "import_file", "initial_stores", "Input", "Lifeline",
           "load", "load_one", "LocatedError", "Parallel", "parse_args", "participants", "Send",
           "shown_path", "SymbolSet", "type_name", "UNKNOWN", "Var", "walk", "Where", "While"]

face(__name__, {
    ".dsl": "Choreography",
    ".errors": "ChoreographyError DetectorFailed shown_path UNKNOWN Where LocatedError",
    ".inputs": "initial_stores parse_args",
    ".load": "import_file load load_one",
    ".model": ("Act Atomic blocks conforms Guard If Input Lifeline Parallel participants Send "
               "SymbolSet type_name Var walk While"),
})
