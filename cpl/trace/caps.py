"""How many lifelines a trace may have: a cap every reader and writer of traces shares.

Every reader builds something per lifeline (a clock entry, a monitor, a column, a
span), so a small file that lists a million names cost gigabytes and minutes in
every command (measured: 10.9 MB, 1,000,002 lifelines, `cpl export` 4.8 GB).
No run comes near the cap (a lifeline is a process, a Ray actor or an agent;
bench/lifelines.py reads 64,000): a longer list is a hostile or broken file,
refused as soon as its length is known, before anything is built per lifeline.
"""

from __future__ import annotations

from ..errors import TraceError

MOST_LIFELINES = 100_000


class TooManyLifelines(TraceError):
    """More than ``MOST_LIFELINES`` lifelines: refused by every reader, the fast path too
    (reading the file again with the exact checker would cost what the cap spares)."""


def too_many_lifelines(count: int) -> str:
    """The refusal of a trace, a log or a run with ``count`` lifelines, past the cap."""
    return (f'"lifelines" lists {count:,} names; a trace has at most {MOST_LIFELINES:,} '
            f"lifelines (more than any run has: each is a process, an actor or an agent)")


def lifelines_within_cap(names, origin: str | None = None):
    """``names`` as given, unless it is a list longer than the cap: ``TooManyLifelines``."""
    if isinstance(names, (list, tuple)) and len(names) > MOST_LIFELINES:
        raise TooManyLifelines(too_many_lifelines(len(names)), origin)
    return names
