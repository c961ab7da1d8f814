"""Concurrency anomalies of multi-agent systems as CPL guards (docs/anomalies.md).

``records`` — the operation record; ``detectors`` — the catalog's predicates over a
log of them; ``guards`` — the guard library; ``extract`` — records from a trace.
``detect(trace)`` maps each name of ``DETECTORS`` to its witnesses on the trace.
"""

from ..lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .detectors import CATALOG
    from .extract import DETECTORS, History, detect, detect_history, extract
    from .records import OpRecord, RecordError

__all__ = ["CATALOG", "DETECTORS", "History", "OpRecord", "RecordError", "detect",
           "detect_history", "extract"]

face(__name__, {
    ".detectors": "CATALOG",
    ".extract": "DETECTORS History detect detect_history extract",
    ".records": "OpRecord RecordError",
})
