"""Lifelines forked from the supervisor once it has imported and prepared the plan.

Started as ``cpl lifeline NAME --stdin``, every lifeline process paid the
interpreter, the imports and ``prepare`` again (a third of a second of CPU
each, two at a time on two cores) before its ``hello``.  A fork of the
supervisor has all of that already: it only waits for its connection on its
pipe, as the command does, and serves.  What stays as it was:

* each lifeline is a process of its own, a **child of the supervisor** (its
  exit status reaches ``LocalProcesses.ended``), leading a **session and
  process group** of its own, with ``PR_SET_PDEATHSIG`` set and the parent
  checked after it (:mod:`choreo.execution.lineage`: the keeper kills its group);
* ``ps`` names it ``cpl lifeline NAME --stdin`` (``setproctitle``, told to
  leave ``/proc/PID/environ`` as it is), and it holds no descriptor of the
  supervisor's but the standard ones and its pipe, as fd 0;
* it never returns into the supervisor's code: it leaves with ``os._exit``.

A fork is safe only from a process with **one thread**: no ZeroMQ context's
I/O threads, no Python thread (a lock held by another thread stays held in
the copy).  The supervisor forks before it makes its context; :func:`forkable`
checks ``/proc/self/task``, and a process that cannot fork (another system,
threads started by an embedding program or the choreography's module, an
environment changed since ``exec``, which a copy would not show in
``/proc/PID/environ``) starts the command instead.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from choreo.execution import die_with_parent

try:  # imported once here, before the forks, not in every copy: it only sets up at its first
    import setproctitle  # call (1.3), so each copy still sets SPT_NOENV first (``_name``)
except ImportError:  # named as the supervisor: still its own process and group
    setproctitle = None

_LINUX = sys.platform.startswith("linux")


def forkable() -> bool:
    """Whether lifelines may be forked from this process: Linux, one thread, and the
    environment still the one it was started with."""
    if not _LINUX or not hasattr(os, "fork"):
        return False
    try:
        if len(os.listdir("/proc/self/task")) != 1:
            return False
        with open("/proc/self/environ", "rb") as handle:
            started = handle.read()
    except OSError:
        return False
    return _environment(started) == dict(os.environb)


def _environment(block: bytes) -> dict[bytes, bytes]:
    pairs = (entry.partition(b"=") for entry in block.split(b"\0") if entry)
    return {key: value for key, _, value in pairs}


class Forked:
    """A lifeline forked here, as ``LocalProcesses`` sees a ``subprocess.Popen``: its pid
    (which leads its process group), ``stdin`` (the write end of its pipe), ``poll``,
    ``wait`` and ``returncode`` (negative: the signal that ended it)."""

    def __init__(self, pid: int, stdin):
        self.pid, self.stdin = pid, stdin
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self._reap(os.WNOHANG)

    def wait(self) -> int | None:
        return self._reap(0)

    def _reap(self, options: int) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, options)
            except ChildProcessError:  # reaped by someone else: ended, how is unknown
                pid, status = self.pid, None
            except InterruptedError:
                return None
            if pid == self.pid:
                self.returncode = 255 if status is None else os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self) -> None:
        """SIGKILL it directly too: until it has made its session, its group is ours."""
        with contextlib.suppress(OSError):
            if self.returncode is None:
                os.kill(self.pid, signal.SIGKILL)


def fork_lifeline(name: str, plan) -> Forked:
    """Fork lifeline ``name`` of ``plan``: it reads its connection from its pipe, as
    ``cpl lifeline NAME --stdin`` does from standard input, then serves."""
    parent = os.getpid()
    reading, writing = os.pipe()
    for stream in (sys.stdout, sys.stderr):  # else the copy would write them once more
        with contextlib.suppress(Exception):
            stream.flush()
    pid = os.fork()
    if pid == 0:  # the lifeline: never back into the caller's code
        code = 70
        try:
            os.close(writing)
            _become(name, parent, reading)
            code = _serve(name, plan)
        except KeyboardInterrupt:
            code = 130
        except BaseException as error:  # noqa: BLE001 - one clear line, as cpl lifeline says
            code = _internal(name, error)
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os._exit(code)
    os.close(reading)
    return Forked(pid, open(writing, "wb", buffering=0))


def _become(name: str, parent: int, reading: int) -> None:
    """This copy as a lifeline process of its own: a session, death with the parent,
    signals as a fresh interpreter has them, its pipe as fd 0 and no other descriptor
    of the supervisor's, its name in ``ps``."""
    os.setsid()
    die_with_parent()
    if os.getppid() != parent:  # the supervisor died before the line above
        os._exit(3)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if reading != 0:
        os.dup2(reading, 0)
        os.close(reading)
    for entry in os.listdir("/proc/self/fd"):
        if int(entry) > 2:
            with contextlib.suppress(OSError):
                os.close(int(entry))
    sys.argv = ["cpl", "lifeline", name, "--stdin"]
    _name(" ".join(sys.argv))


def _name(title: str) -> None:
    """``ps`` shows ``title``.  ``SPT_NOENV``: within the command line's room only, so
    ``/proc/PID/environ`` stays readable (tools find a run's processes by it)."""
    if setproctitle is None:
        return
    os.environ["SPT_NOENV"] = "1"
    try:
        setproctitle.setproctitle(title)
    finally:
        del os.environ["SPT_NOENV"]


def _serve(name: str, plan) -> int:
    from runtime.frames import Ticket
    from runtime.lifeline import main
    line = _line(0)
    if not line:  # the supervisor closed the pipe without a connection: no run to join
        return 3
    connection = Ticket.from_json(line.decode("utf-8", "replace"), "standard input")
    if connection.lifeline != name:
        _complain(f"cpl lifeline: the connection is for {connection.lifeline!r}, not {name!r}")
        return 2
    return main(connection, watch_stdin=True, plan=plan)


def _line(descriptor: int) -> bytes:
    """The first line on ``descriptor`` (the supervisor writes one, then nothing)."""
    got = bytearray()
    while b"\n" not in got:
        chunk = os.read(descriptor, 1 << 16)
        if not chunk:
            break
        got += chunk
    return bytes(got).partition(b"\n")[0]


def _internal(name: str, error: BaseException) -> int:
    """What ``cpl lifeline`` answers to the same error: an error of ours (a connection it
    cannot use, 2) said with its exit code, 0 for a closed pipe, else an internal error
    (the traceback with ``CPL_DEBUG``)."""
    from cpl.errors import CplError
    if isinstance(error, SystemExit):
        return error.code if isinstance(error.code, int) else 1
    if isinstance(error, CplError):
        _complain(error.for_cli("lifeline"))
        return error.exit_code
    if isinstance(error, BrokenPipeError):
        return 0
    if os.environ.get("CPL_DEBUG"):
        import traceback
        traceback.print_exception(error)
    _complain(f"cpl lifeline {name}: internal error: {type(error).__name__}: {error}\n"
              f"  this is a bug in cpl; CPL_DEBUG=1 shows the traceback")
    return 1


def _complain(text: str) -> None:
    from cpl.errors import complain
    complain(text)
