"""Agents' logs given where a trace is expected: say to merge them first.

An agent of ``cpl.live`` writes a ``.jsonl`` log whose first line is a
``cpl-live/1`` header, into a folder of such logs.  Either one looks like a
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

LIVE_FORMAT = "cpl-live/1"  # cpl.live.log.FORMAT (cpl.live imports cpl.trace, not back)
_LIVE_HEADER = re.compile(rb'\s*\{\s*"format"\s*:\s*"cpl-live/1"')  # the key agents write first
SHOWN = 6  # logs named one by one in the command, at most


def merge_first(path) -> TraceError | None:
    """The error to raise for ``path`` if it is an agent's log or a folder of them (a
    ``TraceError`` naming the ``cpl merge`` command to run), else ``None``."""
    try:
        path = os.fspath(path)
        if os.path.isdir(path):
            logs, others = _logs_in(path)
            if not logs:
                return None
            what = "a folder of agents' logs (cpl.live)"
            sources = [path] if not others else logs
        elif _is_agent_log(path):
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
