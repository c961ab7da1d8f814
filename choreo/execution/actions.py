"""Calling a user's action, and checking what it gives back before the trace holds it.

An action is ``fn(variables, rng)``: ``variables`` a read-only view of the
lifeline's store, ``rng`` its seeded ``random.Random``.  It may be async:
:func:`start` returns whatever ``fn`` returned, and the *driver* awaits an
awaitable on its own event loop — the lifeline engine never runs a loop of
its own, so it works from plain code and from inside asyncio alike.

Whatever goes wrong — ``fn`` raises (any ``BaseException``, ``KeyboardInterrupt``
included: :func:`own`) or calls ``sys.exit``, returns the wrong
arity or type, or a value a ``cpl-msc/1`` trace cannot hold (NaN, ±Infinity,
a non-JSON object) — is a :class:`~choreo.execution.status.RunFailure` naming the
lifeline, the event and the line of the action that failed.
"""

from __future__ import annotations

import os
import signal
import sys
import sysconfig
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from types import MappingProxyType

from cpl.trace import LARGEST_INT, SMALLEST_INT, value_problem
from choreo.authoring import Where, conforms, shown_path, type_name
from choreo.analysis import LAct
from .status import RunFailure


def start(s: LAct, store: dict, rng, lifeline: str, event, snapshot: bool = False):
    """Call the action; returns its value, or an awaitable the driver must await.
    ``event``: the event's id, or a function that gives it (called only on a failure).

    ``snapshot``: the action sees a copy of the store as it is now, for a driver
    that lets other threads of the lifeline move on while it is awaited."""
    forks = _forks[0]
    try:
        value = s.fn(MappingProxyType(dict(store) if snapshot else store), rng)
    except BaseException as error:  # noqa: BLE001 - the action's own: a failure of the run
        _left_in_a_fork(forks)
        if not own(error):
            raise
        raise failed(s, error, lifeline, event) from None
    _left_in_a_fork(forks)
    return value


_forks = [0]  # how many forks made this process: a count, not os.getpid(), a system call
os.register_at_fork(after_in_child=lambda: _forks.__setitem__(0, _forks[0] + 1))


def _left_in_a_fork(forks: int) -> None:
    """An action that forked comes back twice: the copy ends here, silently, so that only
    the lifeline that called it goes on (prints, logs, sends, writes the trace)."""
    if _forks[0] != forks:
        os._exit(0)


def own(error: BaseException) -> bool:
    """Whether ``error``, out of an action, is the action failing, not the run being stopped:
    anything but a stop of ours (:class:`Interrupted`, ``DeadlinePassed``, a generator's
    close) and a ``KeyboardInterrupt`` that may be the terminal's Ctrl-C (raised while
    Python's default SIGINT handler is in place, which a driver that tells its stops apart
    replaces)."""
    if isinstance(error, (Interrupted, DeadlinePassed, GeneratorExit)):
        return False
    if isinstance(error, KeyboardInterrupt):
        return signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    return True


def failed(s: LAct, error: BaseException, lifeline: str, event) -> RunFailure:
    """The failure of an action that raised (or exited) with ``error``."""
    event = event() if callable(event) else event
    if isinstance(error, SystemExit):
        cause = f"action {s.label!r} called sys.exit({error.code!r})"
    else:
        said = str(error)
        cause = f"action {s.label!r} raised {type(error).__name__}" + (f": {said}" if said else "")
    return RunFailure(lifeline, event, cause, _raised_at(s, error) or s.where, kind="action",
                      traceback=user_traceback(error))


OURS = ("choreo", "cpl", "runtime", "causal_guards")  # our packages: their frames are not shown
MOST_FRAMES = 20  # the innermost ones: a deep library's frames do not bury the message


def user_traceback(error: BaseException) -> str:
    """The frames of ``error``'s traceback that are the user's (any code but our packages,
    and but the frames of the standard library a driver awaits in before the action's
    own), as Python prints them, indented under the failure's message; ``""`` if none."""
    ours = tuple(os.path.dirname(os.path.abspath(module.__file__)) + os.sep
                 for module in map(sys.modules.get, OURS) if module is not None
                 and getattr(module, "__file__", None))
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if not os.path.abspath(frame.filename).startswith(ours)]
    while frames and _standard(frames[0].filename):
        frames.pop(0)  # asyncio's, awaiting the action for a driver
    if not frames:
        return ""
    shown = traceback.StackSummary.from_list([
        traceback.FrameSummary(shown_path(frame.filename), frame.lineno, frame.name,
                               line=frame.line) for frame in frames]).format()  # a recursion's
    hidden = len(shown) - MOST_FRAMES  # repeats are one "[Previous line repeated N more times]"
    lines = ["where the action raised (most recent call last):"]
    if hidden > 0:
        lines.append(f"  ... {hidden} earlier frames")
    lines += [line for text in shown[-MOST_FRAMES:] for line in text.rstrip("\n").split("\n")]
    return "\n".join(f"  {line}" for line in lines)


def _standard(filename: str) -> bool:
    """Whether ``filename`` is in Python's standard library (not an installed package's)."""
    path = os.path.abspath(filename)
    return path.startswith(os.path.join(sysconfig.get_paths()["stdlib"], "")) and not (
        {"site-packages", "dist-packages"} & set(path.split(os.sep)))  # a venv's base's too


