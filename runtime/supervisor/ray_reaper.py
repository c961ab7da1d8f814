"""A Ray that ``cpl run`` starts for itself goes with it, even after ``kill -9``.

Ray's own processes do not die with their driver: killed with -9, ``cpl run``
left ``ray::DashboardAgent`` and ``ray::RuntimeEnvAgent`` running, and their
session folder on disk.  Nothing in a killed process can clean up, so the
cleaning is done by this small watcher, started before Ray in a session of its
own (a terminal's Ctrl-C to ``cpl run``'s group does not reach it) with one end
of a pipe: it waits for that pipe to close — ``cpl run`` ended, however — and
then kills every process of ``cpl run``'s session (Ray's processes stay in it,
each worker in a process group of its own) that holds a file in the session
folder, or has it for its working folder or on its command line (every Ray
process of that session does: its logs and sockets are there), until none is
left, and removes the folder.  A process of another session is never touched
(someone reading Ray's logs there), nor ``cpl run`` and its parent (the shell
that started it).  On a normal end Ray is shut down first and the watcher finds
little or nothing to kill.

This file runs as a script (``python -I ray_reaper.py FOLDER PID SID PARENT``):
it imports the standard library only, so it starts in tens of milliseconds,
with no environment of the run's.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

QUIET = 0.3  # seconds with no process of the session found before the folder goes
PATIENCE = 10.0  # seconds of killing at most: a process that will not die is left


class Reaper:
    """The watcher of ``folder`` (a child of ours, in its own session); ``close`` hands it
    the end of the run and waits, at most ``wait`` seconds, until it has cleaned up."""

    def __init__(self, folder: str):
        self.folder = folder
        self.process = subprocess.Popen(
            [sys.executable, "-I", os.path.abspath(__file__), folder,
             *map(str, (os.getpid(), os.getsid(0), os.getppid()))], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/",
            start_new_session=True)  # the pipe's end is ours alone (not inherited)

    def close(self, wait: float = PATIENCE + 5) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(wait)
        except subprocess.TimeoutExpired:  # it goes on alone: nothing waits for it
            pass


def holding(folder: str, spared=(), session: int | None = None) -> list[int]:
    """Every live process of ``session`` (any, if None) but ``spared`` ones whose working
    folder, an open file or command line is inside ``folder``."""
    inside = os.path.realpath(folder) + os.sep
    wanted = inside.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in spared:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()  # state ppid pgrp session
            if fields[0] in (b"Z", b"X") or session is not None and int(fields[3]) != session:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if wanted in handle.read():
                    found.append(int(entry))
                    continue
            links = [os.readlink(f"/proc/{entry}/cwd")]
            for fd in os.listdir(f"/proc/{entry}/fd"):
                try:
                    links.append(os.readlink(f"/proc/{entry}/fd/{fd}"))
                except OSError:
                    continue
            if any((link + os.sep).startswith(inside) for link in links):
                found.append(int(entry))
        except (OSError, IndexError):
            continue
    return found


def sweep(folder: str, spared=(), session: int | None = None,
          patience: float = PATIENCE) -> None:
    """Kill what of ``session`` holds ``folder`` (but this process and ``spared``) until
    nothing has for ``QUIET`` seconds (a process being started meanwhile is found next
    time), then remove it."""
    spared = {os.getpid(), *spared}
    deadline = time.monotonic() + patience
    quiet_since = None
    while time.monotonic() < deadline:
        found = holding(folder, spared, session)
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        now = time.monotonic()
        if found:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif now - quiet_since >= QUIET:
            break
        time.sleep(0.05)
    shutil.rmtree(folder, ignore_errors=True)


def main(folder: str, driver: int, session: int, parent: int) -> None:
    """``driver``: ``cpl run``, spared if it is still there (a normal end: it waits for us);
    ``session`` its session; ``parent`` its parent, spared too."""
    for number in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(number, signal.SIG_IGN)  # a closed terminal is no reason to stop
    try:
        while sys.stdin.buffer.read(1 << 12):  # nothing is written: only the end counts
            pass
    except OSError:
        pass
    sweep(folder, (driver, parent), session)


if __name__ == "__main__":
    main(sys.argv[1], *map(int, sys.argv[2:5]))
