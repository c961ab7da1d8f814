"""Traces a run could not finish: a supervisor that vanished, a write that failed.

``cpl run`` over processes keeps every lifeline's log in a folder beside its
trace (``t.jsonl.parts``, which the header's ``parts`` names) until the trace
is written whole, and removes it then.  A trace without its end (or one that
does not parse) with that folder still there lost its supervisor, or is being
written right now: ``cpl merge`` rebuilds it from the logs, and readers say
so.  A write that fails (a full disk, a file size limit) says how far it got.
"""

from __future__ import annotations

import errno
import os
import shlex
from pathlib import Path

from ..errors import TraceError

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
