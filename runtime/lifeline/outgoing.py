"""A lifeline's frames on their way out: queued, sent together, never held for long.

Each ``send`` that hands ZeroMQ a message wakes its I/O thread, and on busy
cores the woken thread takes the sender's core: stream_throughput.py measured 55-83 µs of wall
time per wake against 8-10 µs of CPU.  So the frames a burst of steps sends
are queued and leave together, a peer's frames as the parts of one ZeroMQ
message (one wake for them all; the receiver takes and checks each part as
a frame of its own): when the lifeline has nothing more to do now (before it
waits), when ``SEND_BATCH`` are queued, and — so that no frame waits behind a
long action, or anything else — once the oldest has waited ``LATE`` seconds,
by a thread of this queue's own while the lifeline's thread is busy.  A
socket is then used by two threads, never at once: every use holds the
queue's lock (which is also the memory barrier ZeroMQ asks for when a
socket changes threads).  A lifeline whose log is shipped over the control
socket sends its frames itself, before each action (``late=None``): its log
lines must leave first, on a socket only its own thread uses.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import zmq

from runtime.frames import MAX_PARTS

SEND_BATCH = MAX_PARTS  # frames queued at most before they are sent
LATE = 0.001  # seconds a frame may wait in the queue while the lifeline is busy
_MORE, _LAST = int(zmq.NOBLOCK | zmq.SNDMORE), int(zmq.NOBLOCK)


class Outgoing:
    """The queue of (socket, frame) a lifeline sent and ZeroMQ does not have yet."""

    def __init__(self, stopping: Callable[[], bool], make_room: Callable[[object], None],
                 late: float | None = LATE):
        self._lock = threading.Lock()
        self._frames: list = []
        self._since = 0.0  # when the oldest queued frame was queued
        self._stopping = stopping
        self._make_room = make_room  # the lifeline's: take frames while a peer's queue is full
        self._late = late
        self._pending = threading.Event()
        self._closed = False
        self._thread = None
        if late is not None:
            self._thread = threading.Thread(target=self._watch, name="cpl-outgoing",
                                            daemon=True)
            self._thread.start()

    def put(self, socket, frame: bytes) -> None:
        with self._lock:
            if not self._frames:
                self._since = time.monotonic()
                if self._thread is not None and not self._pending.is_set():
                    self._pending.set()
            self._frames.append((socket, frame))
            full = len(self._frames) >= SEND_BATCH
        if full:
            self.flush()

    def flush(self) -> None:
        """Send every queued frame now (the lifeline's thread; a full peer queue is waited
        for, taking frames meanwhile, until a stop)."""
        with self._lock:
            frames, self._frames = self._frames, []
            for socket, parts in _by_socket(frames):
                while not self._stopping():
                    if _send(socket, parts):
                        break
                    self._make_room(socket)
                else:
                    return

    def __bool__(self) -> bool:
        return bool(self._frames)

    def close(self) -> None:
        if self._thread is not None:
            self._closed = True
            self._pending.set()
            self._thread.join()

    def _watch(self) -> None:
        """Send the frames that waited ``LATE``, unless a peer's queue is full (then they
        stay for the lifeline's thread, in order)."""
        while True:
            self._pending.wait()
            if self._closed:
                return
            time.sleep(self._late)
            with self._lock:
                if self._frames and time.monotonic() - self._since >= self._late \
                        and not self._stopping():
                    frames, self._frames = self._frames, []
                    groups = _by_socket(frames)
                    for index, (socket, parts) in enumerate(groups):
                        if not _send(socket, parts):  # this one and the later stay
                            self._frames[:0] = [(other, frame) for other, later in
                                                groups[index:] for frame in later]
                            break
                if not self._frames:
                    self._pending.clear()


def _by_socket(frames: list) -> list:
    """(socket, its frames in order) for queued (socket, frame) pairs, at most
    ``MAX_PARTS`` frames in each (a receiver refuses a longer message whole): frames
    put back by the queue's thread, a peer's queue full, can make more."""
    if len(frames) == 1:
        return [(frames[0][0], [frames[0][1]])]
    grouped: dict = {}
    for socket, frame in frames:
        grouped.setdefault(socket, []).append(frame)
    return [(socket, parts[at:at + MAX_PARTS]) for socket, parts in grouped.items()
            for at in range(0, len(parts), MAX_PARTS)]


# pyzmq's own send: the Socket class's is a Python wrapper (routing ids, groups: none
# here) that doubled the cost of a part (1.0 -> 0.47 µs, bench/README.md)
_raw_send = zmq.backend.Socket.send


def _send(socket, parts: list) -> bool:
    """``parts`` as one message; False if the peer's queue is full (nothing was sent: a
    message ZeroMQ cannot finish is rolled back)."""
    try:
        for frame in parts[:-1]:
            _raw_send(socket, frame, _MORE)
        _raw_send(socket, parts[-1], _LAST)
        return True
    except zmq.Again:
        return False
