"""A lifeline's threads as data: stacks of frames, and what each thread waits for next.

A ``Thread`` is a continuation of one lifeline's local program: a stack of
``Frame`` (block, position ``pc``, loop ``path``, the next iteration number
``next_k``), its ``parent`` (the thread that forked it in an ``LPar`` and
waits, ``joining`` its children) and ``want``, the next event it can take —
:func:`wants` computes it from the statement at the top.  An ``AtomicFrame``
marks the body of a ``c.atomic`` block; :func:`claimant` and :func:`within`
say which thread holds one.  The Runner (:mod:`choreo.execution.runner`) moves them;
this module only says what they are.  Plain slotted classes, not attrs: a
step builds and changes several (bench/simulate_runs.py).
"""

from __future__ import annotations

import attrs

from choreo.analysis import LAct, LBranch, LChoose, LLoop, LRecv, LSend, LWhile


@attrs.frozen
class Tell:
    """A control send, queued right after a choice: the owner tells ``to`` the outcome."""

    choice: int
    to: str
    outcome: bool
    label: str


class Frame:
    __slots__ = ("block", "pc", "path", "next_k")

    def __init__(self, block, path: tuple, pc: int = 0):
        self.block, self.path, self.pc, self.next_k = block, path, pc, 0


class AtomicFrame(Frame):
    """The body of an ``LAtomic``: the thread is inside the block while this is on its stack."""

    __slots__ = ("where",)

    def __init__(self, block, path: tuple, where):
        super().__init__(block, path)
        self.where = where


class Thread:
    __slots__ = ("frames", "parent", "joining", "want")

    def __init__(self, frames, parent=None):
        self.frames, self.parent, self.joining, self.want = frames, parent, 0, None


def claimant(thread: Thread) -> tuple | None:
    """(thread, frame): the innermost atomic block ``thread`` is in, its own or an ancestor's."""
    while thread is not None:
        for frame in reversed(thread.frames):
            if type(frame) is AtomicFrame:
                return thread, frame
        thread = thread.parent
    return None


def within(thread: Thread, holder: Thread) -> bool:
    """``thread`` is the holder or one of the threads it forked inside its block."""
    while thread is not None and thread is not holder:
        thread = thread.parent
    return thread is not None


# The statements whose next event is the statement itself (no message key): what the
# Runner reads without calling ``wants`` on its hot path (bench/runner_steps.py).
FIXED_WANTS = {LAct: "act", LSend: "send", Tell: "tell", LChoose: "choice", LWhile: "choice"}


def wants(s, top: Frame) -> tuple:
    """The event a thread at statement ``s`` (in frame ``top``) takes next: ``("act"|"send"|
    "tell"|"choice", s)``, or ``("recv", keys)``, the message keys it accepts."""
    kind = type(s)  # the statement classes are final: ``is`` is cheaper than isinstance
    fixed = FIXED_WANTS.get(kind)
    if fixed is not None:
        return (fixed, s)
    if kind is LRecv:
        return ("recv", (("m", s.msg, top.path),))
    if kind is LBranch:
        if s.via == "message":
            return ("recv", (("m", s.then[0].msg, top.path), ("m", s.else_[0].msg, top.path)))
        return ("recv", (("c", s.choice, top.path),))
    return ("recv", (("c", s.choice, top.path + (top.next_k,)),))  # LLoop


def waiting_at(s) -> str:
    """What a thread stuck at statement ``s`` waits for, at its source line (deadlocks)."""
    where = f" ({s.where})" if s.where else ""
    if isinstance(s, LRecv):
        return f"waits for {s.label!r} from {s.frm}{where}"
    if isinstance(s, (LBranch, LLoop)):
        if getattr(s, "via", "") == "message":
            return f"waits for {s.then[0].label!r} or {s.else_[0].label!r}{where}"
        return f"waits for the outcome of {s.label!r} from {s.owner}{where}"
    return f"is stuck at {s!r}"
