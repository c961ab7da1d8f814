"""One agent of a system: its monitor, its events, and the tokens it sends and takes.

An ``Agent`` is to an application's own agent what ``choreo.execution.runner.Runner``
is to a choreography's lifeline: it counts the events, feeds them to the
lifeline's monitor and records them.  The application says when an event
happens (``act``, ``send``, ``receive``, ``decide``); the agent checks
everything first, so a misuse or a refused token leaves the monitor, the
counters and the log as they were; an event its log cannot take (``LogFailed``:
a full disk, a file size limit) is refused the same way, its line written
before anything of it is counted.  One lock per agent makes the calls safe
from several threads and from asyncio tasks (no call blocks on anything but
its own log write).
"""

from __future__ import annotations

import threading

import attrs

from ..monitor import Metadata, Monitor
from .errors import LiveError, LogFailed, NotOwner, TokenRefused, UnknownLifeline
from .keys import PROOF_BYTES
from .log import AgentLog
from .refusals import Refusals, refusal_label
from .token import MAX_TOKEN, Token, sign

REPLAY_WINDOW = 4096  # messages per sender remembered above the highest contiguous one


class Agent:
    """Made by ``System.agent(name)``; a context manager that closes its log."""

    def __init__(self, system, lifeline: str, *, log: str | None = None, fsync: bool = False,
                 overwrite: bool = False):
        if not system.has(lifeline):
            raise UnknownLifeline(lifeline, system.lifelines)
        self.system = system
        self.lifeline = lifeline
        self.monitor = Monitor(system.program, lifeline, system.init.get(lifeline, {}))
        self.taken = 0  # events so far: the next is f"{lifeline}.{taken + 1}"
        self.sent = 0  # messages so far: the next is f"{lifeline}:{sent + 1}"
        self.last: tuple[str, str | None] = ("nothing", None)  # the latest kind and label
        self.seen = {name: 0 for name in system.program.carried}  # frontier: B -> B-events seen
        self._received: dict[str, tuple[int, set]] = {}  # sender -> (floor, seqs above it)
        self._lock = threading.Lock()
        self._ships_values = any(e.variables for e in system.program.exports)
        self._sized: list = []  # the @B.x values whose token size was last checked
        self._proofs: dict[int, tuple] = {}  # per-lifeline keys: carried position -> proof
        if system.signing is not None and not system.signing.holds(lifeline):
            raise LiveError(f"{lifeline} signs its tokens with its own key, which this "
                            f"system's KeyRing does not hold: load it with "
                            f"KeyRing.load(folder, {lifeline!r})")
        self._log = AgentLog.open(log, system, lifeline, fsync, overwrite) \
            if log is not None else None
        self._refusals = Refusals()

    # ------------------------------------------------------------------ events

    def act(self, label: str | None = None, /, **updates) -> str:
        """A local event setting ``updates``; its id."""
        self.system.check_updates(updates)
        label = _label(label)
        with self._lock:
            written = self._write("act", updates=updates, label=label)
            try:
                self.monitor.act(updates)
            except BaseException:  # a predicate that raised: the line goes too
                self._unwrite(written)
                raise
            return self._took("act", label)

    def send(self, to: str, label: str | None = None, /) -> Token:
        """A send to ``to``: the token to pass on with the message."""
        if not self.system.has(to):
            raise UnknownLifeline(to, self.system.lifelines)
        if to == self.lifeline:
            raise LiveError(f"{self.lifeline} cannot send to itself: a message goes between "
                            f"two agents (use act for a local event)")
        label = _label(label) or ""
        with self._lock:
            if self._ships_values and self.monitor.varviews != self._sized:
                self._check_size(to)
            written = self._write("send", to=to, msg=f"{self.lifeline}:{self.sent + 1}",
                                  label=label or None)
            try:
                metadata = self.monitor.send()
            except BaseException:
                self._unwrite(written)
                raise
            self.sent += 1
            token = Token(self.system.signature, self.lifeline, to, self.sent, label, metadata)
            if self.system.secret is not None:
                token = attrs.evolve(token, signature=sign(token.fields(), self.system.secret))
            elif self.system.signing is not None:
                token = self.system.signing.sign(token, self._proofs)
            self._took("send", label or None)
            return token

    def receive(self, token, /, **updates) -> str:
        """The receive of the message ``token`` came with, setting ``updates``; its id.
        ``TokenRefused`` (nothing taken) if the token may not be received here."""
        self.system.check_updates(updates)
        token = self.system.read(token)
        if token.receiver != self.lifeline:
            raise TokenRefused("misaddressed", f"sent to {token.receiver!r:.60}, not to "
                               f"{self.lifeline!r}")
        if not self.system.has(token.sender) or token.sender == self.lifeline:
            raise TokenRefused("malformed", f"from {token.sender!r:.60}, which is not another "
                               f"lifeline of this system")
        with self._lock:
            self._check_clock(token)
            self._check_fresh(token)
            written = self._write("recv", updates=updates, msg=token.msg,
                                  label=token.label or None)
            try:
                self.monitor.receive(token.metadata, updates)
            except BaseException:
                self._unwrite(written)
                raise
            self._remember(token)
            return self._took("recv", token.label or None)

    def decide(self, label: str) -> bool:
        """A choice event deciding by the guard ``label`` (which this agent must own): its
        value, recorded with the guard."""
        guard = self._owned(label)
        with self._lock:  # the value is the monitor's after the step: so step, log, or undo
            saved = None if self._log is None else self.monitor.saved()
            self.monitor.choice()
            value = self.monitor.value(guard.primitive)
            try:
                self._write("choice", label=label, guard=guard.canonical, outcome=value)
            except LogFailed:  # only a log fails, and then saved is the monitor's
                assert saved is not None
                self.monitor.restore(saved)
                raise
            self._took("choice", label)
            return value

    def holds(self, label: str) -> bool:
        """The guard's value at this agent's latest event (no event is taken)."""
        guard = self._owned(label)
        with self._lock:
            return self.monitor.value(guard.primitive)

    def explain(self, label: str):
        """Why the guard has its value at the latest event: a ``cpl.semantics.Explanation``
        (``to_text()`` prints what ``cpl explain`` prints), read from this agent's monitor."""
        from .explain import explain_now
        guard = self._owned(label)
        with self._lock:
            return explain_now(self, guard)

    def refused(self, reason: str) -> None:
        """Record that an input (a token, a request) was refused for ``reason``, without an
        event per refusal: a reason's first in a second is the act ``refused: <reason>``,
        the rest of that second one act ``refused: <reason> (<n> times)``, written at the
        next refusal after it or at ``close`` (``cpl.live.refusals``).  A log that cannot
        take it keeps the count for the next write; nothing is raised."""
        self._record(self._refusals.note(reason))

    def _record(self, counts) -> None:
        for reason, count in counts:
            try:
                self.act(refusal_label(reason, count))
            except LogFailed:
                self._refusals.put_back(reason, count)

    # ------------------------------------------------------------------ the rest

    def close(self) -> None:
        """Finish the log (it says the agent closed it); the agent takes no more events."""
        if self._log is not None:
            self._record(self._refusals.pending())
        with self._lock:
            log, self._log = self._log, None
            if log is not None:  # LogFailed if the end line finds no room: the log reads as cut
                log.close(self.taken)

    def __enter__(self) -> "Agent":
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Agent {self.lifeline!r}: {self.taken} events, {self.sent} sent>"

    def _owned(self, label: str):
        owner, guard = self.system.guard(label)
        if owner != self.lifeline:
            raise NotOwner(label, owner, self.lifeline)
        return guard

    def _write(self, kind: str, to=None, msg=None, updates=None, label=None, guard=None,
               outcome=None) -> int:
        """The next event's line, before anything of the event is taken: a log that cannot
        take it raises ``LogFailed`` with the agent as it was.  The bytes written."""
        if self._log is None:
            return 0
        data = {"id": f"{self.lifeline}.{self.taken + 1}", "lifeline": self.lifeline,
                "kind": kind}  # a trace event's fields, in its order, absent ones left out
        for name, value in (("to", to), ("msg", msg), ("set", updates or None),
                            ("label", label), ("guard", guard), ("outcome", outcome)):
            if value is not None:
                data[name] = value
        return self._log.write(data)

    def _unwrite(self, written: int) -> None:
        if written and self._log is not None:  # only a log writes
            self._log.take_back(written)

    def _took(self, kind: str, label) -> str:
        """The event logged and stepped: now counted."""
        self.taken += 1
        self.last = (kind, label)
        if self.lifeline in self.seen:
            self.seen[self.lifeline] = self.taken
        return f"{self.lifeline}.{self.taken}"

    def _check_size(self, to: str) -> None:
        """A token carries the ``@B.x`` values this agent has seen: one too large for any
        receiver is refused here, before the send is taken, not lost on the way."""
        views = self.monitor.varviews
        size = len(Metadata(tuple(self.seen.values()), (0,) * len(views),
                            tuple(map(tuple, views))).encode())
        if self.system.signing is not None:  # a proof per entry, the sender's signature
            size += PROOF_BYTES * (len(views) + 1)
        if size <= MAX_TOKEN - 1024:
            self._sized = list(views)
        else:
            raise LiveError(f"{self.lifeline} cannot send to {to}: the values guards read "
                            f"(@B.x) make its token {size:,} bytes, more than a token holds "
                            f"({MAX_TOKEN:,}); keep such variables small (an id, a hash)")

    def _check_clock(self, token: Token) -> None:
        """Nobody saw more of my events than I took; the sender's own entry counts at least
        its sends (each message is one of its events)."""
        vc, carried = token.metadata.vc, self.system.carried
        mine = carried.get(self.lifeline)
        if mine is not None and vc[mine] > self.taken:
            raise TokenRefused("clock", f"its clock claims {vc[mine]} events of "
                               f"{self.lifeline}, which has taken {self.taken}")
        theirs = carried.get(token.sender)
        if theirs is not None and vc[theirs] < token.seq:
            raise TokenRefused("clock", f"its clock gives {token.sender} {vc[theirs]} events, "
                               f"fewer than the {token.seq} messages it claims to have sent")

    def _check_fresh(self, token: Token) -> None:
        floor, above = self._received.get(token.sender, (0, ()))
        if token.seq <= floor or token.seq in above:
            raise TokenRefused("replayed", f"message {token.msg!r} was received already "
                               f"(or came after {REPLAY_WINDOW:,} later ones)")

    def _remember(self, token: Token) -> None:
        """Messages may arrive in any order: keep the highest seq below which all arrived,
        and the ones above it, at most ``REPLAY_WINDOW`` (the oldest then count as seen)."""
        floor, above = self._received.get(token.sender, (0, None))
        above = set() if above is None else above
        above.add(token.seq)
        while floor + 1 in above or len(above) > REPLAY_WINDOW:
            floor = floor + 1 if floor + 1 in above else min(above)
            above.discard(floor)
        self._received[token.sender] = (floor, above)
        seen = self.seen
        for name, position in self.system.carried.items():
            if token.metadata.vc[position] > seen[name]:
                seen[name] = token.metadata.vc[position]
                if token.proofs is not None:  # the entry the monitor took, and its proof
                    self._proofs[position] = (token.signature, token.digest) \
                        if name == token.sender else token.proofs[position]


def _label(label) -> str | None:
    if label is None or isinstance(label, str) and len(label) <= 1000:
        return label or None
    raise LiveError(f"a label is a string of at most 1,000 characters, not "
                    f"{type(label).__name__}" if not isinstance(label, str)
                    else "a label is at most 1,000 characters")
