"""No process outlives its run, whatever its actions start: the means, and why these.

* **A process group per lifeline.**  ``LocalProcesses`` starts each lifeline as
  the leader of a session of its own; what its actions start (``os.fork``,
  ``subprocess``) stays in that group unless it leaves it, and the launcher
  kills the whole group (:func:`kill_group`) on every path: a normal end, an
  error, Ctrl-C, ``--timeout``, a death.
* **A lifeline dies with its supervisor**, at once, even inside an action that
  holds the interpreter: ``PR_SET_PDEATHSIG`` (:func:`die_with_parent`).  A
  killed process cannot kill its group, so a :class:`Keeper` does: a small
  process the launcher starts beside the lifelines, that kills their groups
  when the supervisor's pipe to it closes — at the run's end, or when the
  supervisor is killed, even with -9.  It runs no user code, so nothing can
  hold it up.  (Without it, the end of standard input and
  ``SUPERVISOR_SILENCE`` still end the lifelines themselves; off Linux they
  are all.)
* **``cpl run`` is a child subreaper** while it runs (:class:`Sweep`,
  ``PR_SET_CHILD_SUBREAPER``): what escaped its group (``setsid``), and what
  the actions of ``--sim`` start (in ``cpl run``'s own process), comes back to it
  when its parent ends, and is killed at the end.  Only for the run's
  duration, and only processes that were not its children before.
* A **forked copy** of a lifeline or of the simulator never speaks for it:
  ``choreo.execution.actions`` ends the copy when the action returns into our code, and
  the lifeline's log is closed in any copy (``os.register_at_fork``).

Process groups alone miss ``setsid``; a subreaper alone cannot act once its
own process is killed with -9; hence both, and the keeper for that case.  The
keeper is the supervisor's, not each lifeline's: a process a lifeline started
would, for a moment, look like the lifeline (``ps``, ``/proc``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_LINUX = sys.platform.startswith("linux")
_SWEEPS = 100  # rounds of killing: each may bring the orphans of the last back to us

# The keeper: reads the process groups to keep, one a line, from the supervisor's pipe;
# its end — the supervisor done, or killed — kills them all.  A POSIX shell where there is
# one: it starts in ~1 ms of CPU where Python takes ~15, in the moment the lifelines start
# and the run's processes share the cores; else this interpreter.
_SHELL = "/bin/sh"
_SHELL_KEEPER = ('while read group; do groups="$groups $group"; done; '
                 'for group in $groups; do kill -s KILL -- "-$group"; done')
_KEEPER = """
import os, signal, sys
groups = [int(line) for line in sys.stdin]
for group in groups:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
"""


def _prctl(option: int, value: int) -> bool:
    if not _LINUX:
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent() -> None:
    """The kernel kills this process when the thread that started it ends (Linux)."""
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class Keeper:
    """A small process, in a session of its own (no Ctrl-C of a terminal), that kills the
    process groups it is told of when this process closes its pipe — or dies, even with
    -9: then the kernel closes it.  It runs no user code and looks like no lifeline."""

    def __init__(self):
        reading, self._writing = os.pipe()
        self._pid = None
        actions = [(os.POSIX_SPAWN_DUP2, reading, 0),
                   (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                   (os.POSIX_SPAWN_DUP2, 1, 2)]
        try:
            for program, argv in ((_SHELL, ["sh", "-c", _SHELL_KEEPER]),
                                  (sys.executable, [sys.executable, "-I", "-S", "-c", _KEEPER])):
                with contextlib.suppress(FileNotFoundError, PermissionError):  # no shell
                    self._pid = os.posix_spawn(program, argv, os.environ,
                                               file_actions=actions, setsid=True)
                    break
        except (OSError, NotImplementedError):  # no keeper (no setsid: not Linux)
            self._pid = None
        finally:
            os.close(reading)

    def keep(self, group: int) -> None:
        with contextlib.suppress(OSError):  # no keeper, or gone: the launcher kills alone
            os.write(self._writing, f"{group}\n".encode("ascii"))

    def close(self) -> None:
        """The groups are killed; the keeper is reaped."""
        os.close(self._writing)
        if self._pid is not None:
            os.waitpid(self._pid, 0)


def kill_group(leader: int) -> None:
    """SIGKILL the process group ``leader`` leads (its members, it too if it still runs)."""
    with contextlib.suppress(OSError):
        os.killpg(leader, signal.SIGKILL)


class Sweep:
    """While in the block this process is a child subreaper (Linux); leaving it kills, and
    reaps, every child it has gained meanwhile: orphans of the run's processes included."""

    def __enter__(self):
        self._before = set(_children())
        self._reaper = _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        return self

    def __exit__(self, *exc) -> None:
        for _ in range(_SWEEPS):
            left = [pid for pid in _children() if pid not in self._before]
            if not left:
                break
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            for pid in left:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
        if self._reaper:
            _prctl(_PR_SET_CHILD_SUBREAPER, 0)


def _children() -> list[int]:
    """The pids whose parent is this process (zombies included), from ``/proc``."""
    me, found = os.getpid(), []
    if not _LINUX:
        return found
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                parent = int(handle.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if parent == me:
            found.append(int(entry))
    return found