def assignments(s: LAct, value, variables: dict, lifeline: str, event) -> dict:
    """The variables ``value`` assigns, each checked against its declaration and JSON
    (``event`` as for :func:`start`)."""
    names = s.assigns
    if not names:
        return {}
    if len(names) == 1:
        updates = {names[0]: value}
    elif isinstance(value, dict) and set(value) <= set(names):
        updates = dict(value)
    elif isinstance(value, (tuple, list)) and len(value) == len(names):
        updates = dict(zip(names, value))
    else:
        raise _bad(s, lifeline, event, f"returned {_short(value)}; it assigns "
                   f"{', '.join(names)}, so it must return a tuple of {len(names)} values "
                   f"or a dict of them")
    for name, item in updates.items():
        kind = variables[name].type
        if type(item) is int and (kind is int or kind is float or kind is object) \
                and SMALLEST_INT <= item <= LARGEST_INT:
            continue  # the checks below in one line, for the commonest value (bench/stream_loop.py)
        if not conforms(item, kind):
            raise _bad(s, lifeline, event, f"gave {name} = {_short(item)}, which is not "
                       f"{type_name(kind)}")
        problem = value_problem(item, (list, tuple), recorded=True)
        if problem:
            raise _bad(s, lifeline, event, f"gave {name} = {_short(item)}, which a trace "
                       f"cannot hold: it {problem}")
    return updates


def _bad(s: LAct, lifeline: str, event, what: str) -> RunFailure:
    event = event() if callable(event) else event
    return RunFailure(lifeline, event, f"action {s.label!r} {what}", _defined_at(s) or s.where,
                      kind="action")


def _short(value) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a user object whose repr fails
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def _defined_at(s: LAct) -> Where | None:
    code = getattr(s.fn, "__code__", None)
    return Where(code.co_filename, code.co_firstlineno) if code is not None else None


def _raised_at(s: LAct, error: BaseException) -> Where | None:
    """The innermost traceback line in the action's own file: where the user's code failed."""
    code = getattr(s.fn, "__code__", None)
    if code is None:
        return None
    own = os.path.abspath(code.co_filename)
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == own:
            found = Where(frame.filename, frame.lineno)
    return found


# ------------------------------------------------- awaiting for a driver


class DeadlinePassed(BaseException):
    """--timeout ran out while an action was awaited (not an action failure)."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) as a driver's own handler raises it inside an action: the run is
    stopped; a ``KeyboardInterrupt`` the action raises itself is its failure."""


async def bounded(awaitable, deadline: float | None):
    if deadline is None:
        return await awaitable
    import asyncio  # here, not at the top: a run without async actions never needs it
    try:
        return await asyncio.wait_for(awaitable, max(0.0, deadline - time.monotonic()))
    except asyncio.TimeoutError:
        raise DeadlinePassed from None


class Awaiter:
    """Awaits for a synchronous caller: on a loop of the run's own, created on first use —
    in a worker thread if this thread already runs a loop (a notebook, an async app)."""

    def __init__(self):
        self._runner = None  # an asyncio.Runner, made on first use
        self._worker: ThreadPoolExecutor | None = None

    def __enter__(self):
        return self

    def __call__(self, awaitable, deadline):
        if self._runner is None:
            import asyncio
            self._runner = asyncio.Runner()
            if _loop_running():
                self._worker = ThreadPoolExecutor(1, thread_name_prefix="cpl-actions")
        coroutine, forks = bounded(awaitable, deadline), _forks[0]
        try:
            if self._worker is None:
                return self._runner.run(coroutine)
            return self._worker.submit(self._runner.run, coroutine).result()
        finally:
            _left_in_a_fork(forks)

    def __exit__(self, *exc):
        if self._runner is not None:
            if self._worker is None:
                self._runner.close()
            else:
                self._worker.submit(self._runner.close).result()
                self._worker.shutdown()


def _loop_running() -> bool:
    import asyncio
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        return False


class Background:
    """Awaits many actions at once for a driver that must not block (a lifeline process).

    The actions run on an event loop in a thread of its own, started by the first
    :meth:`submit` (a run without async actions has neither); :meth:`submit` gives
    a ``concurrent.futures.Future``, and ``wake_fd`` turns readable whenever one
    is done, so the driver can poll it beside its sockets.  Leaving the block
    cancels what is still running.
    """

    def __enter__(self):
        self._loop = self._thread = None
        self.wake_fd, self._poke = os.pipe()
        os.set_blocking(self.wake_fd, False)
        os.set_blocking(self._poke, False)
        return self

    def submit(self, awaitable):
        import asyncio
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever,
                                            name="cpl-actions", daemon=True)
            self._thread.start()
        future = asyncio.run_coroutine_threadsafe(bounded(awaitable, None), self._loop)
        future.add_done_callback(self._wake)
        return future

    def _wake(self, _future) -> None:
        try:
            os.write(self._poke, b"!")
        except OSError:  # the pipe is full (already readable) or closed (leaving)
            pass

    def drain(self) -> None:
        """Empty ``wake_fd`` (before looking at which futures are done)."""
        try:
            while os.read(self.wake_fd, 4096):
                pass
        except BlockingIOError:
            pass

    def __exit__(self, *exc):
        if self._loop is not None:
            import asyncio

            def stop():
                for task in asyncio.all_tasks(self._loop):
                    task.cancel()
                self._loop.call_soon(self._loop.stop)  # after the cancellations are delivered
            self._loop.call_soon_threadsafe(stop)
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self._loop.close()
        os.close(self.wake_fd)
        os.close(self._poke)
