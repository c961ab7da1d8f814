"""A lifeline's event log: on this host's disk through a memory map, or shipped.

Every event is in the log the moment it happens, so a crash or ``kill -9``
loses nothing already done.  Locally (:class:`EventLog`) that costs no
system call per event: its line, compact JSON, is copied into a window of
the file mapped in memory, which is the operating system's page cache —
what a ``write`` would have reached — so it outlives the process.  The
window moves along as the file grows (memory stays constant on long runs)
and the file is cut to its lines when the log closes.

Until then the file ends in spaces, which JSON ignores, and its lines are
separated by a newline written *before* each line but the first (that one
is one ``write``, before the map): a log of N events has N lines.  A line
goes in back to front — its text but the opening brace, then the brace,
then the newline that makes it a line — so until the newline lands it is
what follows the previous line on that line, where a reader takes the
first JSON value (``cpl.trace.read_log``): a kill at any moment leaves
whole events only, as many as there are lines.
"""

from __future__ import annotations

import mmap
import os
import time
from typing import Any

import msgspec

from runtime.frames import LOG_BATCH, SUPERVISOR_SILENCE, Log, send

WINDOW = 1 << 20  # bytes of the file mapped at once
_GRAIN = mmap.ALLOCATIONGRANULARITY


class _Record(msgspec.Struct, omit_defaults=True):
    """An event as its log line: the fields ``Event.to_dict`` writes, absent ones left out."""

    id: str
    lifeline: str
    kind: str
    to: Any = None
    msg: Any = None
    set: Any = None
    label: Any = None
    guard: Any = None
    outcome: Any = None
    vc: Any = None
    time: Any = None
    payload: Any = None


_ENCODE = msgspec.json.Encoder().encode  # 1.2-1.7 µs an event; json.dumps + to_dict took 6.4


def record(event) -> bytes:
    """An event as its log line (no newline), with the wall-clock time the merge orders
    events by."""
    ident, lifeline, kind, to, msg, values, label, guard, outcome, vc, _, payload = event
    return _ENCODE(_Record(ident, lifeline, kind, to, msg, values.copy() if values else None,
                           label, guard, outcome, None if vc is None else dict(vc), time.time(),
                           payload))


class EventLog:
    """This lifeline's events in a file on this host, written through a moving memory map."""

    def __init__(self, path: str, window: int = WINDOW):
        self._descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self._window = window
        self._map: mmap.mmap | None = None
        self._base = 0  # where the map starts in the file
        self._at = 0  # the end of the lines, in the map
        self._end = 0  # the map's length
        os.register_at_fork(after_in_child=self._forget)  # a forked copy writes nothing here

    def write(self, event) -> None:
        line = record(event)
        at, size = self._at, len(line) + 1
        if at + size > self._end:
            if not (self._base or at):  # the first line, before any map: one write
                os.write(self._descriptor, line)
                self._at = len(line)
                return
            self._move(size)
            at = self._at
        written = self._map
        written[at + 2:at + size] = line[1:]  # after the previous line and a space...
        written[at + 1:at + 2] = b"{"  # ...on its line: a reader takes the first value
        written[at:at + 1] = b"\n"  # now a line of its own, and whole
        self._at = at + size

    def _move(self, size: int) -> None:
        """Map a window from the end of the lines with room for ``size`` more bytes, the
        file grown to hold it (allocated, not sparse: a full disk is an ``OSError`` here,
        not a ``SIGBUS`` on a later copy) and filled with spaces."""
        if self._descriptor < 0:
            raise ValueError("the event log is closed")
        written = self._base + self._at
        base = written - written % _GRAIN
        end = written + max(size, self._window)
        try:
            os.posix_fallocate(self._descriptor, written, end - written)
        except OSError:  # near a size limit: grow by this line only (or fail as write would)
            end = written + size
            os.posix_fallocate(self._descriptor, written, size)
        if self._map is not None:
            self._map.close()
            self._map = None
        self._map = mmap.mmap(self._descriptor, end - base, offset=base)
        self._map[written - base:] = b" " * (end - written)
        self._base, self._at, self._end = base, written - base, end - base

    def ship(self, control) -> None:
        pass  # on this host's disk already, where the supervisor reads it

    def close(self) -> None:
        if self._descriptor >= 0:
            if self._map is not None:
                self._map.close()
                self._map = None
            os.ftruncate(self._descriptor, self._base + self._at)  # no zeros after a clean end
            os.close(self._descriptor)
            self._descriptor = -1

    def _forget(self) -> None:
        """In a forked child: let go of the parent's map and file without touching them."""
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._descriptor >= 0:
            os.close(self._descriptor)
        self._descriptor, self._base, self._at, self._end = -1, 0, 0, 0
        self.write = lambda event: None


class ShippedLog:
    """The log of a lifeline on another host: its lines go to the supervisor over the
    control socket, before every message this lifeline sends and whenever it idles."""

    BATCH = 256

    def __init__(self):
        self._lines: list[str] = []
        self._bytes = 0
        self._control = None
        os.register_at_fork(after_in_child=self._mute)

    def _mute(self) -> None:  # a forked copy ships nothing: the sockets are the lifeline's
        self.write = self.ship = lambda *_: None

    def write(self, event) -> None:
        line = record(event).decode("utf-8")
        self._lines.append(line)
        self._bytes += len(line)
        if (len(self._lines) >= self.BATCH or self._bytes >= LOG_BATCH) \
                and self._control is not None:
            self.ship(self._control)

    def ship(self, control) -> None:
        self._control = control
        if self._lines:
            send(control, Log(self._lines), patience=SUPERVISOR_SILENCE)
            self._lines, self._bytes = [], 0

    def close(self) -> None:
        if self._control is not None:
            self.ship(self._control)
