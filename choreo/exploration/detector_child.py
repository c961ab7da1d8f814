"""The child that calls the user's detectors (``choreo.exploration.detector_process``),
trace after trace.

It leads a process group of its own (so its parent kills all that a detector
started with one signal), adopts the orphans of what its detectors start (Linux:
a child subreaper, so a process started through a double fork is still seen as
one of its children), and writes nothing on standard output: a detector's output,
printed or written to file descriptor 1, goes to standard error.  After each
detector it checks that it has no child left, running or not waited for; a
copy of it that a fork brought back out of a detector ends at once, saying
nothing.  It never returns into the code of the process it was forked from.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import sys
import time

_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36  # linux/prctl.h


def serve(detectors, trace, down: int, up: int) -> None:
    """Answer the requests read on ``down`` (a JSON line, then the pickled trace unless it
    is ``trace``, inherited) with a line per detector on ``up``; end when ``down`` ends or
    after a detector failed."""
    code = 0
    try:
        os.setpgid(0, 0)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        os.dup2(2, 1)
        _adopt_orphans()
        me = os.getpid()
        requests = os.fdopen(down, "rb")
        while True:
            header = requests.readline()
            if not header:  # the parent ended, or is done with this child
                break
            request = json.loads(header)
            if not request["inherited"]:
                trace = _rebuilt(pickle.loads(requests.read(request["size"])))
            for detector in detectors[request["start"]:]:
                answer = _answer(detector, trace, request["where"], me)
                flush_streams()
                write_all(up, json.dumps(answer).encode("utf-8") + b"\n")
                if "failed" in answer:
                    return  # the parent kills the group: nothing more is asked of it
    except BaseException:  # noqa: BLE001 - never unwind into the parent's code
        code = 70
    finally:
        flush_streams()
        os._exit(code)


def _answer(detector, trace, where: str, me: int) -> dict:
    from choreo.authoring import DetectorFailed
    started = time.process_time()
    try:
        answer = {"found": [trace.index_of(event.id) for event in detector(trace)]}
    except DetectorFailed as error:
        answer = {"failed": str(error)}
    if os.getpid() != me:  # a copy forked inside the detector came back out of it
        os._exit(0)
    if "failed" not in answer and _unwaited():
        answer = {"failed": f"detector {detector.name!r} ({detector.spec}) on {where} started "
                            f"a process and returned without waiting for it: a detector "
                            f"waits for what it starts"}
    answer["cpu"] = time.process_time() - started
    return answer


def _unwaited() -> bool:
    """Whether this process has a child, running or ended but not waited for."""
    try:
        os.waitpid(-1, os.WNOHANG)  # (0, 0) for a running one; reaps an ended one
    except ChildProcessError:
        return False
    return True


def _adopt_orphans() -> None:
    """Become the parent of the orphans of this process's descendants, and die with the
    parent (Linux only: elsewhere its pipe's end ends it, once its detector returns)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _rebuilt(plain: tuple):
    from cpl.trace import Event, Trace
    lifelines, init, events, variables, symbols, meta, predicates = plain
    return Trace(lifelines, init, [Event(*fields) for fields in events], variables, symbols,
                 meta, predicates=predicates)


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd`` (a pipe may take it in parts)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def flush_streams() -> None:
    """What Python buffers for stdout and stderr, said now (before a fork or an exit)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
