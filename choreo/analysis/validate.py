"""``cpl validate``: everything that can be known about a choreography before running it.

1. names and guards — recorded while the choreography was written (``c.problems``);
2. knowledge of choice — from projection: a lifeline that behaves differently
   in the branches of a decision but is never told the outcome;
3. reads before any write — a message, action or guard reading a variable
   that no path can have assigned at that lifeline (a *may* analysis: loops
   and parallel threads are iterated to a fixpoint, branches joined);
4. guards that cannot see what they read — ``@B`` where no message chain
   from B can reach the owner before the decision, and owners that take no
   other part in the choreography;
5. unreachable code — after a ``while`` whose guard is ``true``, or a branch
   that a constant guard never takes;
6. races — a variable one thread of a lifeline writes while a concurrent
   thread of the same lifeline reads or writes it, unless ``c.atomic`` blocks
   serialize both — and atomic blocks that serialize nothing or are nested
   (:mod:`choreo.analysis.races`).

Global program order is an over-approximation of every lifeline's causal
past, so the analyses never reject a read that some run could satisfy.
"""

from __future__ import annotations

import attrs

from cpl.lang import references
from choreo.authoring import (
    Act, Atomic, ChoreographyError, If, Parallel, Send, While, blocks, participants, type_name,
    walk,
)
from .project import Decision, Projection, project
from .show import _statement
from .races import atomic_errors, thread_races


@attrs.frozen
class Report:
    choreography: object = attrs.field(repr=False)
    errors: tuple[ChoreographyError, ...]
    projection: Projection | None

    @property
    def ok(self) -> bool:
        return not self.errors

    def render_errors(self) -> str:
        return "\n".join(error.render() for error in self.errors)

    def summary(self) -> str:
        c = self.choreography
        statements = sum(1 for _ in walk(c.body))
        lines = [f"{c.name}: valid — {len(c.lifeline_names)} lifelines "
                 f"({', '.join(c.lifeline_names)}), {statements} statements, "
                 f"control: {c.control}"]
        lines.append("inputs:" if c.inputs else "inputs: (none)")
        for i in c.inputs.values():
            value = "required" if i.required else f"= {i.default!r}"
            lines.append(f"  {i.name}: {type_name(i.type)} {value}  (at {', '.join(i.at)})")
        if self.projection and self.projection.decisions:
            lines.append("decisions:")
        for d in self.projection.decisions if self.projection else ():
            how = [f"tells {', '.join(d.told)}"] if d.told else []
            if d.learners:
                how.append(f"{', '.join(d.learners)} learn(s) from the first message")
            lines.append(f"  {d.label!r} ({d.kind} at {d.owner}, line {d.statement.where.line}): "
                         + ("; ".join(how) or "nobody else depends on it"))
        return "\n".join(lines)


def validate(choreography) -> Report:
    body = choreography.body
    if choreography.problems:
        return Report(choreography, tuple(_sorted(choreography.problems)), None)
    projection = project(choreography)
    errors = [e for d in projection.decisions for e in _knowledge_errors(d, projection)]
    flow = _Flow(choreography, {d.choice: d for d in projection.decisions})
    flow.block(body, flow.initial(), True)
    errors += flow.errors
    errors += _unreachable(body)
    errors += thread_races(body, _reads)
    errors += atomic_errors(body)
    return Report(choreography, tuple(_sorted(errors)), projection)


def _sorted(errors):
    return sorted(errors, key=lambda e: (e.where.path, e.where.line))


# ------------------------------------------------------------ knowledge of choice


def _first(block) -> str:
    return _statement(block[0], 0)[0].strip() if block else "(nothing)"


