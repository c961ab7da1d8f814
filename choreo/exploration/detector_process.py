"""The user's detectors run in a process of their own, each under a deadline per trace.

A detector is the user's code, called by ``cpl detect`` and by every run of
``cpl explore``: one that never returns would hang them, one that forks would
leave a copy of ``cpl`` behind (a second report, an orphan per run, a pool that
waits on it), one that calls ``os._exit(0)`` would end ``cpl detect`` with
exit 0 and nothing said.  So they are called in a child forked from this
process (``choreo.exploration.detector_child``), which leads a process group of its own and
serves trace after trace: the first trace it inherits, the next ones come down a
pipe, and each detector's findings (the events' indices) go back up another.
This process gives each detector ``timeout`` seconds a trace.  A detector that
runs out of time, ends the child, or leaves a process it started running (or not
waited for) is a ``DetectorFailed`` naming it and the trace: the whole group is
killed, and a new child serves what comes next.  The children of a process are
killed when it ends.  Where there is no ``fork`` the detectors are called in this
process, without these guards.
"""

from __future__ import annotations

import atexit
import json
import os
import pickle
import select
import signal
import time

from .detector_child import flush_streams, write_all

DEFAULT_TIMEOUT = 60.0  # seconds a detector of yours may take on one trace


class Failure(str):
    """A detector's failure, worded: what ``run`` gives instead of its events."""


def run(detectors, trace, where: str, timeout: float = DEFAULT_TIMEOUT):
    """``({name: [events] or Failure}, CPU seconds they took)`` for ``detectors``
    (``UserDetector``s) on ``trace``; ``where`` names the trace in a failure."""
    detectors = tuple(detectors)
    if not hasattr(os, "fork"):
        return {detector.name: _in_process(detector, trace) for detector in detectors}, 0.0
    found: dict = {}
    cpu = 0.0
    key = (os.getpid(), detectors)
    while len(found) < len(detectors):
        child = _CHILDREN.pop(key, None) or _Child(detectors, trace)
        try:
            results, spent = child.ask(trace, len(found), where, timeout)
        except BaseException:  # Ctrl-C while it works: it ends with this process's wait
            child.stop()
            raise
        cpu += spent
        for result in results:
            found[detectors[len(found)].name] = result
        if child.alive:
            _CHILDREN[key] = child
        else:
            child.stop()
    return found, cpu


def _in_process(detector, trace):
    from choreo.authoring import DetectorFailed
    try:
        return detector(trace)
    except DetectorFailed as error:
        return Failure(str(error))


class _Child:
    """One serving child: its pid (its process group's too) and its two pipes."""

    def __init__(self, detectors, trace):
        from .detector_child import serve
        self.detectors, self.born_with = detectors, trace
        flush_streams()  # what is buffered is said once, by this process
        down, self._down = os.pipe()
        self._up, up = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            for fd in (self._down, self._up, *(fd for other in _CHILDREN.values()
                                               for fd in (other._down, other._up))):
                try:
                    os.close(fd)  # another child's pipe held open here would never end
                except OSError:
                    pass
            serve(detectors, trace, down, up)
        os.close(down)
        os.close(up)
        try:
            os.setpgid(self.pid, self.pid)  # as the child does: whichever runs first
        except OSError:
            pass
        self.alive, self.status, self._buffer = True, None, b""

    def ask(self, trace, start: int, where: str, timeout: float) -> tuple[list, float]:
        """The results of ``detectors[start:]`` on ``trace``, up to the first failure."""
        inherited = trace is self.born_with
        self.born_with = None  # the next trace comes down the pipe, even if it is this one
        payload = b"" if inherited else pickle.dumps(_plain(trace), pickle.HIGHEST_PROTOCOL)
        request = {"start": start, "where": where, "inherited": inherited, "size": len(payload)}
        results: list = []
        cpu = 0.0
        try:
            os.write(self._down, json.dumps(request).encode("utf-8") + b"\n")
            write_all(self._down, payload)
        except OSError:  # it ended before it read the trace: the reading below says how
            pass
        due = time.monotonic() + timeout
        while start + len(results) < len(self.detectors):
            detector = self.detectors[start + len(results)]
            line = self._line(due)
            if line is None:
                self.alive = False
                results.append(Failure(_said(detector, where, f"did not return within "
                                             f"{timeout:g} s (--detector-timeout)")))
                break
            if not line:
                self.alive = False
                self.stop()
                results.append(Failure(_said(detector, where,
                                             f"ended its process ({_how(self.status)})")))
                break
            answer = json.loads(line)
            cpu += answer["cpu"]
            if "failed" in answer:
                self.alive = False
                results.append(Failure(answer["failed"]))
                break
            results.append([trace.events[index] for index in answer["found"]])
            due = time.monotonic() + timeout
        return results, cpu

    def _line(self, due: float) -> bytes | None:
        """The child's next line; ``b""`` if it ended, ``None`` if ``due`` passed first."""
        while b"\n" not in self._buffer:
            left = due - time.monotonic()
            if left <= 0 or not select.select([self._up], [], [], left)[0]:
                return None
            chunk = os.read(self._up, 1 << 16)
            if not chunk:
                return b""
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def stop(self) -> None:
        """Kill its process group, wait for it, close the pipes (once)."""
        if self.pid is None:
            return
        _killpg(self.pid)
        try:
            _, self.status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        for fd in (self._down, self._up):
            try:
                os.close(fd)
            except OSError:
                pass
        self.pid = None


_CHILDREN: dict[tuple, _Child] = {}  # (pid of the process they serve, detectors) -> child


@atexit.register
def stop_all() -> None:
    """End the children this process started (a child also ends when its parent does)."""
    me = os.getpid()
    for key in [key for key in _CHILDREN if key[0] == me]:
        _CHILDREN.pop(key).stop()


def _plain(trace) -> tuple:
    """The trace as plain values that pickle (its maps are read-only proxies, which do not)."""
    events = [(*event[:5], dict(event[5]), *event[6:9],
               None if event[9] is None else dict(event[9]), *event[10:])
              for event in trace.events]
    init = {name: dict(store) for name, store in trace.init.items()}
    meta = None if trace.meta is None else dict(trace.meta)
    return (trace.lifelines, init, events, trace.vars, trace.symbols, meta, trace.predicates)


def _said(detector, where: str, what: str) -> str:
    return f"detector {detector.name!r} ({detector.spec}) on {where} {what}"


def _how(status) -> str:
    if status is None:
        return "it could not be waited for"
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name}"
    return f"exit status {os.WEXITSTATUS(status)}"


def _killpg(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
