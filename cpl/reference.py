"""The reference evaluator: cpl.md's Semantics, read literally, on one trace.

This is the oracle the online monitor is tested against, so it shares none of
the monitor's ideas.  The causal order is the reflexive-transitive closure of
the MSC's edges (previous local event, send → receive), computed by graph
reachability, never from vector clocks; sugar (``P``, ``O``, ``H``,
``Seen``, ``->``) is read as its own definition, not via ``cpl.desugar``;
every quantifier ranges over the events the definition names.  Results are
memoised per (subformula, event), which keeps it fast enough for tests.
"""

from __future__ import annotations

from typing import Iterable

from . import ast
from .errors import EvaluationError
from .msc import Event, Trace
from .predicates import DEFAULT, Registry
from .values import COMPARE


class _Undefined:
    """A term with no value here (unset variable, or no visible event of B)."""

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED = _Undefined()


class Evaluator:
    """``e ⊨ φ`` for the events of one trace; reuse it to evaluate many formulas."""

    def __init__(self, trace: Trace, predicates: Registry | None = None):
        self.trace = trace
        self.predicates = predicates if predicates is not None else DEFAULT
        self._values = trace.valuations()
        self._past = _causal_pasts(trace)
        self._memo: dict[tuple[object, int], bool] = {}

    # ----------------------------------------------------- the order ≤

    def leq(self, f: int, e: int) -> bool:
        """``f ≤ e``: f reaches e along local-successor and send→receive edges."""
        return (self._past[e] >> f) & 1 == 1

    def causal_past(self, e: int) -> list[int]:
        """Every f with ``f ≤ e``, in trace order (includes e)."""
        return [f for f in range(e + 1) if self.leq(f, e)]

    def last(self, lifeline: str, e: int) -> int | None:
        """``last_B(e)``: the latest event of B with ``last_B(e) ≤ e``, or None."""
        visible = [f for f in self.trace.local_events(lifeline) if self.leq(f, e)]
        return visible[-1] if visible else None

    def local_past(self, e: int) -> list[int]:
        """The events f on e's lifeline with ``f ≤ e``, in local order."""
        lifeline = self.trace.events[e].lifeline
        return [f for f in self.trace.local_events(lifeline) if self.leq(f, e)]

    # ------------------------------------------------------------ terms

    def term(self, term, e: int):
        """The value of a term at e, or ``UNDEFINED``."""
        if isinstance(term, ast.Const):
            return term.value
        if isinstance(term, ast.Symbol):
            return term.name
        if isinstance(term, ast.Var):
            return self._values[e].get(term.name, UNDEFINED)
        if isinstance(term, ast.Remote):
            f = self.last(term.lifeline, e)
            return UNDEFINED if f is None else self._values[f].get(term.name, UNDEFINED)
        raise TypeError(f"not a CPL term: {term!r}")

    # --------------------------------------------------------- formulas

    def holds(self, formula: ast.Formula, e: int) -> bool:
        """``e ⊨ φ``."""
        key = (formula, e)
        if key not in self._memo:
            self._memo[key] = self._holds(formula, e)
        return self._memo[key]

    def _holds(self, node, e: int) -> bool:
        kind = type(node)
        if kind is ast.Bool:
            return node.value
        if kind in (ast.Compare, ast.Pred, ast.Truth):
            return self._atom(node, e)
        if kind is ast.At:  # last_B(e) exists and last_B(e) ⊨ φ
            f = self.last(node.lifeline, e)
            return f is not None and self.holds(node.body, f)
        if kind is ast.Prev:  # prev(e) exists and prev(e) ⊨ φ
            f = self.trace.previous(e)
            return f is not None and self.holds(node.body, f)
        if kind is ast.Since:
            # some f on A, f ≤ e, f ⊨ ψ, and every g on A with f < g ≤ e has g ⊨ φ
            mine = self.local_past(e)
            return any(self.holds(node.right, f)
                       and all(self.holds(node.left, g) for g in mine if g != f and self.leq(f, g))
                       for f in reversed(mine))
        if kind is ast.Not:
            return not self.holds(node.body, e)
        if kind is ast.And:
            return self.holds(node.left, e) and self.holds(node.right, e)
        if kind is ast.Or:
            return self.holds(node.left, e) or self.holds(node.right, e)
        if kind is ast.Implies:  # !φ || ψ
            return not self.holds(node.left, e) or self.holds(node.right, e)
        if kind is ast.Past:  # some f ≤ e, on any lifeline, has f ⊨ φ
            return any(self.holds(node.body, f) for f in self.causal_past(e))
        if kind is ast.Once:  # true S φ: some f on A with f ≤ e has f ⊨ φ
            return any(self.holds(node.body, f) for f in self.local_past(e))
        if kind is ast.Hist:  # !(true S !φ): every f on A with f ≤ e has f ⊨ φ
            return all(self.holds(node.body, f) for f in self.local_past(e))
        if kind is ast.Seen:  # @A(true): last_A(e) exists
            return self.last(node.lifeline, e) is not None
        raise TypeError(f"not a CPL formula: {node!r}")

    def _atom(self, node, e: int) -> bool:
        values = [self.term(t, e) for t in ast.terms(node)]
        if any(v is UNDEFINED for v in values):
            return False
        if isinstance(node, ast.Compare):
            return COMPARE[node.op](values[0], values[1])
        if isinstance(node, ast.Truth):
            return values[0] is True
        return self._predicate(node, values, e)

    def _predicate(self, node: ast.Pred, values: list, e: int) -> bool:
        event = self.trace.events[e]
        where = f"event #{e} {event.id!r} ({event.lifeline})"
        entry = self.predicates.get(node.name)
        if entry is None:
            raise EvaluationError(f"unknown predicate '{node.name}' at {where}")
        try:
            return bool(entry.function(*values))
        except Exception as error:  # a user predicate failed: say which, and where
            raise EvaluationError(f"predicate '{node.name}' raised {type(error).__name__}: "
                                  f"{error} at {where}") from error


