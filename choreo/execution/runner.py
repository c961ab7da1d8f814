"""The whole protocol of one lifeline, whoever drives it and whatever carries its messages.

A ``Runner`` is one lifeline of a running choreography: its store, its CPL
monitor, its inbox and its *threads* — continuations, each a stack of
frames (:mod:`choreo.execution.continuations`).  The threads of an ``LPar`` share the
store and the monitor and join their parent when all are done.  Drivers
(the seeded simulator, a lifeline process, a test) only do three things,
in the one loop they share (:class:`choreo.execution.drive.Driver`)::

    runner.deliver(message)          # a message addressed here has arrived
    options = runner.enabled()       # every event that can happen now
    event, message = runner.fire(option, value)   # take one; send ``message`` on

An action with a function is a phase of its own: ``runner.start(option)``
calls it and the driver awaits the result if it is awaitable (on its own
loop: the engine never runs one), then passes it to ``fire``.

After every step a thread is *settled*: silent moves (a block ends, a loop
comes round, threads fork) are made at once, so ``thread.want`` always names
the next event — ``("act"|"send"|"tell"|"choice", statement)`` or
``("recv", keys)``.  A message key is ``(kind, id, path)``: ``"m"`` and a
send statement's id, or ``"c"`` and a decision's id (its control message),
``path`` the iteration numbers of the enclosing loops — both ends compute
the same key, so a receive takes exactly its own message under any delivery
order.  Events are numbered per lifeline (``A.1``, ``A.2``, …) and messages
per sender (``A:1``, ``A:2``, …), so separate processes name them alike.

An ``LAtomic`` block is entered silently; the first event a thread fires in
it makes that thread the *holder* (arrival order: a thread waiting at a
block's start blocks nobody), and until the holder's frames have left the
block, ``enabled`` offers only the holder's events (and its forked threads').
"""

from __future__ import annotations

from types import MappingProxyType
from typing import NamedTuple

from cpl.errors import EvaluationError
from cpl.monitor import Monitor
from cpl.trace import Event
from . import actions
from .continuations import (
    FIXED_WANTS as _FIXED, AtomicFrame, Frame, Tell, Thread, claimant, waiting_at, wants, within,
)
from choreo.analysis import LAtomic, LBranch, LChoose, LLoop, LPar, LRecv, walk
from .status import RunFailure


class Message(NamedTuple):
    """Immutable; a NamedTuple rather than attrs because every send builds one and
    ``tuple.__new__`` costs less than half a frozen attrs ``__init__`` (bench/simulate_runs.py)."""

    key: tuple
    sender: str
    receiver: str
    values: dict  # receiver-side names → values (control: {})
    metadata: object  # the sender's cpl Metadata
    label: str = ""
    outcome: bool | None = None  # control messages
    msg_id: str = ""  # the trace's id for it: sender:sequence


# One event that can happen now: ``(runner, thread, None)`` for the thread's next event,
# ``(runner, thread, message)`` for its receive of ``message``.  A plain tuple: a step
# builds a few, and a NamedTuple costs five times as much to build (bench/simulate_runs.py).
Option = tuple
_EMPTY = MappingProxyType({})
_new = tuple.__new__  # Event.checked without the call of a classmethod (bench/runner_steps.py)


def calls(option: Option) -> bool:
    """An action with a function: the driver must ``start`` it and pass its value to fire."""
    want = option[1].want
    return want[0] == "act" and want[1].fn is not None


