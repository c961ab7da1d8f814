"""Ctrl-C and SIGTERM during a run over processes: counted where they land, acted on where
it is safe.

Python's own Ctrl-C is a ``KeyboardInterrupt`` raised wherever the supervisor
happens to be: inside the merge, between an event taken from a log and its
line in the trace, or in the middle of the run's end.  And one Ctrl-C is not
always one signal: ``timeout -s INT`` sends it to the process and to its
group, a terminal user presses twice.  So while a run over processes goes,
SIGINT and SIGTERM only count here (and wake the supervisor's poll through a
pipe, ``signal.set_wakeup_fd``), and the supervisor looks at the count where it
can act on it whole: the first ends the run ``interrupted``; one that comes
while the lifelines say their last words ends that wait; one that comes while
the merge finishes cuts it short, and ``cpl run`` names the command that
completes the trace.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """A context in which SIGINT and SIGTERM are counted (``count``), not raised: in the main
    thread only (elsewhere signals are not ours to take, and nothing is counted)."""

    def __init__(self):
        self.count = 0
        self._previous: dict = {}
        self._pipe: tuple[int, int] | None = None
        self._wakeup: int | None = None  # the wakeup fd before ours

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            self._previous = {number: signal.signal(number, self._heard) for number in SIGNALS}
        return self

    def _heard(self, number, frame) -> None:
        self.count += 1

    def since(self, count: int) -> bool:
        """Whether a signal came after ``count`` of them had."""
        return self.count > count

    def wake_fd(self) -> int | None:
        """A descriptor that is readable once a signal came (for a poll), or None.  Asked for
        once the run's lifelines are forked, so no fork inherits it."""
        if self._pipe is None and self._previous:
            self._pipe = os.pipe()
            for end in self._pipe:
                os.set_blocking(end, False)
            self._wakeup = signal.set_wakeup_fd(self._pipe[1], warn_on_full_buffer=False)
        return self._pipe[0] if self._pipe else None

    def drain(self) -> None:
        """Empty the wake-up pipe (its bytes are the signals' numbers: ``count`` has them)."""
        if self._pipe is not None:
            with contextlib.suppress(OSError):
                while os.read(self._pipe[0], 1 << 12):
                    pass

    def __exit__(self, *exc) -> None:
        if self._pipe is not None:
            signal.set_wakeup_fd(self._wakeup if self._wakeup is not None else -1)
            for end in self._pipe:
                os.close(end)
            self._pipe = None
        for number, previous in self._previous.items():
            signal.signal(number, previous)
        self._previous = {}
