"""Who holds a run's parts folder: the lock a live ``cpl run`` keeps in it.

``cpl run --trace T`` makes ``T.parts`` and takes an exclusive ``flock`` on
``T.parts/run.lock`` before it writes anything else, with its pid, host and
start time in the file.  The kernel releases the lock when that process ends,
however it ends (``kill -9`` included), so a lock never outlives its run and
nothing has to clean one up: the file left behind is only read while its lock
is held, for the message.  A held lock means the parts are a live run's, which
writes its trace itself: ``cpl run`` and ``cpl merge`` refuse to touch them, and
readers of its unfinished trace say the run is still going instead of naming
a merge.  The file may be anyone's (a copied folder, a hostile one): it is
opened without following links or blocking, and read to a few bytes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import stat
import time

import attrs

from .codec import encode_json

LOCK = "run.lock"
_MOST = 4096  # bytes of the lock file read: a pid, a host name and a time
_PATIENCE = 1.0  # seconds a new lock waits for a reader that is probing it that instant


@attrs.frozen
class Holder:
    """The live run holding a parts folder, as its lock file says (``None``: not said)."""

    pid: int | None = None
    host: str | None = None
    started: float | None = None  # seconds since the epoch

    def __str__(self) -> str:
        """``in use by pid N (cpl run started HH:MM:SS)``, as much as the file said."""
        who = f"pid {self.pid}" if self.pid is not None else "a process"
        if self.host and self.host != socket.gethostname():
            who += f" on {self.host}"
        if self.started is None:
            return f"in use by {who} (a cpl run)"
        when = time.localtime(self.started)
        day = "" if time.strftime("%F", when) == time.strftime("%F") \
            else time.strftime(" %Y-%m-%d", when)
        return f"in use by {who} (cpl run started {time.strftime('%H:%M:%S', when)}{day})"


def holder(folder) -> Holder | None:
    """The live run holding ``folder``'s lock, or ``None`` if none does (no lock file, a
    released one, a file system without ``flock``, a name the system cannot hold)."""
    try:
        handle = os.open(os.path.join(folder, LOCK),
                         os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, ValueError, TypeError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return None
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _said(os.pread(handle, _MOST, 0))
        return None  # ours for an instant: nobody else's (closing releases it)
    except OSError:
        return None
    finally:
        os.close(handle)


def hold(folder) -> int:
    """Take the lock of the parts ``folder`` this process has just made, saying who holds
    it: the descriptor, held open (and the lock with it) until the run's parts are done.
    ``OSError`` if it cannot (``FileExistsError``: someone else made one first)."""
    handle = os.open(os.path.join(folder, LOCK),
                     os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        waited = time.monotonic() + _PATIENCE
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:  # a reader's probe (holder): it lets go at once
                if time.monotonic() > waited:
                    raise
                time.sleep(0.005)
        os.write(handle, (encode_json({"pid": os.getpid(), "host": socket.gethostname(),
                                       "started": time.time()}) + "\n").encode("utf-8"))
    except BaseException:
        os.close(handle)
        raise
    return handle


def _said(raw: bytes) -> Holder:
    """What a held lock file says; what it does not say well is left out (the lock is
    held all the same: a run starting, a file written by someone else)."""
    with contextlib.suppress(ValueError, RecursionError):
        data = json.loads(raw.decode("utf-8"))
        if isinstance(data, dict):
            pid, host, started = data.get("pid"), data.get("host"), data.get("started")
            return Holder(pid if type(pid) is int and pid > 0 else None,
                          host if isinstance(host, str) and 0 < len(host) <= 255 else None,
                          started if type(started) in (int, float)
                          and 0 <= started < 1e11 else None)
    return Holder()
