"""The ``cpl-msc/1`` trace: its model, its three forms, reading, checking and writing.

:class:`Trace` and :class:`Event` are the model; :func:`load_trace` and
:func:`open_trace` read any form (JSON, msgpack, ``.jsonl`` streamed) and
check it; :class:`TraceWriter` is the only writer; :class:`Clocks` stamps
vector clocks on recorded events; :func:`unwritable` says why a file could
not be created; :func:`unfinished` words a trace whose run never ended while
its lifelines' logs (:func:`parts_of`) are still there; :func:`merge_logs` merges
per-lifeline logs (:func:`read_log`) into one trace, clocks computed on the way.
"""

from ..lazy import face

__all__ = ["Clocks", "Event", "KINDS", "SUFFIXES", "Trace", "TraceWriter", "dump_trace",
           "encode_json", "load_trace", "merge_logs", "open_trace", "read_log", "parts_of",
           "unfinished", "unwritable", "value_problem"]

face(__name__, {
    ".clocks": "Clocks",
    ".codec": "LARGEST_INT SMALLEST_INT encode_json value_problem",
    ".files": "dump_trace load_trace open_trace",
    ".merge": "merge:merge_logs read_log",
    ".msc": "KINDS Event Trace",
    ".paths": "unwritable",
    ".recovery": "parts_of unfinished",
    ".stream": "SUFFIXES TraceWriter",
})
