"""The global choreography as frozen values: declarations and statements.

The DSL (:mod:`choreo.authoring.dsl`) builds these; projection, validation and the
simulator only read them.  Every statement has a number ``id`` unique in its
choreography — it names the statement's message or decision at run time,
so two statements that look alike are still told apart — and the ``where``
it was written.
"""

from __future__ import annotations

from typing import Any, Callable, Union

import attrs

import cpl
from .errors import Where

# ------------------------------------------------------------ declarations


@attrs.frozen
class Lifeline:
    """A participant (usually an agent).  Statements accept it or its name."""

    name: str

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class SymbolSet:
    """An enumerated type; its members are CPL symbols (``status != failed``)."""

    name: str
    members: tuple[str, ...]

    def __contains__(self, value) -> bool:
        return value in self.members

    def __getattr__(self, member: str) -> str:
        if member in self.members:
            return member
        raise AttributeError(f"symbol set {self.name!r} has no member {member!r}")


Type = Union[type, SymbolSet]
TYPES = (int, float, str, bool, object)


@attrs.frozen
class Var:
    """A declared variable.  Each lifeline has its own copy in its store."""

    name: str
    type: Any
    init: tuple[tuple[str, Any], ...] = ()  # (lifeline or "*" for all, initial value)
    where: Where = attrs.field(default=None, eq=False, repr=False)

    def __str__(self) -> str:
        return self.name


@attrs.frozen
class Input:
    """A run parameter (``--arg name=value``): set from the start at ``at``."""

    name: str
    type: Any
    default: Any
    required: bool
    at: tuple[str, ...]  # the lifelines whose initial store holds it
    where: Where = attrs.field(default=None, eq=False, repr=False)

    def __str__(self) -> str:
        return self.name


def type_name(kind) -> str:
    if isinstance(kind, SymbolSet):
        return f"{kind.name} {{{', '.join(kind.members)}}}"
    return "any" if kind is object else kind.__name__


def conforms(value, kind) -> bool:
    """Does a value fit a declared type (booleans are not numbers)."""
    if isinstance(kind, SymbolSet):
        return isinstance(value, str) and value in kind.members
    if kind is object:
        return True
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


# ------------------------------------------------------------- statements


@attrs.frozen
class Guard:
    """A decision's guard as written, and as checked against the declarations."""

    text: str
    checked: cpl.CheckedGuard | None  # None: it did not check (an error was recorded)

    @property
    def canonical(self) -> str:
        return self.checked.canonical if self.checked else self.text

    @property
    def constant(self) -> bool | None:
        """``True``/``False`` for a guard that is literally ``true``/``false``."""
        if self.checked is not None and isinstance(self.checked.formula, cpl.ast.Bool):
            return self.checked.formula.value
        return None


@attrs.frozen
class Send:
    """``sender`` sends its ``vars``; the receive assigns them to ``into`` at ``receiver``."""

    id: int
    sender: str
    receiver: str
    vars: tuple[str, ...]
    into: tuple[str, ...]  # receiver-side names, parallel to vars (usually equal)
    label: str | None
    where: Where = attrs.field(eq=False)


@attrs.frozen
class Act:
    """A local action: ``fn(variables, rng)``; its value is assigned to ``assigns``.

    ``values`` instead of ``fn``: constants to assign (``c.set``).
    """

    id: int
    lifeline: str
    fn: Callable | None
    assigns: tuple[str, ...]
    reads: tuple[str, ...]
    label: str
    values: tuple[tuple[str, Any], ...] = ()
    where: Where = attrs.field(default=None, eq=False)


@attrs.frozen
class If:
    id: int
    owner: str
    guard: Guard
    then: tuple
    else_: tuple
    label: str
    tell: tuple[str, ...] | str | None  # None: the choreography's policy; "all"; or names
    where: Where = attrs.field(eq=False)
    else_where: Where | None = attrs.field(default=None, eq=False)


@attrs.frozen
class While:
    id: int
    owner: str
    guard: Guard
    body: tuple
    label: str
    tell: tuple[str, ...] | str | None
    where: Where = attrs.field(eq=False)


@attrs.frozen
class Parallel:
    """Threads that run concurrently; a lifeline may appear in several."""

    id: int
    threads: tuple[tuple, ...]
    where: Where = attrs.field(eq=False)
    thread_wheres: tuple[Where, ...] = attrs.field(default=(), eq=False)


@attrs.frozen
class Atomic:
    """``lifeline`` serves its events in ``body`` without another thread's in between.

    A shared store's owner-side guard and the write it protects must not be
    separated by another request: the first event of ``lifeline`` fired in the
    block claims it (arrival order), and the lifeline's other threads wait
    until this one leaves it.  Other lifelines' statements in it are unconstrained.
    """

    id: int
    lifeline: str
    body: tuple
    where: Where = attrs.field(eq=False)


Statement = Union[Send, Act, If, While, Parallel, Atomic]


def blocks(statement) -> tuple[tuple, ...]:
    """The nested blocks of a compound statement."""
    if isinstance(statement, If):
        return (statement.then, statement.else_)
    if isinstance(statement, (While, Atomic)):
        return (statement.body,)
    if isinstance(statement, Parallel):
        return statement.threads
    return ()


def walk(block):
    """Every statement in ``block``, nested ones included, parents first."""
    for statement in block:
        yield statement
        for inner in blocks(statement):
            yield from walk(inner)


def participants(statement) -> frozenset[str]:
    """The lifelines that have an event in the statement (decisions included)."""
    if isinstance(statement, Send):
        return frozenset((statement.sender, statement.receiver))
    if isinstance(statement, Act):
        return frozenset((statement.lifeline,))
    found = {statement.owner} if isinstance(statement, (If, While)) else set()
    for block in blocks(statement):
        for inner in block:
            found |= participants(inner)
    return frozenset(found)
