"""The one loop every driver of a Runner shares (``choreo.execution.drive``), on its own.

The simulator, the lifeline process and the test harness are its users and
their tests cover it end to end; these pin down the parts a driver chooses:
where messages go (delivered here or posted), stopping between steps, an
action awaited in-line, and an action overlapped on a ``Background`` while the
lifeline's other threads go on.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from choreo import Choreography
from choreo.execution.actions import Background
from choreo.execution.drive import Driver, complete
from choreo.execution.plan import prepare
from choreo.execution.status import RunFailure


def first(options):
    return options[0]


def runners(c, *names):
    plan = prepare(c)
    stores = plan.stores(plan.inputs())
    return [plan.runner(name, stores[name], 0) for name in names or plan.lifelines]


def relay():
    """A sends x to B, B doubles it (async) and sends it back."""
    async def double(variables, rng):
        await asyncio.sleep(0)
        return variables["x"] * 2

    c = Choreography("relay")
    A, B = c.lifelines("A", "B")
    x = c.var("x", int)
    c.set(A, x=21)
    c.send(A, B, x, label="there")
    c.act(B, double, assigns=[x], label="double")
    c.send(B, A, x, label="back")
    return c


def labels(events) -> list[str]:
    return [f"{e.lifeline}:{e.kind}:{e.label}" for e in events]


def test_messages_between_runners_driven_together_are_delivered_and_others_posted():
    events, posted = [], []
    a, b = runners(relay())
    together = Driver([a, b], first, events.append, posted.append)
    assert complete(together.run(), lambda pending: asyncio.run(pending)) is False
    assert posted == [] and a.done and b.done and together.steps == len(events) == 6
    assert dict(a.store) == {"x": 42}

    events, posted = [], []
    (a,) = runners(relay(), "A")
    alone = Driver([a], first, events.append, posted.append)
    assert complete(alone.run()) is False  # A now waits for "back": nothing can happen
    assert labels(events) == ["A:act:set x=21", "A:send:there"]
    assert [(m.receiver, m.label, m.values) for m in posted] == [("B", "there", {"x": 21})]


def test_until_stops_between_steps_and_a_later_run_goes_on_from_there():
    events = []
    a, b = runners(relay())
    driver = Driver([a, b], first, events.append)
    assert complete(driver.run(lambda steps: steps == 2),
                    lambda pending: asyncio.run(pending)) is True
    assert driver.steps == len(events) == 2
    assert complete(driver.run(), lambda pending: asyncio.run(pending)) is False
    assert driver.steps == len(events) == 6 and b.done


def test_an_action_awaited_in_line_is_yielded_and_its_error_fails_the_run():
    a, b = runners(relay())
    run = Driver([a, b], first, lambda event: None).run()
    pending = next(run)  # A's two events are taken, then B's action is handed out
    assert asyncio.iscoroutine(pending)
    pending.close()
    with pytest.raises(RunFailure, match="action 'double' raised ConnectionError: gone"):
        run.throw(ConnectionError("gone"))


def overlapping(gate: threading.Event):
    async def slow(variables, rng):
        await asyncio.to_thread(gate.wait, 10)
        return 7

    c = Choreography("overlap")
    A, B = c.lifelines("A", "B")
    x, y = c.var("x", int), c.var("y", int)
    with c.parallel():
        with c.thread():
            c.act(A, slow, assigns=[x], label="slow")
        with c.thread():
            c.set(A, y=1)
            c.send(A, B, y, label="meanwhile")
    return c


def test_on_a_background_the_action_overlaps_the_other_threads_and_is_taken_when_done():
    gate, events, posted = threading.Event(), [], []
    (a,) = runners(overlapping(gate), "A")
    with Background() as background:
        driver = Driver([a], first, events.append, posted.append, background=background)
        assert complete(driver.run()) is False  # only the slow action is left, under way
        assert labels(events) == ["A:act:set y=1", "A:send:meanwhile"]
        assert len(posted) == 1 and len(driver.under_way) == 1 and not a.done
        gate.set()
        (option, future), = driver.under_way.values()
        deadline = time.monotonic() + 10
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert complete(driver.run()) is False
    assert labels(events)[-1] == "A:act:slow" and events[-1].set == {"x": 7}
    assert a.done and not driver.under_way and driver.steps == 3
