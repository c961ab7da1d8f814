"""Running one lifeline's local program step by step, whatever carries its messages.

A ``Runner`` holds a lifeline's store, its CPL monitor and its *threads*:
continuations, each a stack of ``Frame`` (block, position, loop path).  The
threads of an ``LPar`` share the store and the monitor and join their
parent when all are done.  After every step a thread is *settled*: silent
moves (a block ends, a loop comes round, threads fork) are made at once, so
``thread.want`` always names the next event:

    ("act", s) ("send", s) ("tell", t) ("choice", s)   — can happen now
    ("recv", keys)                                     — waits for one of these messages

A message key is ``(kind, id, path)``: ``"m"`` and a send statement's id, or
``"c"`` and a decision's id (its control message), with ``path`` the
iteration numbers of the enclosing loops — both ends compute the same key,
so a receive takes exactly its own message under any delivery order.  The
transport (in-process for the simulator) only moves ``Message`` values.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from types import MappingProxyType
from typing import NamedTuple

import attrs

from . import model
from .errors import ChoreographyError
from .local import LAct, LBranch, LChoose, LLoop, LPar, LRecv, LSend


@attrs.frozen
class Tell:
    """A control send, queued right after a choice: the owner tells ``to`` the outcome."""

    choice: int
    to: str
    outcome: bool
    label: str


class Message(NamedTuple):
    """Immutable; a NamedTuple rather than attrs because every send builds one and
    ``tuple.__new__`` costs less than half a frozen attrs ``__init__`` (bench P5)."""

    key: tuple
    sender: str
    receiver: str
    values: dict  # receiver-side names → values (control: {})
    metadata: object  # the sender's cpl Metadata
    label: str = ""
    outcome: bool | None = None  # control messages
    msg_id: str = ""  # the trace's id for it


class Frame:
    __slots__ = ("block", "pc", "path", "next_k")

    def __init__(self, block, path: tuple, pc: int = 0):
        self.block, self.path, self.pc, self.next_k = block, path, pc, 0


class Thread:
    __slots__ = ("frames", "parent", "joining", "want")

    def __init__(self, frames, parent=None):
        self.frames, self.parent, self.joining, self.want = frames, parent, 0, None


class Runner:
    """One lifeline: its monitor (whose store is the lifeline's), action rng and live threads."""

    def __init__(self, program, monitor, rng, variables: dict, guards: dict):
        self.name = program.lifeline
        self.monitor = monitor
        self.store = monitor.store  # σ_A: the monitor applies every event's updates to it
        self.rng = rng
        self.variables = variables  # name -> model.Var, for type checks
        self.guards = guards  # decision id -> primitive formula
        self.threads: list[Thread] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._spawn(Thread([Frame(program.body, ())]))

    @property
    def done(self) -> bool:
        return not self.threads

    # ------------------------------------------------------------ settling

    def _spawn(self, thread: Thread) -> None:
        self.threads.append(thread)
        self._settle(thread)

    def _settle(self, thread: Thread) -> None:
        frames = thread.frames
        while frames:
            top = frames[-1]
            if top.pc >= len(top.block):
                frames.pop()  # a loop body ends: its loop statement below comes round
                continue
            s = top.block[top.pc]
            if isinstance(s, LPar):
                top.pc += 1
                thread.joining = len(s.threads)
                thread.want = None
                for block in s.threads:
                    self._spawn(Thread([Frame(block, top.path)], thread))
                return
            thread.want = self._want(s, top)
            return
        self.threads.remove(thread)
        parent = thread.parent
        if parent is not None:
            parent.joining -= 1
            if parent.joining == 0:
                self._settle(parent)

    @staticmethod
    def _want(s, top: Frame) -> tuple:
        kind = type(s)  # the statement classes are final: ``is`` is cheaper than isinstance
        if kind is LAct:
            return ("act", s)
        if kind is LSend:
            return ("send", s)
        if kind is Tell:
            return ("tell", s)
        if kind is LRecv:
            return ("recv", (("m", s.msg, top.path),))
        if kind is LBranch:
            if s.via == "message":
                return ("recv", (("m", s.then[0].msg, top.path), ("m", s.else_[0].msg, top.path)))
            return ("recv", (("c", s.choice, top.path),))
        if kind is LLoop:
            return ("recv", (("c", s.choice, top.path + (top.next_k,)),))
        return ("choice", s)  # LChoose, LWhile

    def ready(self) -> list[Thread]:
        """Threads whose next event can happen or waits for a message (not joining)."""
        return [t for t in self.threads if t.want is not None]

    # -------------------------------------------------------------- events

    def act(self, thread: Thread) -> dict:
        """Run the action; returns the variables it set."""
        top = thread.frames[-1]
        s = top.block[top.pc]
        updates = dict(s.values) if s.fn is None else self._call(s)
        self.monitor.act(updates)
        top.pc += 1
        self._settle(thread)
        return updates

    def send(self, thread: Thread, msg_id: str = "") -> Message:
        """The message of the send ``thread`` is at; ``msg_id`` is the transport's name for it."""
        s = thread.frames[-1].block[thread.frames[-1].pc]
        values = {into: self.store.get(var) for var, into in zip(s.vars, s.into)}
        return self._emit(thread, ("m", s.msg), s.to, values, s.label, None, msg_id)

    def tell(self, thread: Thread, msg_id: str = "") -> Message:
        """The control message telling a decision this lifeline took."""
        t = thread.frames[-1].block[thread.frames[-1].pc]
        return self._emit(thread, ("c", t.choice), t.to, {}, t.label, t.outcome, msg_id)

    def _emit(self, thread: Thread, key: tuple, to: str, values: dict, label, outcome,
              msg_id: str) -> Message:
        """Count the send event in the monitor; the message carries its metadata."""
        top = thread.frames[-1]
        message = Message((*key, top.path), self.name, to, values, self.monitor.send(), label,
                          outcome, msg_id)
        top.pc += 1
        self._settle(thread)
        return message

    def choice(self, thread: Thread) -> bool:
        top = thread.frames[-1]
        s = top.block[top.pc]
        self.monitor.choice()
        outcome = self.monitor.value(self.guards[s.choice])
        label = f"{s.label}: {str(outcome).lower()}"
        if isinstance(s, LChoose):
            top.pc += 1
            path = top.path
            thread.frames.append(Frame(s.then if outcome else s.else_, path))
        else:  # LWhile
            path = top.path + (top.next_k,)
            if outcome:
                top.next_k += 1
                thread.frames.append(Frame(s.body, path))
            else:
                top.pc += 1
                top.next_k = 0
        if s.tell:
            tells = tuple(Tell(s.choice, to, outcome, label) for to in s.tell)
            thread.frames.append(Frame(tells, path))
        self._settle(thread)
        return outcome

    def receive(self, thread: Thread, message: Message) -> dict:
        """Take ``message`` (its key is one ``thread.want`` waits for); returns what it set."""
        top = thread.frames[-1]
        s = top.block[top.pc]
        updates = message.values
        if isinstance(s, LBranch) and s.via == "message":
            first = s.then if message.key[1] == s.then[0].msg else s.else_
            top.pc += 1
            thread.frames.append(Frame(first, top.path, pc=1))
        elif isinstance(s, LBranch):
            top.pc += 1
            thread.frames.append(Frame(s.then if message.outcome else s.else_, top.path))
        elif isinstance(s, LLoop):
            if message.outcome:
                thread.frames.append(Frame(s.body, top.path + (top.next_k,)))
                top.next_k += 1
            else:
                top.pc += 1
                top.next_k = 0
        else:
            top.pc += 1
        self.monitor.receive(message.metadata, updates or None)
        self._settle(thread)
        return updates

    # ------------------------------------------------------------- actions

    def _call(self, s: LAct) -> dict:
        try:
            value = s.fn(MappingProxyType(self.store), self.rng)
            if inspect.isawaitable(value):
                if self._loop is None:
                    self._loop = asyncio.new_event_loop()
                value = self._loop.run_until_complete(value)
        except Exception as error:  # noqa: BLE001 - the user's action: report, do not crash
            raise ActionFailed(f"action {s.label!r} at {self.name} raised "
                               f"{type(error).__name__}: {error}", s.where) from None
        return self._assignments(s, value)

    def _assignments(self, s: LAct, value) -> dict:
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
            raise ActionFailed(f"action {s.label!r} at {self.name} returned {value!r}; it "
                               f"assigns {', '.join(names)}, so it must return a tuple of "
                               f"{len(names)} values or a dict of them", s.where)
        for name, item in updates.items():
            kind = self.variables[name].type
            if not model.conforms(item, kind) or (kind is object and not _jsonable(item)):
                raise ActionFailed(f"action {s.label!r} at {self.name} gave {name} = {item!r}, "
                                   f"which is not {model.type_name(kind)}"
                                   + (" (JSON values only)" if kind is object else ""), s.where)
        return updates

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()


class ActionFailed(ChoreographyError):
    """A user action raised or returned something its declaration does not allow."""

    def __init__(self, message: str, where):
        super().__init__(message, where, kind="action")


def _jsonable(value) -> bool:
    try:
        json.dumps(value, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False
