"""Why a guard has its value at an event: every subformula, and where each value came from.

Built on the reference evaluator (the literal semantics), not on the monitor:
an explanation must say *which event* supplied a value — ``last_B(e)`` for
``@B(…)`` and ``@B.x``, the witness of ``S``/``O``/``P`` — and the monitor
keeps only the values.  A step is one (subformula, event) pair; a pair met
again (nested ``P`` makes the formula a DAG) is shown once and referred to
after, and at most ``MAX_STEPS`` steps are built, so a hostile guard cannot
make the explanation explode.
"""

from __future__ import annotations

import json
from typing import Mapping

import attrs

from ..errors import EXIT_USAGE, CplError
from ..lang import CheckedGuard, ast, check, Registry, literal_text, term_text, to_text
from ..trace import Trace
from .reference import UNDEFINED, BeyondSlice, Evaluator, Horizon

MAX_STEPS = 400  # steps shown in full; later ones are cut with a note
_LISTED = 5  # event ids listed in a note before "and N more"


class ExplainError(CplError, LookupError):
    """The event or guard to explain is not there (a usage error for the CLI)."""

    exit_code = EXIT_USAGE


@attrs.frozen
class Term:
    """One term of an atom: its value at the event, and the event whose store supplied it."""

    text: str
    defined: bool
    value: object = None
    source: str | None = None  # id of the event whose store was read
    set_by: str | None = None  # id of the event whose ``set`` gave the value (None: init)
    why: str = ""  # how the value was found, or why there is none


@attrs.frozen
class Step:
    """A subformula's value at one event, why, and the steps it rests on."""

    formula: str
    value: bool
    at: str  # event id
    why: str = ""
    source: str | None = None  # the supplying event: last_B(e), a witness, a counter-example
    terms: tuple[Term, ...] = ()
    children: tuple["Step", ...] = ()
    repeat: bool = False  # shown before; not expanded again
    cut: bool = False  # past MAX_STEPS: not expanded

    def to_json(self) -> dict:
        data: dict = {"formula": self.formula, "value": self.value, "at": self.at}
        for name in ("why", "source"):
            if getattr(self, name):
                data[name] = getattr(self, name)
        if self.terms:
            data["terms"] = [_term_json(term) for term in self.terms]
        if self.children:
            data["children"] = [child.to_json() for child in self.children]
        if self.repeat:
            data["repeat"] = True
        if self.cut:
            data["cut"] = True
        return data


def _term_json(term: Term) -> dict:
    data: dict = {"term": term.text, "defined": term.defined}
    if term.defined:
        data["value"] = term.value
    for name in ("source", "set_by"):
        if getattr(term, name) is not None:
            data[name] = getattr(term, name)
    if term.why:
        data["why"] = term.why
    return data


@attrs.frozen
class Explanation:
    """A guard at one event: its value, the recorded outcome, what was visible, and why."""

    event: str
    lifeline: str
    kind: str
    label: str | None
    guard: str  # canonical text
    value: bool
    recorded: bool | None  # the outcome the trace recorded for this guard, if it did
    frontier: Mapping[str, str | None]  # per lifeline, its latest event visible here
    step: Step

    def to_json(self) -> dict:
        return {"event": self.event, "lifeline": self.lifeline, "kind": self.kind,
                "label": self.label, "guard": self.guard, "value": self.value,
                "recorded": self.recorded, "frontier": dict(self.frontier),
                "explanation": self.step.to_json()}

    def to_text(self) -> str:
        """For people: a header, the frontier, then one line per step, indented by depth."""
        head = f"{shown(self.event)} on {shown(self.lifeline)} ({self.kind}"
        head += f" {shown(self.label)})" if self.label else ")"
        verdict = _bool(self.value)
        if self.recorded is not None:
            verdict += f" (recorded {_bool(self.recorded)}" + (
                ", agrees)" if self.recorded == self.value else ", DIFFERS)")
        lines = [head, f"guard: {shown(self.guard)}", f"value: {verdict}",
                 "saw:   " + ", ".join(f"{shown(lane)} {shown(ident) if ident else '(nothing)'}"
                                       for lane, ident in self.frontier.items()), ""]
        _text_lines(self.step, 0, lines)
        return "\n".join(lines) + "\n"


