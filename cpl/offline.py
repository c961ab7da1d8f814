"""Monitoring a recorded trace offline: replay its events through the monitors.

The events of a ``cpl-msc/1`` trace are a linear extension of the causal
order, so each send's metadata exists before its receive reads it — exactly
what a live run hands the receiver.
"""

from __future__ import annotations

from typing import Iterator

from .check import check
from .collector import collector_paused
from .compile import Guard, compile_guards
from .monitor import Monitor


def replay(trace, program) -> Iterator[tuple[object, Monitor]]:
    """Feed every event to its lifeline's monitor; yield (event, monitor) after each."""
    monitors = {name: Monitor(program, name, trace.init.get(name)) for name in trace.lifelines}
    in_flight = {}
    for event in trace.events:
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


def evaluate_trace(trace, guard: str, lifeline: str | None = None, *, prune: bool = True):
    """The guard's value at every event (of ``lifeline`` only, if given), in trace order."""
    checked = check(guard, trace.schema())
    program = compile_guards([Guard(lifeline, checked.primitive)], trace.lifelines, prune=prune)
    slot = {local.lifeline: local.slot_of.get(checked.primitive) for local in program.locals}
    results = []
    with collector_paused():
        for event, monitor in replay(trace, program):
            if lifeline is None or event.lifeline == lifeline:
                results.append((event, bool(monitor.values[slot[event.lifeline]])))
    return results
