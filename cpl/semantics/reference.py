"""The reference evaluator: cpl.md's Semantics, read literally, on one trace.

This is the oracle the online monitor is tested against, so it shares none of
the monitor's ideas: sugar (``P``, ``O``, ``H``, ``Seen``, ``->``) is read as
its own definition, not via ``cpl.lang.desugar``; every quantifier ranges over the
events the definition names; nothing is carried from one event to the next
except memoised values of (subformula, event).

The causal order ``≤`` is the reflexive-transitive closure of the MSC's
edges (previous local event, send → receive).  It is represented by one
vector per event, derived from exactly those edges::

    vc[e][B] = the number of B's events that reach e   (B any lifeline)
             = max over e's immediate predecessors p of vc[p][B], and for
               e's own lifeline A, e's 1-based local position.

Why this is the closure and not an idea borrowed from the monitor: the set of
events that reach e is e plus the sets that reach its predecessors
(reachability), and that set is *downward closed in each local order* (an
event reaches everything after it on its lifeline), so it is fully described
by how many events of each lifeline it contains — the max of the counts of
the predecessors' sets (plus e itself).  Hence

    f ≤ e  ⟺  position(f) < vc[e][lifeline(f)]          (position 0-based)
    last_B(e) = B's event number vc[e][B] (1-based), if vc[e][B] > 0.

Memory is O(events × lifelines) (one compact integer column per lifeline) plus
one byte per (subformula, event) for the memo, linear in the trace; the old
bitmask per event grew quadratically (25 GB for 640,000 events).  Time is
linear for guards whose ``S``/``O``/``H``/``P`` find a decisive event soon,
and quadratic in the worst case (the quantifiers scan the past at each event).
"""

from __future__ import annotations

from array import array
from typing import Iterable, Iterator, Mapping

import attrs

from ..lang import ast, DEFAULT, Registry, COMPARE
from ..errors import EvaluationError
from ..trace import Event, Trace


class _Undefined:
    """A term with no value here (unset variable, or no visible event of B)."""

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED = _Undefined()


class BeyondSlice(LookupError):
    """The evaluation needs an event from before the slice of the trace it was given."""


@attrs.frozen
class Horizon:
    """What lies outside a slice of a trace, per lifeline: how many of its events come
    before the slice, the id of the latest of them that set each variable, and (count,
    first ids) of the events after it."""

    before: Mapping[str, int] = attrs.field(factory=dict)
    after: Mapping[str, tuple[int, tuple[str, ...]]] = attrs.field(factory=dict)
    setters: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)

_UNKNOWN, _FALSE, _TRUE = 0, 1, 2  # memo cells: one byte per (subformula, event)


