"""``cpl run --sim --timeout``: the simulator in a child process, so the timeout is kept.

The simulator stops itself at its deadline between two steps and while it
awaits an async action; it cannot stop a synchronous action that never returns
— ``time.sleep``, a busy loop, a C call holding the interpreter's lock for
good, which no thread of the same process can even observe.  So with a
timeout the run happens in a forked child, in a process group of its own,
that hands its events to this process; this process writes the trace, and at
the deadline (plus ``GRACE``, the simulator's own chance to end) kills the
child's group — the child and whatever its actions started — and ends the
trace itself: status ``timeout``, every event the child took kept, and each
lifeline's results rebuilt from those events.  (A child still sending then is
not held, only ahead of this process: it has ``CATCH_UP`` to say its last
word.)

How events travel, and why: packed with msgpack (a tenth of JSON's cost to
read back: this process must keep up), through a pipe ``BATCH`` at a time (a
write, and a wake-up of this process, per event would make the run several
times slower).  Those not yet sent are copied, before each action is called,
into a *stage*: memory shared with this process, which reads it once the
child is dead.  So an action that never returns loses nothing done before
it, at the cost of a memory copy, not a system call.

Signals come to this process only (the child's group is not the terminal's):
Ctrl-C or SIGTERM is passed on to the child, whose simulator stops as it
would in this process (at its next step, or at once inside an action); a
second one kills it.
"""

from __future__ import annotations

import contextlib
import json
import mmap
import os
import select
import signal
import struct
import time

import msgpack

from .simulate import Simulator, simulated_meta
from .status import FAILED, INTERRUPTED, TIMEOUT, timed_out
from cpl.trace import Event, encode_json
from .lineage import die_with_parent, kill_group

GRACE = 0.2  # seconds past the deadline the simulator has to end on its own
CATCH_UP = 0.6  # seconds past it a child still sending (we lag behind it) may go on
IDLE = 0.1  # seconds of silence past GRACE that say the child is held by an action
BATCH = 256  # events the child sends at once
STAGE = 1 << 20  # bytes of the shared stage; lines that do not fit are sent at once
_HEADER = struct.Struct("QQ")  # the stage's first byte's offset in the stream, its length