def _text_lines(step: Step, depth: int, lines: list[str]) -> None:
    pad = "  " * depth
    where = f"at {shown(step.at)}"
    note = f": {step.why}" if step.why else ""
    lines.append(f"{pad}{_bool(step.value):<5} {_short(step.formula)}  {where}{note}")
    for term in step.terms:
        value = _value_text(term.value) if term.defined else "undefined"
        lines.append(f"{pad}        {shown(term.text)} = {value}"
                     + (f"  ({term.why})" if term.why else ""))
    if step.repeat:
        lines.append(f"{pad}        (explained above)")
    if step.cut:
        lines.append(f"{pad}        (not expanded: more than {MAX_STEPS} steps)")
    for child in step.children:
        _text_lines(child, depth + 1, lines)


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _short(text: str, limit: int = 100) -> str:
    text = shown(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _value_text(value) -> str:
    if isinstance(value, (list, dict)):
        return _short(json.dumps(value, ensure_ascii=False), 60)
    return shown(literal_text(value))


def shown(name: str) -> str:
    """A name as text output shows it: as is, or JSON-quoted if it holds a line break
    or another character that would make the output lie."""
    return name if name.isprintable() else json.dumps(name, ensure_ascii=False)


def explain(trace: Trace, event_id: str, guard: str | None = None,
            predicates: Registry | None = None) -> Explanation:
    """Explain ``guard`` (default: the choice's recorded guard) at the event ``event_id``."""
    return Explainer(trace, predicates).explain(event_id, guard)


class Explainer:
    """Explains many events of one trace: the vector clocks are computed once, and each
    guard text is checked once, so its values are memoised across events.

    ``trace`` may be a slice of a longer one (``cpl.semantics.recent``): ``horizon`` says
    what lies outside it, ``schema`` is the whole trace's; an explanation that needs an
    event before the slice raises ``BeyondSlice``."""

    def __init__(self, trace: Trace, predicates: Registry | None = None,
                 horizon: Horizon | None = None, schema=None):
        self.trace = trace
        self.horizon = horizon or Horizon()
        self.evaluator = Evaluator(trace, predicates, self.horizon.before)
        self.schema = schema if schema is not None else trace.schema(predicates)
        self.checked: dict[str, CheckedGuard] = {}

    def explain(self, event_id: str, guard: str | None = None) -> Explanation:
        trace = self.trace
        try:
            index = trace.index_of(event_id)
        except KeyError:
            from ..lang import did_you_mean
            raise ExplainError(f"the trace has no event {event_id!r}"
                               f"{did_you_mean(event_id, [e.id for e in trace.events])}") from None
        event = trace.events[index]
        if guard is None:
            if event.guard is None:
                what = "a choice that recorded no guard" if event.kind == "choice" else \
                    f"a {event.kind}, not a choice"
                raise ExplainError(f"event {event_id!r} is {what}: give a GUARD to explain there")
            guard = event.guard
        checked = self.checked.get(guard)
        if checked is None:
            checked = self.checked[guard] = check(guard, self.schema)
        steps = _Steps(trace, self.evaluator, self.horizon)
        step = steps.step(checked.formula, index)
        recorded = event.outcome if event.guard == checked.canonical else None
        frontier = {lane: _id_or_none(trace, self.evaluator.last(lane, index))
                    for lane in trace.lifelines}
        return Explanation(event.id, event.lifeline, event.kind, event.label,
                           checked.canonical, step.value, recorded, frontier, step)


def _operands(node, kind) -> list:
    """The operands of a chain of one associative operator, left to right (no recursion:
    a chain may be as long as the guard)."""
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        if type(item) is kind:
            stack.extend((item.right, item.left))
        else:
            found.append(item)
    return found


def _id_or_none(trace: Trace, index: int | None) -> str | None:
    return None if index is None else trace.events[index].id


class _Steps:
    """Builds the steps of one explanation; ``ev`` answers every question of value and
    order."""

    def __init__(self, trace: Trace, evaluator: Evaluator, horizon: Horizon):
        self.trace = trace
        self.ev = evaluator
        self.horizon = horizon
        self.seen: set[tuple[int, int]] = set()
        self.count = 0

    def id(self, index: int) -> str:
        return self.trace.events[index].id

    def ids(self, indices, later: tuple[int, tuple[str, ...]] = (0, ())) -> str:
        """The first ids of ``indices`` and then of ``later`` (a count and the first ids of
        events past the slice), and how many more there are."""
        names = [self.id(i) for i in list(indices)[:_LISTED]] + list(later[1])
        listed = ", ".join(shown(name) for name in names[:_LISTED])
        more = len(indices) + later[0] - _LISTED
        return listed + (f" and {more} more" if more > 0 else "")

    def step(self, node, e: int) -> Step:
        value = self.ev.holds(node, e)
        key = (id(node), e)
        text = to_text(node)
        if key in self.seen:
            return Step(text, value, self.id(e), repeat=True)
        self.seen.add(key)
        self.count += 1
        if self.count > MAX_STEPS:
            return Step(text, value, self.id(e), cut=True)
        why, source, children, terms = self._why(node, e)
        return Step(text, value, self.id(e), why, source, tuple(terms), tuple(children))

    def _why(self, node, e: int):
        """(why, source event id, child steps, terms) of one node at e."""
        kind = type(node)
        if kind in (ast.Compare, ast.Pred, ast.Truth):
            terms = [self.term(t, e) for t in ast.terms(node) if not isinstance(t, ast.Const)]
            undefined = [t.text for t in terms if not t.defined]
            why = f"{', '.join(undefined)} undefined, so the atom is false" if undefined else ""
            return why, None, [], terms
        if kind is ast.Bool:
            return "", None, [], []
        if kind in (ast.At, ast.Seen):
            return self._at(node, e)
        if kind is ast.Prev:
            f = self.ev.previous(e)
            if f is None:
                return "no previous event on this lifeline", None, [], []
            return f"previous event {shown(self.id(f))}", self.id(f), [self.step(node.body, f)], []
        if kind is ast.Since:
            return self._since(node, e)
        if kind in (ast.Once, ast.Hist, ast.Past):
            return self._quantifier(node, e)
        if kind in (ast.And, ast.Or):  # a chain a && b && c is one step with three parts
            return "", None, [self.step(part, e) for part in _operands(node, kind)], []
        return "", None, [self.step(child, e) for child in ast.children(node)], []

    def _at(self, node, e: int):
        lane = node.lifeline
        f = self.ev.last(lane, e)
        hidden = self.trace.local_events(lane)[self.ev.visible(lane, e):]
        later = self.horizon.after.get(lane, (0, ()))
        unseen = (f"; not visible here: {self.ids(hidden, later)}" if hidden or later[0]
                  else "")
        if f is None:
            return f"no event of {shown(lane)} is visible here{unseen}", None, [], []
        position = self.trace.local_index()[f] + 1 + self.horizon.before.get(lane, 0)
        why = (f"latest visible event of {shown(lane)} is {shown(self.id(f))} "
               f"(its #{position}){unseen}")
        children = [self.step(node.body, f)] if isinstance(node, ast.At) else []
        return why, self.id(f), children, []

    def _since(self, node, e: int):
        """The witness where the right side last held, or the event that broke it, or none."""
        left, right = to_text(node.left), to_text(node.right)
        past = self.ev.local_past_latest_first(e)  # walked lazily: a slice ends somewhere
        later: list[int] = []
        for g in past:
            if self.ev.holds(node.right, g):
                why = f"{_short(right, 60)} held at {shown(self.id(g))}"
                why += (f"; {_short(left, 60)} held at every later event ({self.ids(later[::-1])})"
                        if later else " (this event)")
                children = [self.step(node.right, g)] + (
                    [self.step(node.left, later[0])] if later else [])
                return why, self.id(g), children, []
            if not self.ev.holds(node.left, g):
                earlier = next((f for f in past if self.ev.holds(node.right, f)), None)
                why = f"{_short(left, 60)} is false at {shown(self.id(g))}"
                why += (f", after {_short(right, 60)} last held at {shown(self.id(earlier))}"
                        if earlier is not None else f", and {_short(right, 60)} never held")
                children = [self.step(node.left, g)] + (
                    [self.step(node.right, earlier)] if earlier is not None else [])
                return why, self.id(g), children, []
            later.append(g)
        return (f"{_short(right, 60)} never held on this lifeline up to here "
                f"({len(later)} event{'s' if len(later) != 1 else ''})"), None, [], []

    def _quantifier(self, node, e: int):
        """O and P: the latest witness; H: the latest counter-example."""
        if isinstance(node, ast.Past):
            scope, where = reversed(self.ev.causal_past(e)), "visible event"
        else:  # walked lazily: a slice ends somewhere
            scope, where = self.ev.local_past_latest_first(e), "event of this lifeline"
        wanted = not isinstance(node, ast.Hist)  # H looks for a counter-example
        body = _short(to_text(node.body), 60)
        found, count = None, 0
        for f in scope:
            count += 1
            if self.ev.holds(node.body, f) == wanted:
                found = f
                break
        if found is None:
            verb = "holds at every" if isinstance(node, ast.Hist) else "holds at no"
            return f"{body} {verb} {where} ({count})", None, [], []
        verb = "holds" if wanted else "is false"
        return (f"{body} {verb} at {shown(self.id(found))}", self.id(found),
                [self.step(node.body, found)], [])

    def term(self, term, e: int) -> Term:
        text = term_text(term)
        if isinstance(term, (ast.Const, ast.Symbol)):
            why = "a symbol: the string of its name" if isinstance(term, ast.Symbol) else ""
            return Term(text, True, self.ev.term(term, e), why=why)
        f = self.ev.last(term.lifeline, e) if isinstance(term, ast.Remote) else e
        if f is None:
            return Term(text, False, why=f"no event of {shown(term.lifeline)} is visible")
        value = self.trace.valuations()[f].get(term.name, UNDEFINED)  # the store read
        where = f"at {shown(self.id(f))}" if f != e else "here"
        if value is UNDEFINED:
            return Term(text, False, source=self.id(f), why=f"{term.name} is unset {where}")
        setter = self._setter(f, term.name)
        origin = f"set at {shown(setter)}" if setter is not None else "from the initial store"
        return Term(text, True, value, self.id(f), setter, f"{origin}, read {where}")

    def _setter(self, f: int, name: str) -> str | None:
        """The id of the latest event on f's lifeline, up to f, whose ``set`` assigns
        ``name`` (before the slice: as its horizon recorded it)."""
        try:
            return next((self.id(g) for g in self.ev.local_past_latest_first(f)
                         if name in self.trace.events[g].set), None)
        except BeyondSlice:
            lane = self.trace.events[f].lifeline
            return self.horizon.setters.get(lane, {}).get(name)
