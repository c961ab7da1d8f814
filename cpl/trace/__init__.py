"""The ``cpl-msc/1`` trace: its model, its three forms, reading, checking and writing.

:class:`Trace` and :class:`Event` are the model; :func:`load_trace` and
:func:`open_trace` read any form (JSON, msgpack, ``.jsonl`` streamed) and
check it, and refuse more than ``MOST_LIFELINES`` lifelines
(:func:`lifelines_within_cap`); :class:`TraceWriter` is the only writer;
:class:`Clocks` stamps vector clocks on recorded events; :func:`msc_key` says when
two traces are the same MSC; :func:`unwritable`
says why a file could not be created; :func:`unfinished` words a trace whose
run never ended while its lifelines' logs (:func:`parts_of`, :func:`left_in`)
are still there, :func:`holder` names the live run whose parts they are
(:func:`hold` takes that lock), and
:func:`stream_end` reads a stream's end line alone; :func:`merge_logs` merges
per-lifeline logs (:func:`read_log`) into one trace, clocks computed on the way, and
:class:`Merging` does it as the logs grow (:class:`LogTail`); a merge that could
not place every event makes the trace :data:`INCOMPLETE` (:func:`incomplete`), the
lines not placed kept beside it (:func:`unplaced_of`, :func:`line_of`); :class:`JsonLines`
reads a stream line by line.
"""

from ..lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .caps import MOST_LIFELINES, TooManyLifelines, lifelines_within_cap
    from .clocks import Clocks
    from .codec import LARGEST_INT, SMALLEST_INT, encode_json, value_problem
    from .files import dump_trace, load_trace, open_trace
    from .holder import LOCK, Holder, hold, holder
    from .lines import JsonLines
    from .logtail import LogTail, read_log
    from .merge import Merging
    from .merge import merge as merge_logs
    from .msc import KINDS, Event, Trace, msc_key
    from .paths import unwritable
    from .recovery import left_in, parts_of, stream_end, unfinished
    from .writer import SUFFIXES, Recording, TraceWriter
    from .unmerged import LIVE_FORMAT, RUN_IDENTITY
    from .unplaced import INCOMPLETE, UNPLACED_FORMAT, as_ended, incomplete, line_of, unplaced_of

__all__ = ["Clocks", "Event", "Holder", "INCOMPLETE", "JsonLines", "KINDS", "LARGEST_INT",
           "LIVE_FORMAT", "LOCK", "LogTail", "Merging", "MOST_LIFELINES", "SMALLEST_INT",
           "SUFFIXES", "TooManyLifelines", "Trace", "UNPLACED_FORMAT", "as_ended", "hold",
           "holder", "incomplete", "line_of", "unplaced_of", "TraceWriter", "dump_trace",
           "encode_json", "left_in", "load_trace", "merge_logs", "open_trace", "read_log",
           "parts_of", "Recording", "RUN_IDENTITY", "stream_end", "unfinished", "unwritable",
           "lifelines_within_cap", "msc_key", "value_problem"]

face(__name__, {
    ".caps": "MOST_LIFELINES TooManyLifelines lifelines_within_cap",
    ".clocks": "Clocks",
    ".codec": "LARGEST_INT SMALLEST_INT encode_json value_problem",
    ".files": "dump_trace load_trace open_trace",
    ".holder": "Holder LOCK hold holder",
    ".lines": "JsonLines",
    ".logtail": "LogTail read_log",
    ".merge": "merge:merge_logs Merging",
    ".msc": "KINDS Event Trace msc_key",
    ".paths": "unwritable",
    ".recovery": "parts_of unfinished left_in stream_end",
    ".unmerged": "LIVE_FORMAT RUN_IDENTITY",
    ".unplaced": "INCOMPLETE UNPLACED_FORMAT as_ended incomplete line_of unplaced_of",
    ".writer": "Recording SUFFIXES TraceWriter",
})
