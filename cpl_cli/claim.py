"""A run's parts folder as ``cpl run --trace T`` sees it: claimed before T opens, then
removed once T is whole, or kept (with how the run ended) for ``cpl merge``.

The folder ``T.parts`` is made and locked first (``runtime.supervisor.parts.Claim``): a second
``cpl run`` given the same T, seeing it there, touches nothing — neither the folder
nor T — and says whether a live run holds it (its pid and start) or it is what a run
that never ended left, which only then may be merged or deleted.
"""

from __future__ import annotations

import shlex
import shutil
import sys

from .usage import UsageError


def claimed(parts: str, trace: str):
    """The parts folder made and locked for this run (``runtime.supervisor.parts.Claim``), or ``None``
    if it cannot be made (the trace's check, or the supervisor's, then says why); a usage
    error if it is there already."""
    from runtime.supervisor import Claim, Taken
    try:
        return Claim(parts)
    except Taken as taken:
        if taken.holder is not None:  # a live run's: its trace is being written
            raise UsageError(f"--trace: {parts} is {taken.holder}: that run is writing "
                             f"{trace}; give another --trace, or run again once it has "
                             f"ended") from None
        raise UsageError(f"--trace: {parts} holds the logs of a run that never ended: "
                         f"`{merge_command(parts, trace)}` rebuilds its trace; or delete "
                         f"it") from None
    except OSError:
        return None


def settled(parts: str | None, trace: str | None, meta: dict, lost: list, code: int) -> int:
    """After the run: the parts removed if the trace is whole, else kept with how the run
    ended (``end.json``) and the merge that finishes the trace named; the exit code.
    ``lost``: the trace's write that failed, if one did."""
    from choreo.execution import INCOMPLETE, LOST
    from runtime.supervisor import keep_end
    from runtime.supervisor import before_lost
    unmerged = meta.get("unmerged") and trace and not lost
    gone = meta["lost"]["vanished"] if meta["status"] == LOST else []
    unplaced = meta["status"] == INCOMPLETE and not lost  # the parts hold what it lacks
    if (lost or unmerged or gone or unplaced) and parts \
            and all(path == trace for path in gone):
        keep_end(parts, before_lost(meta))  # how the run ended, for cpl merge
    if lost:
        print(f"cpl run: {lost[0]}" + (f"\n  the lifelines' logs are kept in {parts}: "
                                       f"`{merge_command(parts, trace)}` rebuilds the trace "
                                       f"once there is room" if parts else ""), file=sys.stderr)
        return code or 1
    if unmerged:
        print(f"cpl run: stopped while merging: {trace} lacks events the lifelines "
              f"logged; `{merge_command(parts, trace)}` writes the whole trace",
              file=sys.stderr)
        return code or 130
    if parts and not gone and not unplaced:
        shutil.rmtree(parts, ignore_errors=True)  # the trace is whole: its parts are done
    return code


def merge_command(parts: str, trace: str) -> str:
    """The command that rebuilds ``trace`` from its ``parts``, ready to paste."""
    return f"cpl merge {shlex.quote(parts)} -o {shlex.quote(trace)}"