def _knowledge_errors(d: Decision, projection: Projection):
    s = d.statement
    for name in d.uninformed:
        local = _find(projection.program(name).body, d.choice)
        fix = (f"  fix: add {name} to tell=[...] of this {d.kind}_ (or use "
               f"control=\"minimal\", which tells every lifeline that needs it)")
        if d.kind == "if":
            message = (f"knowledge of choice: {name} behaves differently in the branches of "
                       f"{d.label!r} (decided by {d.owner}) but is never told which was taken")
            detail = f"  then: {_first(local.then)}\n  else: {_first(local.else_)}\n{fix}"
        else:
            message = (f"knowledge of choice: {name} takes part in the loop {d.label!r} "
                       f"(decided by {d.owner}) but is never told whether another round "
                       "starts or the loop has ended")
            detail = f"  in the loop: {_first(local.body)}\n{fix}"
        yield ChoreographyError(message, s.where, detail, "knowledge-of-choice")


def _find(block, choice: int):
    from .local import walk
    for statement in walk(block):
        if getattr(statement, "choice", None) == choice:
            return statement
    raise LookupError(choice)


# ------------------------------------------------------------------ data flow


class _Flow:
    """May-analysis over (variables possibly set, lifelines possibly heard of) per lifeline."""

    def __init__(self, choreography, decisions: dict[int, Decision]):
        self.c = choreography
        self.decisions = decisions
        self.errors: list[ChoreographyError] = []
        self.involved = {n for s in walk(choreography.body) if isinstance(s, (Send, Act))
                         for n in participants(s)}
        self.reported: set = set()

    def initial(self) -> dict:
        sets = {n: set() for n in self.c.lifeline_names}
        for declared in self.c.inputs.values():
            for name in declared.at:
                sets[name].add(declared.name)
        for declared in self.c.variables.values():
            for place, _ in declared.init:
                for name in (self.c.lifeline_names if place == "*" else [place]):
                    sets[name].add(declared.name)
        return {n: (frozenset(sets[n]), frozenset()) for n in self.c.lifeline_names}

    def block(self, statements, state: dict, report: bool) -> dict:
        for statement in statements:
            state = self.statement(statement, state, report)
        return state

    def statement(self, s, state: dict, report: bool) -> dict:
        if isinstance(s, Send):
            for x in s.vars:
                if report and x not in state[s.sender][0]:
                    self.error(s, f"message {s.label!r} from {s.sender} to {s.receiver} carries "
                               f"{x}, which {s.sender} cannot have set here", x, s.sender)
            return _learn(state, s.receiver, s.sender, s.into)
        if isinstance(s, Act):
            for x in s.reads:
                if report and x not in state[s.lifeline][0]:
                    self.error(s, f"action {s.label!r} at {s.lifeline} reads {x}, which "
                               f"{s.lifeline} cannot have set here", x, s.lifeline)
            sets, heard = state[s.lifeline]
            return {**state, s.lifeline: (sets | set(s.assigns), heard)}
        if isinstance(s, If):
            if report:
                self.guard(s, state)
            told = self._told(s, state)
            return _join(self.block(s.then, told, report), self.block(s.else_, told, report))
        if isinstance(s, While):
            entry = state
            while True:
                new = _join(entry, self.block(s.body, self._told(s, entry), False))
                if new == entry:
                    break
                entry = new
            if report:
                self.guard(s, entry)
                self.block(s.body, self._told(s, entry), True)
            return self._told(s, entry)
        if isinstance(s, Parallel):
            entry = state
            while True:
                new = entry
                for thread in s.threads:
                    new = _join(new, self.block(thread, entry, False))
                if new == entry:
                    break
                entry = new
            if report:
                for thread in s.threads:
                    self.block(thread, entry, True)
            return entry
        if isinstance(s, Atomic):
            return self.block(s.body, state, report)
        raise TypeError(f"not a choreography statement: {s!r}")

    def _told(self, s, state: dict) -> dict:
        for name in self.decisions[s.id].told:
            state = _learn(state, name, s.owner, ())
        return state

    def error(self, s, message: str, x: str, at: str) -> None:
        fix = (f"  fix: assign {x} at {at} before this (c.act, c.set or a message to {at}), "
               f"or declare it with init= or as an input held by {at}")
        self.errors.append(ChoreographyError(message, s.where, fix, "read-before-set"))

    def guard(self, s, state: dict) -> None:
        if s.guard.checked is None:
            return
        owner, label = s.owner, s.label
        if owner not in self.involved:
            self.errors.append(ChoreographyError(
                f"the owner of {label!r}, {owner}, is not involved: it never acts, sends or "
                "receives, so its guard sees nothing but its initial store", s.where,
                "  fix: let a lifeline that takes part decide (at=...), or send "
                f"{owner} what the guard needs", "owner-not-involved"))
            return
        for place, x in _reads(s.guard.checked.formula, owner):
            if place != owner and place not in state[owner][1]:
                if (s.id, place) not in self.reported:
                    self.reported.add((s.id, place))
                    self.errors.append(ChoreographyError(
                        f"the guard of {label!r} reads {place}, but no message chain from "
                        f"{place} can reach {owner} before this decision: what it reads of "
                        f"{place} is always false here", s.where,
                        f"  fix: send something from {place} to {owner} (directly or through "
                        "others) before the decision, or do not read it", "not-visible"))
            elif x is not None and x not in state[place][0]:
                where = "" if place == owner else f" at {place}"
                self.errors.append(ChoreographyError(
                    f"the guard of {label!r} reads {x}{where}, which {place} cannot have set "
                    "before this decision", s.where,
                    f"  fix: assign {x} at {place} before the decision, or declare it with "
                    "init= or as an input", "read-before-set"))