class Undeliverable(ValueError):
    """A message the Runner refuses: ``reason`` says why (``duplicate``)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class Runner:
    """One lifeline: monitor (whose store is the lifeline's), inbox, counters and live threads."""

    def __init__(self, plan, lifeline: str, store: dict, rng, *, record: bool = True,
                 clocks=None):
        self.name = lifeline
        self.index = plan.lifelines.index(lifeline)  # its place in the plan
        self.monitor = Monitor(plan.monitors, lifeline, store)
        self.store = self.monitor.store  # σ_A: the monitor applies every event's updates to it
        self.rng = rng
        self.variables = plan.choreography.variables  # name -> model.Var, for type checks
        self.record = record  # build an Event per event (False: count only)
        self.clocks = clocks  # a cpl.trace.clocks.Clocks the driver shares, or None: no ``vc``
        self.inbox: dict = {}  # key -> Message arrived and not yet received
        self.taken = 0  # events so far: the next is f"{name}.{taken + 1}"
        self.sent = 0  # messages so far: the next is f"{name}:{sent + 1}"
        self.threads: list[Thread] = []
        body = plan.projection.program(lifeline).body
        shared = plan.shared.get(lifeline)
        if shared is None:  # the first runner of this lifeline of this plan
            shared = plan.shared[lifeline] = (any(type(s) is LAtomic for s in walk(body)), {})
        self.atomic = shared[0]  # else no holder to keep
        self.holder: tuple | None = None  # (thread, its AtomicFrame) while a block is held
        # id(LChoose/LWhile) -> (its guard's slot, the tells if false, if true, the guard's
        # text), immutable, shared by the lifeline's runners: the plan holds the statements
        self.decisions: dict = shared[1]
        self.decided: dict = {}  # id(LChoose/LWhile) -> the same, its slot as our monitor's cell
        self.naming = lambda: self.latest_event  # the id a failure names, when it needs
        # it: not built per action (bench/runner_steps.py)
        self._spawn(Thread([Frame(body, ())]))

    @property
    def done(self) -> bool:
        return not self.threads

    @property
    def latest_event(self) -> str | None:
        """The id of this lifeline's latest event (None before its first): an event that
        fails is never taken, so its failure names the one the trace holds before it."""
        return f"{self.name}.{self.taken}" if self.taken else None

    # ------------------------------------------------------------ the driver's calls

    def deliver(self, message: Message) -> None:
        """``message`` arrived; it waits in the inbox until the receive that wants it.
        ``Undeliverable`` if it is a second copy.  (Whether a frame from outside holds
        values its declarations allow is the transport's check, ``runtime.frames.wire``: the
        messages of a simulation need none.)"""
        if message.key in self.inbox:
            raise Undeliverable("duplicate", f"{self.name} already holds message "
                                f"{message.key!r}")
        self.inbox[message.key] = message

    def enabled(self) -> list[Option]:
        """Every event that can happen now: each thread's next event, or a waiting
        thread's receive of any inbox message it accepts."""
        found = []
        inbox = self.inbox
        threads = self.threads
        if self.holder is not None:
            threads = [t for t in threads if within(t, self.holder[0])]
        for thread in threads:
            want = thread.want
            if want is None:  # joining its threads
                continue
            if want[0] == "recv":
                for key in want[1]:
                    message = inbox.get(key)
                    if message is not None:
                        found.append((self, thread, message))
            else:
                found.append((self, thread, None))
        return found

    def movable(self) -> list[Thread]:
        """The threads one of which takes this lifeline's next event: every thread not
        joining its own, but only the holder's while an atomic block is held (a systematic
        exploration asks which of the lifeline's events could come next)."""
        threads = [t for t in self.threads if t.want is not None]
        if self.holder is not None:
            threads = [t for t in threads if within(t, self.holder[0])]
        return threads

    def start(self, option: Option, snapshot: bool = False):
        """Call the action ``option`` is at; its value (or an awaitable the driver awaits).
        ``snapshot``: it sees a copy of the store (:func:`choreo.execution.actions.start`)."""
        return actions.start(option[1].want[1], self.store, self.rng, self.name,
                             self.naming, snapshot)

    def action_failed(self, option: Option, error: BaseException) -> RunFailure:
        """The failure of an awaited action that raised ``error``."""
        return actions.failed(option[1].want[1], error, self.name, self.naming)

    def fire(self, option: Option, value=None) -> tuple[Event | None, Message | None]:
        """Take the event: (the recorded event or None when not recording, the message to send).

        Each kind's step is written out here, not called: the monitor's step, the thread
        moved on (its next statement's want at once when it is a plain one, else
        :meth:`_settle`), the event counted and built.  A call per part cost a third of a
        stream step (bench/runner_steps.py).  The order is the reference's: the monitor first
        (a guard that raises leaves the count as it was), then the thread, then the count."""
        _, thread, message = option
        held = (self.holder or claimant(thread)) if self.atomic else None  # its block, if any
        kind, s = thread.want
        name = self.name
        try:
            if kind == "recv":
                event = self._receive(thread, message)
                message = None
            elif kind == "act":
                updates = (dict(s.values) if s.fn is None else
                           actions.assignments(s, value, self.variables, name, self.naming))
                self.monitor.act(updates)
                message = None
                to = msg = outcome = guard = payload = None
                label = s.label
            elif kind == "choice":
                top = thread.frames[-1]
                self.monitor.choice()
                decision = self.decided.get(id(s))  # the plan outlives the runner: ids stay
                if decision is None:
                    decision = self.decided[id(s)] = self._decided(s)
                outcome = bool(decision[0].cell_contents)
                if type(s) is LChoose:
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
                tells = decision[1 + outcome]
                if tells:
                    thread.frames.append(Frame(tells, path))
                self._settle(thread)
                self.taken = taken = self.taken + 1
                message = event = None
                if self.record:
                    clocks = self.clocks
                    event = _new(Event, (f"{name}.{taken}", name, "choice", None, None, _EMPTY,
                                         s.label, decision[3], outcome, clocks.stamp(
                                             name, "choice", None) if clocks else None, None,
                                         None))
            else:  # a send: data, or a decision's outcome (tell)
                self.sent = sent = self.sent + 1
                msg = f"{name}:{sent}"
                top = thread.frames[-1]
                to, label = s.to, s.label
                if kind == "send":
                    store = self.store
                    names = s.vars  # one variable, the commonest: no comprehension's frame
                    values = ({s.into[0]: store.get(names[0])} if len(names) == 1 else
                              {into: store.get(var) for var, into in zip(names, s.into)})
                    message = _new(Message, (("m", s.msg, top.path), name, to, values,
                                             self.monitor.send(), label, None, msg))
                    payload = dict(values)
                else:
                    outcome = s.outcome
                    message = _new(Message, (("c", s.choice, top.path), name, to, {},
                                             self.monitor.send(), label, outcome, msg))
                    payload = {"outcome": outcome}
                kind, updates, outcome, guard = "send", None, None, None
        except EvaluationError as error:  # a predicate raised while the monitor evaluated
            raise RunFailure(name, self.latest_event, f"cannot evaluate a "
                             f"guard: {error}", kind="predicate") from None
        if kind == "act" or kind == "send":  # the thread moves to its next statement
            top = thread.frames[-1]
            top.pc = pc = top.pc + 1
            block = top.block
            if pc < len(block) and (fixed := _FIXED.get(type(following := block[pc]))):
                thread.want = (fixed, following)  # _settle's first step, without its call
            else:
                self._settle(thread)
            self.taken = taken = self.taken + 1
            if self.record:
                clocks = self.clocks
                event = _new(Event, (f"{name}.{taken}", name, kind, to, msg, MappingProxyType(
                    updates) if updates else _EMPTY, label, guard, outcome, clocks.stamp(
                        name, kind, msg) if clocks else None, None, payload))
            else:
                event = None
        if self.atomic:
            self.holder = held if held is not None and held[1] in held[0].frames else None
        return event, message

    # -------------------------------------------------------------- the events

    def _decided(self, s) -> tuple:
        """This runner's view of decision ``s``: the plan's (:meth:`_decision`), its slot
        replaced by the monitor's cell that holds the guard's value (read per choice
        without building every slot's dict)."""
        decision = self.decisions.get(id(s))
        if decision is None:
            decision = self.decisions[id(s)] = self._decision(s)
        return self.monitor.cell(decision[0]), *decision[1:]

    def _decision(self, s) -> tuple:
        """What every firing of decision ``s`` shares: its guard's slot in the monitor, the
        control sends (immutable ``Tell``) for each outcome, its guard's canonical text."""
        tells = [tuple(Tell(s.choice, to, outcome, f"{s.label}: {str(outcome).lower()}")
                       for to in s.tell) for outcome in (False, True)]
        return self.monitor.slot(s.guard.checked.primitive), *tells, s.guard.canonical

    def _receive(self, thread: Thread, message: Message) -> Event | None:
        del self.inbox[message.key]
        top = thread.frames[-1]
        s = top.block[top.pc]
        kind = type(s)  # the statement classes are final
        if kind is LRecv:  # the commonest first
            top.pc += 1
        elif kind is LBranch and s.via == "message":
            first = s.then if message.key[1] == s.then[0].msg else s.else_
            top.pc += 1
            thread.frames.append(Frame(first, top.path, pc=1))
        elif kind is LBranch:
            top.pc += 1
            thread.frames.append(Frame(s.then if message.outcome else s.else_, top.path))
        elif message.outcome:  # LLoop
            thread.frames.append(Frame(s.body, top.path + (top.next_k,)))
            top.next_k += 1
        else:
            top.pc += 1
            top.next_k = 0
        updates = message.values
        self.monitor.receive(message.metadata, updates or None)
        self._settle(thread)
        self.taken = taken = self.taken + 1  # the event, built in place (see fire)
        if not self.record:
            return None
        name, clocks, msg = self.name, self.clocks, message.msg_id
        return _new(Event, (f"{name}.{taken}", name, "recv", None, msg, MappingProxyType(
            updates) if updates else _EMPTY, message.label, None, None, clocks.stamp(
                name, "recv", msg) if clocks else None, None, None))

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
            kind = _FIXED.get(type(s))
            if kind is not None:  # wants(s, top) for the statements whose want is theirs
                thread.want = (kind, s)
                return
            if type(s) is LRecv:  # and for a plain receive or a loop's, without its call
                thread.want = ("recv", (("m", s.msg, top.path),))
                return
            if type(s) is LLoop:
                thread.want = ("recv", (("c", s.choice, top.path + (top.next_k,)),))
                return
            if type(s) is LPar:
                top.pc += 1
                thread.joining = len(s.threads)
                thread.want = None
                for block in s.threads:
                    self._spawn(Thread([Frame(block, top.path)], thread))
                return
            if type(s) is LAtomic:  # entered silently: the first event fired in it claims it
                top.pc += 1
                frames.append(AtomicFrame(s.body, top.path, s.where))
                continue
            thread.want = wants(s, top)
            return
        self.threads.remove(thread)
        parent = thread.parent
        if parent is not None:
            parent.joining -= 1
            if parent.joining == 0:
                self._settle(parent)

    # ------------------------------------------------------------ reporting

    def waiting(self) -> list[str]:
        """What each waiting thread waits for, at its source line (for a deadlock report)."""
        found = []
        for thread in self.threads:
            if self.holder is not None and not within(thread, self.holder[0]) \
                    and thread.want is not None:
                found.append(f"{self.name} waits for another thread to leave c.atomic("
                             f"{self.name}) ({self.holder[1].where})")
            elif thread.want is not None and thread.want[0] == "recv":
                top = thread.frames[-1]
                found.append(f"{self.name} {waiting_at(top.block[top.pc])}")
        return found
