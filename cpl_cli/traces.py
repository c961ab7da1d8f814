"""The one way ``cpl`` commands read a trace they were given: read, then told how its run ended.

A trace whose run did not end ``ok`` is still a trace to evaluate, draw,
explain or export, but its reader should know: one note on standard error
says how it ended.  A trace its merge could not make whole (``incomplete``: events it
could not place, kept beside it) is said to be so first, with what is missing and
where it is kept.  A trace whose merge was cut short (``meta.unmerged``: a
second Ctrl-C during ``cpl run``'s last merge) while its run's parts folder
still holds events lacks some of them, so nothing is made of it: the error
names the ``cpl merge`` that writes it whole.  (A trace without its end is a run cut
off, or still running: its reader warns and goes on, trace.md.)
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping

from cpl.errors import TraceError

from .usage import complain


def read_trace(path: str, warn, pending: bool = False, whole: bool = False):
    """``cpl.trace.open_trace`` (``whole``: ``load_trace``) of the TRACE argument, after
    which its run's end is told (``told``)."""
    from cpl.trace import load_trace, open_trace
    source = load_trace(path, warn) if whole else open_trace(path, warn, pending=pending)
    told(path, source)
    return source


def told(path: str, source) -> None:
    """A note if the trace's run did not end ``ok``; a ``TraceError`` if its merge was cut
    short and its parts folder still holds the events it lacks."""
    from cpl.trace import INCOMPLETE, JsonLines, left_in, parts_of, stream_end
    # A stream's end comes after its events: read from the file's end, before them
    meta = stream_end(path) if isinstance(source, JsonLines) else getattr(source, "meta", None)
    if not isinstance(meta, Mapping) or meta.get("cut_off"):
        return  # a hand-written trace, or a stream without its end (warned of already)
    status = meta.get("status")
    if status == INCOMPLETE:  # before anything is made of it: events are missing
        error = meta.get("error")
        complain(f"warning: {path} is incomplete: "
                 + (error if isinstance(error, str) else "the merge could not place every event")
                 + "; what follows is about the events it holds")
    elif isinstance(status, str) and status != "ok":
        error = meta.get("error")
        complain(f"note: {path}: its run ended {status}"
                 + (f": {error}" if isinstance(error, str) and error != status else ""))
    if not meta.get("unmerged"):
        return
    checker = getattr(source, "checker", None)
    named = getattr(checker, "parts", None)
    folder = os.path.join(os.path.dirname(path), named) if named else parts_of(path)
    if left_in(folder) and _same_run(folder, meta):
        raise TraceError(
            f"{path}: its run stopped before every event its lifelines logged was in it "
            f"(a second Ctrl-C cut the merge short): `cpl merge {shlex.quote(folder)} -o "
            f"{shlex.quote(path)}` writes the whole trace from {folder}")


def _same_run(folder: str, meta: Mapping) -> bool:
    """Whether the parts in ``folder`` are of the run ``meta`` ends."""
    from runtime.supervisor import Parts, PartsError
    try:
        return Parts.read(folder).meta.get("run") == meta.get("run")
    except PartsError:
        return False
