"""Monitoring a recorded trace offline: replay its events through the monitors.

The events of a ``cpl-msc/1`` trace are a linear extension of the causal
order, so each send's metadata exists before its receive reads it — exactly
what a live run hands the receiver.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from ..lang import check
from ..collector import collector_paused
from .codegen import slot_cell
from .compile import OwnedFormula, compile_guards
from .monitor import Monitor


def replay(trace, program) -> Iterator[tuple[object, Monitor]]:
    """Feed every event to its lifeline's monitor; yield (event, monitor) after each."""
    return replay_events(trace.lifelines, trace.init, trace.events, program)


def replay_events(lifelines, init, events: Iterable, program) -> Iterator[tuple[object, Monitor]]:
    """``replay`` over any iterable of events in trace order (a stream read line by line):
    what it keeps is the monitors and the messages in transit, not the events."""
    with collector_paused():  # a monitor per lifeline, no cycle among them: collector_paused
        monitors = {name: Monitor(program, name, init.get(name)) for name in lifelines}
    in_flight = {}
    for event in events:
        monitor = monitors[event.lifeline]
        kind = event.kind
        if kind == "send":
            in_flight[event.msg] = monitor.send()
        elif kind == "recv":
            monitor.receive(in_flight.pop(event.msg), event.set)
        elif kind == "act":
            monitor.act(event.set)
        else:
            monitor.choice()
        yield event, monitor


def evaluations(source, guard: str, lifeline: str | None = None, *, prune: bool = True,
                schema=None) -> Iterator[tuple[object, bool]]:
    """(event, the guard's value) at every event of ``source`` (a ``Trace``, or a stream
    with ``lifelines``, ``init``, ``schema()`` and ``events()``), lazily.  The guard is
    checked and compiled now, so a bad guard fails before any event is read."""
    program, formula = _compiled(source, guard, lifeline, prune, schema)
    events = source.events if isinstance(source.events, (tuple, list)) else source.events()
    return _values(_steps(source.lifelines, source.init, program, formula), events, lifeline)


def value_step(source, guard: str, lifeline: str | None = None, *, prune: bool = True,
               schema=None) -> tuple[Callable, list]:
    """``evaluations`` turned around, for a reader that checks and steps in one pass
    (``Pending.stepped``, ``JsonLines.stepped``): a ``step(id, lifeline, kind, msg, set)``
    that appends (event id, lifeline, value) to the list returned with it, for every
    event (of ``lifeline``, if given).  No ``Event`` and no generator per event: eval_trace.py's
    document in process 1.03–1.10 → 0.59–0.66 s (bench/eval_trace.py)."""
    program, formula = _compiled(source, guard, lifeline, prune, schema)
    steps, in_flight, values = _steps(source.lifelines, source.init, program, formula), {}, []
    keep, only = values.append, lifeline

    def step(event_id, lifeline, kind, msg, updates):
        act, send, receive, choice, cell = steps[lifeline]
        if kind == "send":
            in_flight[msg] = send()
        elif kind == "recv":
            receive(in_flight.pop(msg), updates)
        elif kind == "act":
            act(updates)
        else:
            choice()
        if only is None or lifeline == only:
            keep((event_id, lifeline, not not cell.cell_contents))

    return step, values


def _compiled(source, guard, lifeline, prune, schema):
    """The guard checked against the source's schema and compiled: (program, formula)."""
    schema = schema if schema is not None else source.schema()
    checked = check(guard, schema)
    program = compile_guards([OwnedFormula(lifeline, checked.primitive)], source.lifelines,
                             prune=prune, predicates=schema.predicates)
    return program, checked.primitive


def _steps(lifelines, init, program, formula) -> dict:
    """Per lifeline: its monitor's (act, send, receive, choice) and the closure cell of the
    guard's slot (``slot_cell``; None for a lifeline not evaluated)."""
    steps = {}
    with collector_paused():  # as in replay_events
        for name in lifelines:
            local = program.local(name)
            act, send, receive, choice, values, *_ = local.factory(init.get(name) or {})
            slot = local.slot_of.get(formula)  # None: a lifeline not evaluated (``only``)
            steps[name] = (act, send, receive, choice,
                           None if slot is None else slot_cell(values, slot))
    return steps


def _values(steps, events, only) -> Iterator[tuple[object, bool]]:
    """``replay_events`` with the guard's value read at each event (of ``only``, if given).
    One loop, not a generator over ``replay_events``: the value is read from its closure
    cell (``slot_cell``), not from a dict of every kept slot built per event, and there is
    one generator less per event (``evaluate_trace``: 0.44 → 0.25 s on 200,000 events,
    bench/eval_trace.py).  A ``set`` goes to the store as a copy: ``dict |= mappingproxy`` takes the
    generic mapping path (~2 µs), ``dict |= dict`` the fast one (the copy included ~0.3)."""
    in_flight = {}
    for event in events:
        act, send, receive, choice, cell = steps[event.lifeline]
        kind = event.kind
        if kind == "send":
            in_flight[event.msg] = send()
        elif kind == "recv":
            updates = event.set
            receive(in_flight.pop(event.msg), updates.copy() if updates else None)
        elif kind == "act":
            updates = event.set
            act(updates.copy() if updates else None)
        else:
            choice()
        if only is None or event.lifeline == only:
            yield event, not not cell.cell_contents


def evaluate_trace(trace, guard: str, lifeline: str | None = None, *, prune: bool = True):
    """The guard's value at every event (of ``lifeline`` only, if given), in trace order."""
    results = evaluations(trace, guard, lifeline, prune=prune)
    with collector_paused():
        return list(results)


def recorded_guards(source) -> tuple[tuple[str, str], ...]:
    """(owner, guard text) of every choice that recorded a guard and an outcome, each once,
    in trace order.  A stream is read for it (a fresh reader: ``source`` is left unread)."""
    streamed = not isinstance(source.events, (tuple, list))
    guards: dict = {}
    for event in source.again().events() if streamed else source.events:
        if event.kind == "choice" and event.guard is not None and event.outcome is not None:
            guards.setdefault((event.lifeline, event.guard), None)
    return tuple(guards)


def decisions(source, *, schema=None, guards=None) -> Iterator[tuple[object, bool, bool]]:
    """(choice event, recorded outcome, the monitor's value of its recorded guard) for every
    choice that recorded both — re-checking a run's decisions from its trace alone.  A
    stream is read twice: once for the guards to compile (unless ``recorded_guards`` are
    given), once to replay."""
    schema = schema if schema is not None else source.schema()
    streamed = not isinstance(source.events, (tuple, list))
    guards = {key: check(key[1], schema).primitive
              for key in (recorded_guards(source) if guards is None else guards)}
    program = compile_guards([OwnedFormula(owner, formula) for (owner, _), formula in
                              guards.items()], source.lifelines, predicates=schema.predicates)
    events = source.events() if streamed else source.events
    for event, monitor in replay_events(source.lifelines, source.init, events, program):
        key = (event.lifeline, event.guard)
        if event.kind == "choice" and key in guards and event.outcome is not None:
            yield event, event.outcome, monitor.value(guards[key])
