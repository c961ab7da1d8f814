"""Projection: the global choreography → one local program per lifeline.

A lifeline's program keeps the statements it takes part in.  Decisions are
where it gets interesting: only the owner can evaluate a guard, so every
other lifeline whose behaviour *differs* between the branches (its projected
blocks are not equal, :mod:`choreo.analysis.local`) must learn the outcome.  The rule,
per ``if``:

1. a differing lifeline learns **by message** when, in both branches, its
   first statement is a receive from a lifeline that already knows (the
   owner, or one that learned) — the message that arrives says which branch
   was taken, so no control message is needed (this is the transitive case:
   the owner tells Y, Y's first message tells X);
2. every other differing lifeline is told **by the owner**: a control message
   right after the choice event, before the branch runs.  To keep this set
   small, lifelines that cannot learn by message (a branch starts with a send
   or an action, or is empty) are told first; whoever can then learn by
   message from them does.

For a ``while``, every lifeline with a part in the body is told each round
by a control message from the owner (continue or exit): a lifeline cannot
see the exit by a message that never comes.

A ``c.atomic(L)`` block is an ``LAtomic`` in L's program only; the other
lifelines' statements in it project as if it were not there.  A branch of L
that starts with one does not start with a receive, so L is told by control.

The ``control`` policy of the choreography (or ``tell=`` of one statement)
changes step 2: ``"broadcast"`` / ``tell="all"`` tells every other lifeline,
``"none"`` tells nobody, ``tell=[...]`` exactly those.  A differing lifeline
that then neither is told nor learns by message is *uninformed*: its local
program cannot be built (``via="unknown"``) and validation reports a
knowledge-of-choice error.
"""

from __future__ import annotations

import attrs

from choreo.authoring import Act, Atomic, If, Parallel, Send, While
from .local import LAct, LAtomic, LBranch, LChoose, LLoop, LocalProgram, LPar, LRecv, LSend, LWhile


@attrs.frozen
class Decision:
    """Who learns one ``if``/``while`` outcome, and how."""

    choice: int
    kind: str  # "if" | "while"
    owner: str
    label: str
    differing: tuple[str, ...]  # lifelines whose behaviour depends on the outcome
    told: tuple[str, ...]  # told by a control message from the owner
    learners: tuple[str, ...]  # learn from the first message of the branch
    uninformed: tuple[str, ...]  # differ, but never learn: knowledge-of-choice errors
    statement: object = attrs.field(eq=False, repr=False)


@attrs.frozen
class Projection:
    name: str
    lifelines: tuple[str, ...]
    programs: dict = attrs.field(eq=False)  # lifeline -> LocalProgram
    decisions: tuple[Decision, ...]

    def program(self, lifeline: str) -> LocalProgram:
        return self.programs[lifeline]


def project(choreography) -> Projection:
    """Project every lifeline (the choreography's problems should be empty)."""
    projector = _Projector(choreography.lifeline_names, choreography.control)
    body = choreography.body
    programs = {name: LocalProgram(name, projector.block(name, body))
                for name in choreography.lifeline_names}
    decisions = tuple(sorted(projector.decisions.values(), key=lambda d: d.choice))
    return Projection(choreography.name, tuple(choreography.lifeline_names), programs, decisions)