def simulate_watched(plan, *, seed, values: dict, max_steps, timeout: float, sink,
                     schedule: str) -> tuple[dict, dict]:
    """The simulated run's ``(meta, results)``, ending within ``timeout + GRACE`` seconds
    whatever its actions do; ``sink`` (or None) takes each event."""
    began = time.monotonic()
    stage = mmap.mmap(-1, STAGE)
    receiving, sending = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(receiving)
        _simulate(plan, sending, stage, dict(seed=seed, values=values, max_steps=max_steps,
                                             timeout=timeout, schedule=schedule))
    os.close(sending)
    with contextlib.suppress(OSError):  # also in the child: whichever runs first
        os.setpgid(child, child)
    signals: list[int] = []

    def pass_on(signum, frame) -> None:
        signals.append(signum)
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL if len(signals) > 1 else signal.SIGINT)
    previous = {s: signal.signal(s, pass_on) for s in (signal.SIGINT, signal.SIGTERM)}
    stores = plan.stores(values)
    lines, steps, ended, exit_status = _Lines(), 0, None, None

    def take(data) -> bool:
        """One line of the child's: an event for the trace, or its last word (True)."""
        nonlocal steps, ended
        if _last(data):
            ended = data
            return True
        event = Event(*data) if type(data) is list else Event(**data)
        stores[event.lifeline].update(event.set)
        if sink is not None:
            sink(event)
        steps += 1
        return False
    try:
        deadline = began + timeout
        if not any(take(data) for data in lines.read(receiving, deadline + GRACE)) and not \
                any(take(data) for data in lines.read(receiving, deadline + CATCH_UP, IDLE)):
            kill_group(child)  # what it has not said yet is in the pipe, or staged
            _, exit_status = os.waitpid(child, 0)
            any(take(data) for data in (*lines.read(receiving, None), *lines.unsent(stage)))
    finally:
        os.close(receiving)
        stage.close()
        kill_group(child)  # and what its actions started
        if exit_status is None:
            _, exit_status = os.waitpid(child, 0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if ended is not None and "end" in ended:
        return ended["end"], ended["results"]
    if ended is not None:  # an error of the simulator's own, not the run's: as it would be here
        raise RuntimeError(ended.get("error"))
    if signals:  # a second one killed it, or the first came before its simulator ran
        status, error = INTERRUPTED, INTERRUPTED
    elif time.monotonic() >= began + timeout:
        status, error = TIMEOUT, timed_out(timeout)
    else:
        status, error = FAILED, (f"the simulation ended without a word: "
                                 f"{_how(exit_status)} (an action ended its process)")
    meta = simulated_meta(plan, seed, values, status, error, steps, True, schedule)
    c = plan.choreography
    return meta, {name: c.reported(name, stores[name]) for name in plan.lifelines}


class _Lines:
    """The child's stream of packed lines, as this process received it: how many bytes, and
    the start of one not yet whole."""

    def __init__(self):
        self.received = 0
        self._unpacker = msgpack.Unpacker(raw=False, max_buffer_size=0)

    def read(self, receiving: int, deadline: float | None, idle: float | None = None):
        """Each line, decoded, until the child's last word, its end closed, ``deadline``
        (None: only what is there now) or ``idle`` seconds without a byte."""
        waiting = select.poll()
        waiting.register(receiving, select.POLLIN)
        while True:
            left = 0 if deadline is None else deadline - time.monotonic()
            if left < 0 or not waiting.poll(min(left, idle or left) * 1000):
                return
            chunk = os.read(receiving, 1 << 16)
            if not chunk:
                return
            for data in self._split(chunk):
                yield data
                if _last(data):
                    return

    def unsent(self, stage) -> list:
        """The lines the dead child staged but never sent."""
        start, length = _HEADER.unpack_from(stage, 0)
        skip = self.received - start
        if not 0 <= skip < length:
            return []
        return list(self._split(stage[_HEADER.size + skip:_HEADER.size + length]))

    def _split(self, chunk: bytes):
        self.received += len(chunk)
        self._unpacker.feed(chunk)
        for data in self._unpacker:
            yield json.loads(data["json"]) if "json" in data else data


def _simulate(plan, sending: int, stage, options: dict) -> None:
    """The child: run, handing on the events as lines, then the meta and the results;
    never returns."""
    lines: list[bytes] = []
    sent = staged = 0  # bytes sent through the pipe; bytes in the stage after them
    pack = msgpack.Packer(use_bin_type=True, default=dict).pack  # an Event: an array

    def send() -> None:
        nonlocal sent, staged
        data = stage[_HEADER.size:_HEADER.size + staged] + b"".join(lines)
        lines.clear()
        sent, staged = sent + len(data), 0
        while data:
            data = data[os.write(sending, data):]
        _HEADER.pack_into(stage, 0, sent, 0)  # after the bytes it counts are in the pipe

    def before_action() -> None:
        nonlocal staged
        data = b"".join(lines)
        if _HEADER.size + staged + len(data) > STAGE:
            send()
            return
        stage[_HEADER.size + staged:_HEADER.size + staged + len(data)] = data
        lines.clear()
        staged += len(data)
        _HEADER.pack_into(stage, 0, sent, staged)  # after the bytes it counts

    def say(value) -> None:
        try:
            lines.append(pack(value))
        except (OverflowError, ValueError, TypeError):  # an integer beyond 64 bits
            lines.append(pack({"json": encode_json(
                value.to_dict() if isinstance(value, Event) else value)}))
        if len(lines) >= BATCH:
            send()
    try:
        os.setpgid(0, 0)
        die_with_parent()
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.default_int_handler)
        result = Simulator.of(plan).run(record=False, sink=say, before_action=before_action,
                                        **options)
        say({"end": dict(result.trace.meta), "results": result.results})
        send()
    except KeyboardInterrupt:  # passed on before the simulator could take it: no word
        pass
    except BaseException as error:  # noqa: BLE001 - said to the parent, which raises it
        with contextlib.suppress(BaseException):
            say({"error": f"{type(error).__name__}: {error}"})
            send()
    finally:
        os._exit(0)


def _last(data) -> bool:
    """The child's last word (its meta and results, or its error), not an event."""
    return type(data) is dict and "id" not in data


def _how(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
