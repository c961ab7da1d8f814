"""The trace merged as the run goes, with the lifelines waiting while it falls behind.

A stop must not leave a long merge behind it (Ctrl-C is answered in well under a
second, whatever the load), so the supervisor merges the logs into the trace while the
run goes (:mod:`cpl.trace.merge`, the logs read as they grow), in slices short enough
that its control frames are heard meanwhile.  Four lifelines can log faster than one
merging process on two cores, so while the merge stays behind for more than
``MERGE_LAG`` the lifelines the launchers can pause (their own children) wait, and
so do those that ship their logs (Ray's actors): the supervisor takes no frame
from them meanwhile, and their next shipment waits for room.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from cpl.trace import LogTail, Merging

MERGE_EVERY = 0.05  # seconds between two merges of the logs into the trace, while it runs
MERGE_SLICE = 0.02  # seconds a merge goes on before the control frames are heard again
MERGE_LAG = 0.25  # seconds the merge may stay behind the logs before the lifelines wait


class Following:
    """The logs (lifeline -> path, in the run's order) followed into ``write``; the tails
    close with ``scope``.  ``launchers`` are asked to ``hold`` their lifelines."""

    def __init__(self, logs: dict[str, str], write: Callable, launchers,
                 scope: contextlib.ExitStack):
        tails = {name: LogTail(path, name) for name, path in logs.items()}
        for tail in tails.values():
            scope.callback(tail.close)
        self.merging = Merging(list(logs), write, tails)
        self.launchers = launchers
        self.held = False  # the lifelines paused while the merge catches up
        self.behind = False  # the last slice left events unmerged
        self.lagging: float | None = None  # since when the merge is behind the logs
        self.merged = time.monotonic()

    def keep_up(self, now: float) -> bool:
        """Merge a slice when one is due (every ``MERGE_EVERY`` s, at once while behind),
        holding or resuming the lifelines as the lag says; whether they were resumed."""
        if not (self.behind or now - self.merged > MERGE_EVERY):
            return False
        self.behind = not self.merge_for(MERGE_SLICE)
        self.merged = now
        self.lagging = (self.lagging or now) if self.behind else None
        return self.hold(self.lagging is not None and now - self.lagging > MERGE_LAG)

    def waiting(self, longest: float) -> bool:
        """Whether the lifelines that ship their logs wait (the supervisor takes no frame:
        their next shipment waits for room, as a paused local lifeline does): while held,
        for ``longest`` seconds at most (a shipment that waits too long is dropped)."""
        return self.held and self.lagging is not None and \
            time.monotonic() - self.lagging < longest

    def merge_for(self, seconds: float) -> bool:
        """Merge what the logs hold for at most ``seconds``; whether it was all."""
        until = time.monotonic() + seconds
        return self.merging.step(lambda: time.monotonic() > until)

    def hold(self, held: bool) -> bool:
        """Pause (or resume) the lifelines the launchers can pause; whether this resumed
        them (a paused lifeline's silence is no death: its caller forgives it)."""
        if held == self.held:
            return False
        self.held = held
        for launcher in self.launchers:
            launcher.hold(held)
        return not held