class _Projector:
    def __init__(self, lifelines, policy: str):
        self.lifelines = tuple(lifelines)
        self.policy = policy
        self.cache: dict = {}
        self.decisions: dict[int, Decision] = {}

    def block(self, lifeline: str, statements) -> tuple:
        out: list = []
        for statement in statements:
            out.extend(self.statement(lifeline, statement))
        return tuple(out)

    def statement(self, lifeline: str, s) -> tuple:
        key = (lifeline, s.id)
        if key not in self.cache:
            self.cache[key] = self._statement(lifeline, s)
        return self.cache[key]

    def _statement(self, me: str, s) -> tuple:
        if isinstance(s, Send):
            if me == s.sender:
                return (LSend(s.id, s.receiver, s.vars, s.into, s.label, s.where),)
            if me == s.receiver:
                return (LRecv(s.id, s.sender, s.vars, s.into, s.label, s.where),)
            return ()
        if isinstance(s, Act):
            if me != s.lifeline:
                return ()
            return (LAct(s.fn, s.assigns, s.reads, s.label, s.values, s.where),)
        if isinstance(s, If):
            return self._if(me, s)
        if isinstance(s, While):
            return self._while(me, s)
        if isinstance(s, Parallel):
            threads = tuple(t for t in (self.block(me, t) for t in s.threads) if t)
            if len(threads) > 1:
                return (LPar(s.id, threads, s.where),)
            return threads[0] if threads else ()
        if isinstance(s, Atomic):  # transparent for the lifelines it does not serialize
            body = self.block(me, s.body)
            return (LAtomic(s.id, body, s.where),) if me == s.lifeline and body else body
        raise TypeError(f"not a choreography statement: {s!r}")

    # ------------------------------------------------------------------ if

    def _if(self, me: str, s: If) -> tuple:
        decision = self.decide_if(s)
        then, else_ = self.block(me, s.then), self.block(me, s.else_)
        if me == s.owner:
            return (LChoose(s.id, s.guard, s.label, decision.told, then, else_, s.where),)
        for via, group in (("control", decision.told), ("message", decision.learners),
                           ("unknown", decision.uninformed)):
            if me in group:
                return (LBranch(s.id, s.owner, via, s.label, then, else_, s.where),)
        return then  # same behaviour either way (equal to else_)

    def decide_if(self, s: If) -> Decision:
        if s.id in self.decisions:
            return self.decisions[s.id]
        others = [n for n in self.lifelines if n != s.owner]
        branches = {n: (self.block(n, s.then), self.block(n, s.else_)) for n in others}
        differing = [n for n in others if branches[n][0] != branches[n][1]]
        policy = self.policy if s.tell is None else s.tell
        if policy == "minimal":
            told = self._minimal(s.owner, differing, branches)
        else:
            told = self._told(policy, others)
        learners = self._learners({s.owner, *told}, differing, branches)
        uninformed = [n for n in differing if n not in told and n not in learners]
        decision = Decision(s.id, "if", s.owner, s.label, tuple(differing), tuple(told),
                            tuple(learners), tuple(uninformed), s)
        self.decisions[s.id] = decision
        return decision

    def _told(self, policy, others) -> list[str]:
        if policy in ("broadcast", "all"):
            return list(others)
        if policy == "none":
            return []
        return [n for n in others if n in policy]  # an explicit tell=[...], in lifeline order

    def _minimal(self, owner: str, differing, branches) -> list[str]:
        told: list[str] = []
        while True:
            known = {owner, *told}
            learners = self._learners(known, differing, branches)
            rest = [n for n in differing if n not in known and n not in learners]
            if not rest:
                return [n for n in self.lifelines if n in told]
            hard = [n for n in rest if not _starts_with_receives(branches[n])]
            told.extend(hard or rest[:1])

    @staticmethod
    def _learners(known: set, differing, branches) -> list[str]:
        """Who learns from a branch's first message, sent by someone who knows (a fixpoint)."""
        known = set(known)
        learners: list[str] = []
        changed = True
        while changed:
            changed = False
            for name in differing:
                if name in known:
                    continue
                then, else_ = branches[name]
                if _starts_with_receives((then, else_)) and then[0].frm in known \
                        and else_[0].frm in known:
                    known.add(name)
                    learners.append(name)
                    changed = True
        return learners

    # --------------------------------------------------------------- while

    def _while(self, me: str, s: While) -> tuple:
        decision = self.decide_while(s)
        body = self.block(me, s.body)
        if me == s.owner:
            return (LWhile(s.id, s.guard, s.label, decision.told, body, s.where),)
        if me in decision.told:
            return (LLoop(s.id, s.owner, "control", s.label, body, s.where),)
        if me in decision.uninformed:
            return (LLoop(s.id, s.owner, "unknown", s.label, body, s.where),)
        return ()

    def decide_while(self, s: While) -> Decision:
        if s.id in self.decisions:
            return self.decisions[s.id]
        others = [n for n in self.lifelines if n != s.owner]
        differing = [n for n in others if self.block(n, s.body)]
        policy = self.policy if s.tell is None else s.tell
        told = differing if policy == "minimal" else self._told(policy, others)
        uninformed = [n for n in differing if n not in told]
        decision = Decision(s.id, "while", s.owner, s.label, tuple(differing), tuple(told), (),
                            tuple(uninformed), s)
        self.decisions[s.id] = decision
        return decision


def _starts_with_receives(branches) -> bool:
    then, else_ = branches
    return bool(then) and bool(else_) and isinstance(then[0], LRecv) \
        and isinstance(else_[0], LRecv)