def _causal_pasts(trace: Trace) -> list[int]:
    """For each event e, the set {f | f ≤ e} as a bitmask, by reachability over predecessors.

    The set of events that reach e is e itself plus everything that reaches one
    of e's immediate predecessors (previous local event, the send of a recv).
    """
    pasts: list[int] = []
    for e in range(len(trace.events)):
        reach = 1 << e
        for p in trace.predecessors(e):
            if p >= e:
                raise ValueError(f"event #{e} {trace.events[e].id!r} comes before its causal "
                                 f"predecessor #{p}: the events are not a linear extension")
            reach |= pasts[p]
        pasts.append(reach)
    return pasts


def evaluate(trace: Trace, formula: ast.Formula, event_index: int,
             predicates: Registry | None = None) -> bool:
    """``events[event_index] ⊨ formula``."""
    if not 0 <= event_index < len(trace.events):
        raise IndexError(f"event index {event_index} out of range (the trace has "
                         f"{len(trace.events)} events)")
    return Evaluator(trace, predicates).holds(formula, event_index)


def evaluate_all(trace: Trace, formula: ast.Formula, lifeline: str | None = None,
                 predicates: Registry | None = None) -> list[tuple[Event, bool]]:
    """The formula's value at every event (of ``lifeline`` only, if given), in trace order."""
    if lifeline is not None and lifeline not in trace.lifelines:
        raise ValueError(f"unknown lifeline {lifeline!r} (lifelines: {', '.join(trace.lifelines)})")
    evaluator = Evaluator(trace, predicates)
    return [(event, evaluator.holds(formula, index)) for index, event in enumerate(trace.events)
            if lifeline is None or event.lifeline == lifeline]


def recheck(trace: Trace, predicates: Registry | None = None,
            indices: Iterable[int] | None = None) -> list[tuple[Event, bool, bool]]:
    """Re-decide recorded choices: (event, recorded outcome, computed value) per choice with both.

    A complete trace's recorded outcomes must equal the computed values (trace.md).
    """
    from .check import check  # local: check imports the parser, not needed for evaluation

    evaluator = Evaluator(trace, predicates)
    schema = trace.schema(predicates)
    chosen = range(len(trace.events)) if indices is None else indices
    found = []
    for index in chosen:
        event = trace.events[index]
        if event.kind == "choice" and event.guard is not None and event.outcome is not None:
            formula = check(event.guard, schema).formula
            found.append((event, event.outcome, evaluator.holds(formula, index)))
    return found
