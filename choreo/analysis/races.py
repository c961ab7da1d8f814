"""Races between concurrent threads of one lifeline, found before any run.

Threads of a ``c.parallel()`` that involve the same lifeline share its store,
and the scheduler interleaves them freely, so a variable one thread writes
while another thread of the same lifeline reads or writes it has no defined
value there: some seeds read it unset (a run failure), others read either
write.  The rule, per ``c.parallel()``, for every two of its threads T ≠ U
and every lifeline L:

* a *write* of x at L: an action at L assigning x (``c.act`` ``assigns``,
  ``c.set``), or the receive at L of a message whose ``into`` holds x;
* a *read* of x at L: a message L sends carrying x, an action at L that
  declares it reads x (``reads=`` or ``fn.reads``: undeclared reads inside
  an action's code cannot be seen), a guard owned by L reading x from its own
  store (``P φ`` bodies are not followed, as in the other guard checks);
* T writes x at L and U reads or writes x at L  →  a race, reported at the
  later access and naming the earlier one's line — except when both are
  receives: two messages delivered into one variable is the non-FIFO
  delivery CPL is made for (the last delivered wins locally; a guard reading
  ``@B.x`` sees the sender's latest value whatever the order, as
  ``examples/relay.py`` shows), and no run fails on it;
* except, too, when both accesses lie in ``c.atomic(L)`` blocks inside their
  threads: L serves those blocks one at a time, in arrival order, so an
  owner-side guard there decides against the value the other block left.
  An atomic access and a non-atomic one still race (the non-atomic thread's
  steps may be separated by a whole block).

Statements nested anywhere inside a thread (branches, loops, inner
parallels) count as that thread's; each inner ``c.parallel()`` is checked
for its own threads as well.  Different lifelines never race (each has its
own store; a message copies values), nor do statements of one thread, nor
two ``c.parallel()`` blocks one after the other.

:func:`atomic_errors` rejects the atomic blocks that cannot mean anything:
one holding no event of its lifeline (nothing to serialize), and one inside
another of the same lifeline (the outer one already serializes it).
"""

from __future__ import annotations

from typing import Callable, Iterator

import attrs

from choreo.authoring import (
    ChoreographyError, Where, Act, Atomic, If, Parallel, Send, While, blocks, participants, walk,
)


@attrs.frozen
class Access:
    """One statement touching variable ``name`` of ``lifeline``'s store."""

    lifeline: str
    name: str
    kind: str  # "read" | "receive" | "assign"
    what: str  # "action 'f' assigns", "message 'x' from A to B carries", ...
    where: Where
    serialized: bool = False  # inside a c.atomic(lifeline) block of its thread


def thread_races(body, guard_reads: Callable) -> list[ChoreographyError]:
    """Every race between concurrent threads of one lifeline in ``body`` (see the module).

    ``guard_reads(formula, owner)`` gives the (lifeline, variable or None)
    pairs a guard reads, as the other guard checks see them.
    """
    errors = []
    for statement in walk(body):
        if isinstance(statement, Parallel):
            errors += _races(statement, guard_reads)
    return errors


def _races(parallel: Parallel, guard_reads: Callable) -> list[ChoreographyError]:
    threads = [list(_accesses(thread, guard_reads)) for thread in parallel.threads]
    found: dict[tuple[str, str], ChoreographyError] = {}
    for i, mine in enumerate(threads):
        for theirs in threads[i + 1:]:
            for a in mine:
                for b in theirs:
                    key = (a.lifeline, a.name)
                    if key in found or key != (b.lifeline, b.name):
                        continue
                    kinds = {a.kind, b.kind}
                    if kinds != {"read"} and kinds != {"receive"} \
                            and not (a.serialized and b.serialized):
                        found[key] = _error(parallel, *sorted((a, b), key=_position))
    return list(found.values())


def _position(access: Access):
    return access.where.path, access.where.line


def _error(parallel: Parallel, first: Access, later: Access) -> ChoreographyError:
    return ChoreographyError(
        f"race on {later.name} at {later.lifeline}: {later.what} {later.name} while "
        f"{first.what} it (line {first.where.line}) in a concurrent thread of "
        f"{later.lifeline} (the c.parallel() at line {parallel.where.line}): "
        "which comes first is up to the scheduler",
        later.where,
        "  fix: give each thread its own variable and combine them after the "
        "c.parallel(), or put both in one thread", "thread-race")


def _accesses(block, guard_reads: Callable, held: frozenset = frozenset()) -> Iterator[Access]:
    """Every access in ``block``; ``held``: the lifelines whose atomic blocks enclose it."""
    for s in block:
        if isinstance(s, Send):
            for x in s.vars:
                yield Access(s.sender, x, "read", f"message {s.label!r} from {s.sender} to "
                             f"{s.receiver} carries", s.where, s.sender in held)
            for x in s.into:
                yield Access(s.receiver, x, "receive", f"the receive of message {s.label!r} at "
                             f"{s.receiver} assigns", s.where, s.receiver in held)
        elif isinstance(s, Act):
            what = f"{s.label!r}" if s.fn is None else f"action {s.label!r}"
            for x in s.reads:
                yield Access(s.lifeline, x, "read", f"{what} reads", s.where, s.lifeline in held)
            for x in s.assigns:
                yield Access(s.lifeline, x, "assign", f"{what} assigns", s.where,
                             s.lifeline in held)
        elif isinstance(s, (If, While)) and s.guard.checked is not None:
            for place, x in guard_reads(s.guard.checked.formula, s.owner):
                if place == s.owner and x is not None:
                    yield Access(s.owner, x, "read", f"the guard of {s.label!r} reads", s.where,
                                 s.owner in held)
        inner = held | {s.lifeline} if isinstance(s, Atomic) else held
        for nested in blocks(s):
            yield from _accesses(nested, guard_reads, inner)


def atomic_errors(body) -> list[ChoreographyError]:
    """Atomic blocks that serialize nothing, and ones nested in one of the same lifeline."""
    errors = []

    def visit(block, outer: dict) -> None:
        for s in block:
            inner = outer
            if isinstance(s, Atomic):
                if s.lifeline in outer:
                    errors.append(ChoreographyError(
                        f"c.atomic({s.lifeline}) inside c.atomic({s.lifeline}) (line "
                        f"{outer[s.lifeline].line}): {s.lifeline} already serves the outer "
                        "block in one go", s.where, "  fix: remove the inner c.atomic",
                        "nested-atomic"))
                elif s.lifeline not in participants(s):
                    errors.append(ChoreographyError(
                        f"c.atomic({s.lifeline}) holds no event of {s.lifeline}: nothing to "
                        "serialize", s.where, f"  fix: put {s.lifeline}'s part in the block "
                        "(the receive of the request, the decision and the write it "
                        "protects), or remove the block", "empty-atomic"))
                inner = {**outer, s.lifeline: s.where}
            for nested in blocks(s):
                visit(nested, inner)

    visit(body, {})
    return errors