class Evaluator:
    """``e ⊨ φ`` for the events of one trace; reuse it to evaluate many formulas.

    ``before``: when ``trace`` is a slice (its last events, its ``init`` the stores where
    it starts), how many events of each lifeline precede it; a walk that would go
    there raises ``BeyondSlice`` rather than answer from too little.
    """

    def __init__(self, trace: Trace, predicates: Registry | None = None, before=None):
        self.trace = trace
        self.before = before or {}
        self.predicates = predicates if predicates is not None else DEFAULT
        self._values = trace.valuations()
        self._lifeline = [event.lifeline for event in trace.events]
        self._position = trace.local_index()
        self._clock = vector_clocks(trace)
        self._memo: dict[int, tuple[object, bytearray]] = {}  # id(subformula) → (it, cells)

    @property
    def clocks(self) -> dict[str, array]:
        """Per lifeline, the column ``vc[·][B]`` (see ``vector_clocks``)."""
        return self._clock

    # ----------------------------------------------------- the order ≤

    def visible(self, lifeline: str, e: int) -> int:
        """How many of ``lifeline``'s events are ≤ e (they are its first ones)."""
        column = self._clock.get(lifeline)
        return column[e] if column is not None else 0

    def causal_past(self, e: int) -> list[int]:
        """Every f with ``f ≤ e``, in trace order (includes e)."""
        return sorted(self.causal_past_unordered(e))

    def causal_past_unordered(self, e: int) -> Iterator[int]:
        """``{f | f ≤ e}``, each lifeline's visible events latest first."""
        for lifeline in self._clock:
            events = self.trace.local_events(lifeline)
            for position in range(self.visible(lifeline, e) - 1, -1, -1):
                yield events[position]
            self._edge(lifeline)

    def last(self, lifeline: str, e: int) -> int | None:
        """``last_B(e)``: the latest event of B with ``last_B(e) ≤ e``, or None."""
        count = self.visible(lifeline, e)
        if not count:
            self._edge(lifeline)
        return self.trace.local_events(lifeline)[count - 1] if count else None

    def previous(self, e: int) -> int | None:
        """``prev(e)``, or None at the start of its lifeline."""
        found = self.trace.previous(e)
        if found is None:
            self._edge(self._lifeline[e])
        return found

    def local_past_latest_first(self, e: int) -> Iterator[int]:
        events = self.trace.local_events(self._lifeline[e])
        for position in range(self._position[e], -1, -1):
            yield events[position]
        self._edge(self._lifeline[e])

    def _edge(self, lifeline: str) -> None:
        """A walk down ``lifeline`` reached the start of the slice: it is the trace's start,
        or the walk needs more than the slice holds."""
        if self.before.get(lifeline):
            raise BeyondSlice(lifeline)

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
        entry = self._memo.get(id(formula))
        if entry is None:  # the formula is kept in the entry, so its id stays its own
            entry = self._memo[id(formula)] = (formula, bytearray(len(self.trace.events)))
        cells = entry[1]
        if cells[e] == _UNKNOWN:
            cells[e] = _TRUE if self._holds(formula, e) else _FALSE
        return cells[e] == _TRUE

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
            f = self.previous(e)
            return f is not None and self.holds(node.body, f)
        if kind is ast.Since:
            # some f on A, f ≤ e, f ⊨ ψ, and every g on A with f < g ≤ e has g ⊨ φ.
            # Quantifiers taken latest first: the first g (going back from e) with g ⊨ ψ
            # is a witness, since every later one was checked to satisfy φ; a g with
            # g ⊭ φ before any witness lies between e and every earlier f: none is one.
            for g in self.local_past_latest_first(e):
                if self.holds(node.right, g):
                    return True
                if not self.holds(node.left, g):
                    return False
            return False
        if kind is ast.Not:
            return not self.holds(node.body, e)
        if kind is ast.And:  # every operand of the chain: a loop, not 10,000 nested calls
            return all(self.holds(operand, e) for operand in _operands(node))
        if kind is ast.Or:
            return any(self.holds(operand, e) for operand in _operands(node))
        if kind is ast.Implies:  # !φ || ψ
            return not self.holds(node.left, e) or self.holds(node.right, e)
        if kind is ast.Past:  # some f ≤ e, on any lifeline, has f ⊨ φ
            return any(self.holds(node.body, f) for f in self.causal_past_unordered(e))
        if kind is ast.Once:  # true S φ: some f on A with f ≤ e has f ⊨ φ
            return any(self.holds(node.body, f) for f in self.local_past_latest_first(e))
        if kind is ast.Hist:  # !(true S !φ): every f on A with f ≤ e has f ⊨ φ
            return all(self.holds(node.body, f) for f in self.local_past_latest_first(e))
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


def _operands(chain) -> Iterator[ast.Formula]:
    """The operands of a chain of ``&&`` (or of ``||``), however parenthesised, left to
    right: ``(a && b) && c`` and ``a && (b && c)`` both give a, b, c (the operator is
    associative)."""
    kind = type(chain)
    stack = [chain]
    while stack:
        node = stack.pop()
        if type(node) is kind:
            stack += (node.right, node.left)
        else:
            yield node


def vector_clocks(trace: Trace) -> dict[str, array]:
    """Per lifeline B, the column ``vc[·][B]``: how many of B's events reach each event.

    ``vc[e]`` is the componentwise max over e's immediate predecessors (previous
    local event, the send of a recv), with e's own lifeline set to e's 1-based
    local position: the counts of the set {e} ∪ ⋃ {f | f ≤ p}, which is how
    reachability over the predecessors defines ``{f | f ≤ e}`` (see the module).
    """
    names = dict.fromkeys(trace.lifelines)
    names.update(dict.fromkeys(event.lifeline for event in trace.events))
    count = len(trace.events)
    columns = {name: array("q", bytes(8 * count)) for name in names}
    positions = trace.local_index()
    for e, event in enumerate(trace.events):
        predecessors = trace.predecessors(e)
        for p in predecessors:
            if p >= e:
                raise ValueError(f"event #{e} {event.id!r} comes before its causal "
                                 f"predecessor #{p}: the events are not a linear extension")
        for column in columns.values():
            column[e] = max((column[p] for p in predecessors), default=0)
        columns[event.lifeline][e] = positions[e] + 1
    return columns


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
    from ..lang import check  # local: check imports the parser, not needed for evaluation

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
