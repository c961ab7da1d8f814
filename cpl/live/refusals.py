"""Refused inputs counted on an agent's log without an event for each one.

A service facing the network refuses what anybody sends it; an act per refusal
would let any caller grow the log without limit.  So a reason's first refusal
in a window (a second) is recorded at once, as the act ``refused: <reason>``,
and the rest of that window are counted and recorded as one act
``refused: <reason> (<n> times)`` when a later refusal comes after the window,
or when the agent closes: at most two acts per reason per second, and the
counts in the labels add up to the refusals.
"""

from __future__ import annotations

import re
import threading
import time

MAX_REASON = 200  # characters of a reason in a label (a label holds at most 1,000)
WINDOW = 1.0  # seconds in which a reason's refusals after its first are counted, not logged
_COUNTED = re.compile(r"refused: (.*) \((\d+) times\)")


def refusal_label(reason: str, count: int = 1) -> str:
    """The label of the act that stands for ``count`` refusals for ``reason``."""
    reason = reason[:MAX_REASON]
    return f"refused: {reason}" if count == 1 else f"refused: {reason} ({count} times)"


def refusals_of(label: str) -> tuple[str, int] | None:
    """``(reason, count)`` of a refusal act's label, None for any other label."""
    if not label.startswith("refused: "):
        return None
    counted = _COUNTED.fullmatch(label)
    return (counted[1], int(counted[2])) if counted else (label[len("refused: "):], 1)


class Refusals:
    """Per reason: when its window opened, and the refusals since not yet recorded."""

    def __init__(self, window: float = WINDOW, clock=time.monotonic):
        self.window = window
        self._clock = clock
        self._open: dict[str, list] = {}  # reason -> [window start, refusals not yet logged]
        self._lock = threading.Lock()

    def note(self, reason: str) -> list[tuple[str, int]]:
        """Count one refusal; the ``(reason, count)`` acts to record now (its own first,
        if its window was closed, after the counts of every window that has ended)."""
        now = self._clock()
        with self._lock:
            due = self._ended(now)
            entry = self._open.get(reason)
            if entry is None:
                self._open[reason] = [now, 0]
                due.append((reason, 1))
            else:
                entry[1] += 1
            return due

    def pending(self) -> list[tuple[str, int]]:
        """Every count not yet recorded (at close), taken out."""
        with self._lock:
            due = [(reason, entry[1]) for reason, entry in self._open.items() if entry[1]]
            self._open.clear()
            return due

    def put_back(self, reason: str, count: int) -> None:
        """A count its log could not take: recorded with the next ones."""
        with self._lock:
            entry = self._open.setdefault(reason, [self._clock(), 0])
            entry[1] += count

    def _ended(self, now: float) -> list[tuple[str, int]]:
        due = []
        for reason, (start, count) in list(self._open.items()):
            if now - start >= self.window:
                del self._open[reason]
                if count:
                    due.append((reason, count))
        return due
