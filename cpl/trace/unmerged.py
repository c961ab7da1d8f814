"""Agents' logs, or a run's parts, given where a trace is expected: say to merge them first.

An agent of ``cpl.live`` writes a ``.jsonl`` log whose first line is a
``cpl-live/1`` header, into a folder of such logs; ``cpl run --trace T``
keeps its lifelines' logs in ``T.parts`` until T is whole.  Each looks like a
trace to its user but is not one (its header names one ``lifeline``, its
events carry no clocks), so the trace reader's own complaint — an unknown
field, a directory — would not point to the fix: ``cpl merge``.  Only a path
the reader refused is looked at, so reading a real trace costs nothing more.
"""

from __future__ import annotations

import os
import re
import shlex

from ..errors import TraceError
from .recovery import PARTS_SUFFIX

LIVE_FORMAT = "cpl-live/1"  # an agent's log header's format (cpl.live writes it from here)
# a run's parts folder holds it (runtime.supervisor.parts writes it from here)
RUN_IDENTITY = "run.json"
_LIVE_HEADER = re.compile(rb'\s*\{\s*"format"\s*:\s*"'  # the key agents write first
                          + re.escape(LIVE_FORMAT.encode()) + rb'"')
SHOWN = 6  # logs named one by one in the command, at most


def merge_first(path) -> TraceError | None:
    """The error to raise for ``path`` if it is an agent's log or a folder of them, or a
    run's parts folder (a ``TraceError`` naming the ``cpl merge`` command to run), else
    ``None``."""
    try:
        path = os.fspath(path)
        if os.path.isfile(os.path.join(path, RUN_IDENTITY)):
            return _parts_first(path)
        if os.path.isdir(path):
            logs, others = _logs_in(path)
            if not logs:
                return None
            what = "a folder of agents' logs (cpl.live)"
            sources = [path] if not others else logs
        elif os.path.isfile(path) and _is_agent_log(path):  # a FIFO would wait for a writer
            logs, others = _logs_in(os.path.dirname(path) or ".")
            what = "an agent's log (cpl.live)"
            folder = os.path.dirname(path) or "."
            sources = [folder] if not others else logs
        else:
            return None
    except (OSError, ValueError, TypeError):  # unreadable, a NUL in the path: not ours to say
        return None
    shown = " ".join(shlex.quote(source) for source in sources[:SHOWN])
    if len(sources) > SHOWN:
        shown += " ..."
    return TraceError(f"{what}, not a trace: merge the agents' logs into one trace first: "
                      f"cpl merge {shown} -o run.jsonl", path)


def _parts_first(folder: str) -> TraceError:
    """A run's parts folder: the merge that rebuilds its trace (T from T.parts)."""
    name = folder.rstrip(os.sep) or folder
    trace = name[:-len(PARTS_SUFFIX)] if name.endswith(PARTS_SUFFIX) and \
        os.path.basename(name) != PARTS_SUFFIX else "run.jsonl"
    return TraceError(f"a run's parts folder (its lifelines' logs, kept by cpl run until its "
                      f"trace is whole), not a trace: rebuild the trace from it first: "
                      f"cpl merge {shlex.quote(folder)} -o {shlex.quote(trace)}", folder)


def _is_agent_log(path: str) -> bool:
    with open(path, "rb") as handle:
        return bool(_LIVE_HEADER.match(handle.read(256)))


def _logs_in(folder: str) -> tuple[list[str], list[str]]:
    """The agents' logs among ``folder``'s ``.jsonl`` files, and its other ``.jsonl`` files
    (which ``cpl merge FOLDER`` would refuse)."""
    logs, others = [], []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl"):
            path = os.path.join(folder, name)
            try:
                (logs if os.path.isfile(path) and _is_agent_log(path) else others).append(path)
            except OSError:
                others.append(path)
    return logs, others
