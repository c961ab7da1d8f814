"""Statements a trace cannot tell apart, in threads of one lifeline that run at once.

The reduction (:mod:`.reduction`) runs no MSC twice because two sibling branches
disagree on a lifeline's next event, and a trace tells a lifeline's statements
apart by their kind, label and the lifeline a message goes to or comes from.  Two
statements alike in these, in parallel threads of one lifeline (``c.send(A, B, x)``
in two threads: both are sends labelled ``x`` to B), make siblings whose events a
trace records alike, so one MSC may lie below both.  Then
:class:`.verifier.Search` remembers each MSC it ran and abandons a repeat: the
count stays one per MSC, at the price of memory that grows with the MSCs.
"""

from __future__ import annotations

from itertools import combinations

from choreo.analysis import (
    LAct, LBranch, LChoose, LLoop, LPar, LRecv, LSend, LWhile, walk,
)
from choreo.execution import Plan


def alike_in_parallel(plan: Plan) -> str | None:
    """Where two threads of one lifeline's ``parallel`` have statements whose events a
    trace records alike, said as the report says it; None when there are none."""
    for lifeline in plan.lifelines:
        for statement in walk(plan.projection.program(lifeline).body):
            if isinstance(statement, LPar):
                found = _shared(statement)
                if found is not None:
                    look, first, second = found
                    return (f"{lifeline}'s parallel threads both have {_said(look)} "
                            f"({first}, {second})")
    return None


def _shared(parallel: LPar) -> tuple | None:
    """A look two of the threads have, with a source position of each."""
    looking = [{look: s.where for s in walk(thread) for look in _looks(s)}
               for thread in parallel.threads]
    for one, other in combinations(looking, 2):
        for look in sorted(one.keys() & other.keys()):
            return look, one[look], other[look]
    return None


def _looks(statement) -> list[tuple]:
    """How a trace records the statement's events: kind, label, and the lifeline a message
    goes to or comes from (an action's values are known only when it runs: not compared)."""
    if isinstance(statement, LSend):
        return [("send", statement.label, statement.to)]
    if isinstance(statement, LRecv):
        return [("receive", statement.label, statement.frm)]
    if isinstance(statement, LAct):
        return [("action", statement.label, "")]
    if isinstance(statement, (LChoose, LWhile)):  # the choice, then a send to each it tells
        return [("decision", statement.label, ""),
                *(("send", statement.label, told) for told in statement.tell)]
    if isinstance(statement, (LBranch, LLoop)):  # told by the owner (or by a receive inside)
        return [("receive", statement.label, statement.owner)]
    return []


def _said(look: tuple) -> str:
    kind, label, other = look
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} labelled {label!r}" + (
        f" {'to' if kind == 'send' else 'from'} {other}" if other else "")
