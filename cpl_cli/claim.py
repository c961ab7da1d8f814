"""How ``cpl run --trace T`` words its parts folder ``T.parts``: taken by another run, or
kept for ``cpl merge`` and the command that rebuilds the trace from it.

The folder is claimed, kept or removed by the run itself (``runtime.run``,
``runtime.supervisor.parts.Claim``): a second ``cpl run`` given the same T, seeing the
folder there, touches nothing — neither the folder nor T — and says whether a live run
holds it (its pid and start) or it is what a run that never ended left, which only then
may be merged or deleted.
"""

from __future__ import annotations

import shlex

from .usage import UsageError


def refused(taken, trace: str) -> UsageError:
    """The usage error for a parts folder that is there already (``Taken``)."""
    parts = taken.folder
    if taken.holder is not None:  # a live run's: its trace is being written
        return UsageError(f"--trace: {parts} is {taken.holder}: that run is writing "
                          f"{trace}; give another --trace, or run again once it has ended")
    return UsageError(f"--trace: {parts} holds the logs of a run that never ended: "
                      f"`{merge_command(parts, trace)}` rebuilds its trace; or delete it")


def merge_command(parts: str, trace: str) -> str:
    """The command that rebuilds ``trace`` from its ``parts``, ready to paste."""
    return f"cpl merge {shlex.quote(parts)} -o {shlex.quote(trace)}"
