"""Concurrency anomalies of multi-agent systems as CPL guards (docs/anomalies.md).

``records`` — the operation record; ``detectors`` — the catalog's predicates over a
log of them; ``guards`` — the guard library; ``extract`` — records from a trace.
``detect(trace)`` maps each name of ``DETECTORS`` to its witnesses on the trace.
"""

from ..lazy import face

__all__ = ["CATALOG", "DETECTORS", "History", "OpRecord", "RecordError", "detect",
           "detect_history", "extract"]

face(__name__, {
    ".detectors": "CATALOG",
    ".extract": "DETECTORS History detect detect_history extract",
    ".records": "OpRecord RecordError",
})
