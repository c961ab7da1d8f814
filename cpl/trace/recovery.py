"""Traces a run could not finish: a supervisor that vanished, a write that failed.

``cpl run`` over processes keeps every lifeline's log in a folder beside its
trace (``t.jsonl.parts``, which the header's ``parts`` names) until the trace
is written whole, and removes it then.  A trace without its end (or one that
does not parse) with that folder still there lost its supervisor, or is being
written right now (``holder`` tells which): ``cpl merge`` rebuilds it from the
logs of a run that is gone, and readers say so.  A write that fails (a full
disk, a file size limit) says how far it got.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shlex
from pathlib import Path

from ..errors import TraceError
from .codec import read_limit
from .holder import holder

PARTS_SUFFIX = ".parts"
_NO_ROOM = frozenset((errno.ENOSPC, errno.EFBIG, errno.EDQUOT))  # a full disk, a size limit


def parts_of(trace_path) -> str:
    """Where ``cpl run --trace trace_path`` keeps its lifelines' logs while it runs."""
    return f"{trace_path}{PARTS_SUFFIX}"


def unfinished(trace, named: str | None = None, lead: str = "") -> str:
    """What to tell the reader of an unfinished ``trace`` (a path) whose parts folder
    (``named`` by its header, else the default name) is there, after ``lead``; else ``""``."""
    if not isinstance(trace, (str, Path)):
        return ""
    path = Path(trace)
    folder = path.parent / (named or path.name + PARTS_SUFFIX)
    try:
        if not folder.is_dir():
            return ""
    except (OSError, ValueError):  # a name the file system cannot hold
        return ""
    live = holder(folder)
    if live is not None:  # its cpl run goes on, and writes the trace whole itself
        return (f"{lead}its run is still going: {folder} is {live}, which writes the whole "
                f"trace when it ends")
    return (f"{lead}its run never ended, and its lifelines' logs are in {folder}: if that "
            f"`cpl run` is gone, `cpl merge {shlex.quote(str(folder))} -o "
            f"{shlex.quote(str(path))}` rebuilds the whole trace from them")


def cut_short(error: OSError, origin: str, written: int, queued: int) -> TraceError:
    """A failed write of the trace at ``origin``, with how far the file got."""
    cause = error.strerror or str(error)
    if error.errno in _NO_ROOM:
        cause = f"no room for it ({cause})"
    try:
        size = f"{os.path.getsize(origin):,}"
    except (OSError, ValueError):
        size = "?"
    return TraceError(f"cannot write the trace: {cause}; written: {size} bytes (at least "
                      f"{written:,} of {queued:,} events)", origin)


_TAIL = 1 << 16  # bytes read from a stream's end to find its end line (more if it is longer)
_END_LINE = re.compile(rb'\s*\{\s*"end"\s*:')


def stream_end(path) -> dict | None:
    """The ``meta`` of a ``.jsonl`` stream's end line, read from the file's last bytes (a
    reader meets it only after every event); ``None`` if it has none (the run was cut
    off) or it cannot be read.  Only looked at: the reader checks it."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            tail = _TAIL
            while True:
                handle.seek(max(0, size - tail))
                lines = handle.read(tail).rstrip().rsplit(b"\n", 1)
                if len(lines) == 2 or tail >= size or tail >= read_limit():
                    break
                tail *= 8  # the end line is longer than what was read
    except (OSError, ValueError):
        return None
    if not _END_LINE.match(lines[-1]):
        return None
    try:
        end = json.loads(lines[-1]).get("end")
    except (ValueError, RecursionError, AttributeError):
        return None
    return end if isinstance(end, dict) else None


def left_in(folder) -> bool:
    """Whether the parts ``folder`` holds a log with an event in it (its first line)."""
    try:
        names = [entry.name for entry in os.scandir(folder)
                 if entry.name.endswith(".jsonl") and entry.name[:-6].isdigit()]
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                if handle.read(1) == b"{":
                    return True
    except (OSError, ValueError):
        return False
    return False
