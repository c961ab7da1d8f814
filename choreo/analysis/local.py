"""Local programs: what one lifeline runs, as frozen statements.

Projection (:mod:`choreo.analysis.project`) turns the global choreography into one
``LocalProgram`` per lifeline.  The statements are made to be interpreted
step by step: a running lifeline is a set of *continuations* (one per
thread of an ``LPar``, sharing the lifeline's store and monitor), each a
stack of (block, position) frames.  Every statement is at most one event
except the decisions: ``LChoose``/``LWhile`` are a choice event followed by
one control send per lifeline in ``tell``, ``LBranch``/``LLoop`` start with
the receive that tells them the outcome.

Messages are named by the global statement id (``msg`` for data, ``choice``
for control) plus, at run time, the iteration numbers of the enclosing
loops — so a receive takes exactly its own message even when delivery is
not FIFO.  Equality ignores source positions but not message names: two
blocks are "the same behaviour" iff they do the same actions and exchange
the same messages; that is what the knowledge-of-choice analysis compares.
"""

from __future__ import annotations

from typing import Any, Callable, Union

import attrs

from choreo.authoring import Where, Guard


def _where():
    return attrs.field(default=None, eq=False, repr=False)


@attrs.frozen
class LSend:
    msg: int
    to: str
    vars: tuple[str, ...]
    into: tuple[str, ...]  # the receiver's names for them
    label: str
    where: Where = _where()


@attrs.frozen
class LRecv:
    msg: int
    frm: str
    vars: tuple[str, ...]  # the sender's names
    into: tuple[str, ...]  # assigned here
    label: str
    where: Where = _where()


@attrs.frozen
class LAct:
    """``fn(variables, rng)`` assigning ``assigns``, or the constants ``values``."""

    fn: Callable | None
    assigns: tuple[str, ...]
    reads: tuple[str, ...]
    label: str
    values: tuple[tuple[str, Any], ...] = ()
    where: Where = _where()


@attrs.frozen
class LChoose:
    """The owner's side of an if: a choice event, then tell each of ``tell`` the outcome."""

    choice: int
    guard: Guard
    label: str
    tell: tuple[str, ...]
    then: tuple
    else_: tuple
    where: Where = _where()


@attrs.frozen
class LBranch:
    """Another lifeline's side of an if.

    ``via`` is ``"control"`` (a control message from ``owner`` says which
    branch), ``"message"`` (both branches start with a receive from a
    lifeline that already knows; whichever message comes first decides) or
    ``"unknown"`` (the lifeline is never told: a knowledge-of-choice error).
    """

    choice: int
    owner: str
    via: str
    label: str
    then: tuple
    else_: tuple
    where: Where = _where()


@attrs.frozen
class LWhile:
    """The owner's side of a while: before every round a choice event and the tells."""

    choice: int
    guard: Guard
    label: str
    tell: tuple[str, ...]
    body: tuple
    where: Where = _where()


@attrs.frozen
class LLoop:
    """Another lifeline's side of a while: each round starts with a control receive."""

    choice: int
    owner: str
    via: str  # "control" or "unknown"
    label: str
    body: tuple
    where: Where = _where()


@attrs.frozen
class LPar:
    """Threads of this lifeline that run concurrently; the statement ends when all have."""

    id: int
    threads: tuple[tuple, ...]
    where: Where = _where()


@attrs.frozen
class LAtomic:
    """This lifeline's part of a ``c.atomic`` block: once one of its events has fired,
    no other thread of the lifeline fires one until this thread has left ``body``."""

    id: int
    body: tuple
    where: Where = _where()


Local = Union[LSend, LRecv, LAct, LChoose, LBranch, LWhile, LLoop, LPar, LAtomic]


@attrs.frozen
class LocalProgram:
    lifeline: str
    body: tuple


def nested(statement) -> tuple[tuple, ...]:
    if isinstance(statement, (LChoose, LBranch)):
        return (statement.then, statement.else_)
    if isinstance(statement, (LWhile, LLoop, LAtomic)):
        return (statement.body,)
    if isinstance(statement, LPar):
        return statement.threads
    return ()


def walk(block):
    for statement in block:
        yield statement
        for inner in nested(statement):
            yield from walk(inner)


def expected_messages(program) -> dict:
    """``(kind, id) -> (sender, names)``: every message ``program``'s lifeline may receive,
    who sends it and which variables it assigns — what a transport lets through."""
    found = {}
    for s in walk(program.body):
        if isinstance(s, LRecv):
            found[("m", s.msg)] = (s.frm, s.into)
        elif isinstance(s, (LBranch, LLoop)) and s.via == "control":
            found[("c", s.choice)] = (s.owner, ())
    return found


def recipients(program) -> set[str]:
    """Every lifeline ``program``'s lifeline may send to (data and control messages)."""
    found = set()
    for s in walk(program.body):
        if isinstance(s, LSend):
            found.add(s.to)
        elif isinstance(s, (LChoose, LWhile)):
            found.update(s.tell)
    return found