def _learn(state: dict, receiver: str, sender: str, variables) -> dict:
    sets, heard = state[receiver]
    return {**state, receiver: (sets | set(variables), heard | state[sender][1] | {sender})}


def _join(a: dict, b: dict) -> dict:
    return {n: (a[n][0] | b[n][0], a[n][1] | b[n][1]) for n in a}


def _reads(formula, owner: str):
    """(lifeline, variable or None) pairs a guard reads; ``P φ`` bodies are not followed."""
    found: dict = {}
    for r in references(formula, owner, follow_past=False):
        if r.kind == "remote":
            found.setdefault((r.lifeline, None), None)
        found.setdefault((r.lifeline, r.variable), None)
    return list(found)


# ---------------------------------------------------------------- unreachable


def _never_ends(s) -> bool:
    if isinstance(s, While):
        return s.guard.constant is True
    if isinstance(s, If):
        constant = s.guard.constant
        ends = [not _block_never_ends(b) for b in
                ((s.then,) if constant is True else (s.else_,) if constant is False
                 else (s.then, s.else_))]
        return not any(ends)
    if isinstance(s, Parallel):
        return any(_block_never_ends(t) for t in s.threads)
    if isinstance(s, Atomic):
        return _block_never_ends(s.body)
    return False


def _block_never_ends(block) -> bool:
    return any(_never_ends(s) for s in block)


def _unreachable(block) -> list[ChoreographyError]:
    errors = []
    for index, s in enumerate(block):
        if _never_ends(s) and index + 1 < len(block):
            kind = "while" if isinstance(s, While) else "block"
            errors.append(ChoreographyError(
                f"unreachable: this comes after the {kind} at line {s.where.line}, "
                "which never ends" + (" (its guard is true)" if kind == "while" else ""),
                block[index + 1].where, "  fix: remove it, or give the loop a guard that can "
                "become false", "unreachable"))
            break
    for s in block:
        constant = s.guard.constant if isinstance(s, (If, While)) else None
        if isinstance(s, If) and constant is True and s.else_:
            errors.append(_dead(s.else_where or s.else_[0].where, "else-branch", s, "true"))
        if isinstance(s, If) and constant is False and s.then:
            errors.append(_dead(s.then[0].where, "then-branch", s, "false"))
        if isinstance(s, While) and constant is False and s.body:
            errors.append(_dead(s.body[0].where, "loop body", s, "false"))
        for inner in blocks(s):
            errors += _unreachable(inner)
    return errors


def _dead(where, what: str, s, value: str) -> ChoreographyError:
    return ChoreographyError(f"unreachable: the {what} of {s.label!r} (line {s.where.line}) "
                             f"never runs: its guard is {value}", where,
                             "  fix: remove the dead code or the constant guard", "unreachable")
