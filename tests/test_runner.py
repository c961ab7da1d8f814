"""The lifeline engine on its own: a test is one more driver of ``Runner``.

Each test drives runners by hand (deliver, enabled, start/fire) the way the
simulator and a lifeline process do, so the protocol is checked without any
scheduler: event numbering, message ids without a shared counter, non-FIFO
inboxes, decisions read from the local program, and the run-failure family.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import sys

import pytest

import cpl
from cpl.trace import Clocks
from choreo import Choreography
from choreo.execution.runner import Runner
from choreo.execution.plan import prepare
from choreo.execution.simulate import Simulator, simulate


def two_messages():
    """A sends x twice to B (x = 1, then x = 2); B then decides on @A.x."""
    c = Choreography("two_messages")
    A, B = c.lifelines("A", "B")
    x = c.var("x", int)
    c.set(A, x=1)
    c.send(A, B, x, label="first")
    c.set(A, x=2)
    c.send(A, B, x, label="second")
    with c.if_("@A.x == 2", at=B, label="latest?"):
        c.set(B, x=0)
    return c


def runners(c, seed=0):
    plan = prepare(c)
    stores = plan.stores(plan.inputs())
    clocks = Clocks(plan.lifelines)
    return {name: plan.runner(name, stores[name], seed, clocks=clocks) for name in plan.lifelines}


def only(runner: Runner):
    options = runner.enabled()
    assert len(options) == 1, options
    return options[0]


def test_a_driver_sees_events_numbered_per_lifeline_and_messages_named_per_sender():
    r = runners(two_messages())
    a, b = r["A"], r["B"]
    assert b.enabled() == []  # B waits for a message that has not arrived
    sent = []
    while a.enabled():
        event, message = a.fire(only(a))
        if message is not None:
            sent.append((event, message))
    ids = [(e.id, e.msg, m.msg_id) for e, m in sent]
    assert ids == [("A.2", "A:1", "A:1"), ("A.4", "A:2", "A:2")]
    assert a.done and sent[1][0].vc == {"A": 4, "B": 0}


def test_the_inbox_is_not_fifo_a_receive_takes_exactly_its_own_message():
    r = runners(two_messages())
    a, b = r["A"], r["B"]
    messages = [m for m in (a.fire(only(a))[1] for _ in range(4)) if m is not None]
    b.deliver(messages[1])  # the second message overtakes the first
    assert b.enabled() == []  # B's first receive wants the first message only
    b.deliver(messages[0])
    event, _ = b.fire(only(b))
    assert (event.id, event.msg, dict(event.set)) == ("B.1", "A:1", {"x": 1})
    assert event.vc == {"A": 2, "B": 1}
    event, _ = b.fire(only(b))
    assert (event.msg, dict(event.set)) == ("A:2", {"x": 2})
    event, _ = b.fire(only(b))  # the decision: its guard comes from B's local program
    assert (event.kind, event.label, event.guard, event.outcome) == \
        ("choice", "latest?", "@A.x == 2", True)


def test_a_delivered_message_cannot_be_delivered_twice():
    r = runners(two_messages())
    a, b = r["A"], r["B"]
    a.fire(only(a))
    _, message = a.fire(only(a))
    b.deliver(message)
    with pytest.raises(ValueError, match="already holds"):
        b.deliver(message)


def test_two_separate_engines_name_the_same_run_alike():
    """Ids come from the lifeline's own counters, so separate processes agree: however the
    schedule interleaves A and B, every event and message has the same name."""
    def ids(seed):
        result = Simulator(two_messages()).run(seed=seed)
        return [(e.id, e.msg) for e in result.trace.events]
    runs = [ids(seed) for seed in range(6)]
    assert len({tuple(run) for run in runs}) > 1  # the schedules differ
    assert {frozenset(run) for run in runs} == {frozenset([
        ("A.1", None), ("A.2", "A:1"), ("A.3", None), ("A.4", "A:2"),
        ("B.1", "A:1"), ("B.2", "A:2"), ("B.3", None), ("B.4", None)])}


def test_the_simulator_is_a_seeded_choice_among_enabled_events():
    """Driving the runners by hand with the scheduler's rule gives the simulator's trace."""
    c, seed = two_messages(), 5
    r = runners(c, seed)
    rng, events = random.Random(seed), []
    while True:
        options = [o for runner in r.values() for o in runner.enabled()]
        if not options:
            break
        option = options[int(rng.random() * len(options))]
        event, message = option[0].fire(option)
        events.append(event)
        if message is not None:
            r[message.receiver].deliver(message)
    assert tuple(events) == simulate(c, seed=seed).trace.events


def failing(fn, kind=int, **options):
    c = Choreography("failing")
    A, B = c.lifelines("A", "B")
    x = c.var("x", kind)
    c.set(A, x=kind(1) if kind is not object else 1)
    c.send(A, B, x)
    c.act(B, fn, assigns=[x], label="compute x")
    return simulate(c, **options)


def raise_value_error(variables, rng):
    raise ValueError("no model")  # the raising line


def test_an_action_that_raises_fails_the_run_naming_lifeline_event_and_line():
    result = failing(raise_value_error)
    assert result.status == "failed"
    line = raise_value_error.__code__.co_firstlineno + 1
    assert result.error == (f"{os.path.relpath(__file__)}:{line}: error: B, after B.1: "
                            "action 'compute x' raised ValueError: no model")
    assert [e.id for e in result.trace.events] == ["A.1", "A.2", "B.1"]
    assert result.trace.meta["status"] == "failed" and result.trace.meta["error"] == result.error


@pytest.mark.parametrize("fn, expected", [
    (lambda v, rng: sys.exit(0), "called sys.exit(0)"),
    (lambda v, rng: (1, 2), "gave x = (1, 2), which is not int"),
    (lambda v, rng: "three", "gave x = 'three', which is not int"),
])
def test_an_action_that_exits_or_returns_a_wrong_value_fails_the_run(fn, expected):
    result = failing(fn)
    assert result.status == "failed" and expected in result.error
    assert "B, after B.1" in result.error


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_value_the_trace_cannot_hold_fails_the_run(value):
    result = failing(lambda v, rng: value, kind=float)
    assert result.status == "failed" and "which a trace cannot hold" in result.error
    result = failing(lambda v, rng: {"score": value}, kind=object)
    assert result.status == "failed" and "which a trace cannot hold" in result.error


def test_a_predicate_that_raises_fails_the_run_naming_it():
    @cpl.predicate("explodes_in_runner_test")
    def explodes(value):
        raise RuntimeError("bad predicate")

    c = Choreography("predicate")
    A, B = c.lifelines("A", "B")
    x = c.var("x", int)
    c.set(A, x=1)
    c.send(A, B, x)
    with c.if_("explodes_in_runner_test(x)", at=B, label="explode?"):
        c.set(B, x=2)
    result = simulate(c)
    assert result.status == "failed"
    assert ("B, before its first event: cannot evaluate a guard: "
            "predicate 'explodes_in_runner_test' raised RuntimeError: bad predicate"
            ) in result.error


async def slow_double(variables, rng):
    await asyncio.sleep(0)
    return variables["x"] * 2


def async_choreography(fn=slow_double):
    c = Choreography("async")
    A, B = c.lifelines("A", "B")
    x = c.var("x", int)
    c.set(A, x=21)
    c.send(A, B, x)
    c.act(B, fn, assigns=[x], label="double")
    c.result(B, x)
    return c


def test_async_actions_run_from_plain_code():
    assert simulate(async_choreography()).results["B"] == {"x": 42}


def test_async_actions_run_when_called_inside_a_running_loop():
    async def main():
        return simulate(async_choreography())  # a notebook calls the sync API like this
    assert asyncio.run(main()).results["B"] == {"x": 42}


def test_run_async_awaits_actions_on_the_callers_loop():
    loops = []

    async def record_loop(variables, rng):
        loops.append(asyncio.get_running_loop())
        return 1

    async def main():
        result = await Simulator(async_choreography(record_loop)).run_async()
        return result, asyncio.get_running_loop()
    result, loop = asyncio.run(main())
    assert result.ok and loops == [loop]


def test_run_async_of_a_run_without_async_actions():
    result = asyncio.run(Simulator(two_messages()).run_async(seed=2))
    assert result.ok and result.trace.events == simulate(two_messages(), seed=2).trace.events


def test_an_async_action_that_raises_fails_the_run():
    async def broken(variables, rng):
        await asyncio.sleep(0)
        raise ConnectionError("model server gone")
    result = simulate(async_choreography(broken))
    assert result.status == "failed"
    assert "B, after B.1: action 'double' raised ConnectionError: model server gone" in result.error


def test_timeout_stops_an_action_that_hangs():
    async def hangs(variables, rng):
        await asyncio.sleep(60)
    result = simulate(async_choreography(hangs), timeout=0.3)
    assert result.status == "timeout" and "--timeout" in result.error


def test_ctrl_c_inside_an_action_ends_the_run_as_interrupted_with_its_trace():
    def interrupted(variables, rng):
        raise KeyboardInterrupt
    result = simulate(async_choreography(interrupted))
    assert result.status == "interrupted"
    assert result.trace.meta["status"] == "interrupted" and len(result.trace.events) == 3


def test_every_event_goes_to_the_sink_as_it_happens():
    seen = []
    result = Simulator(two_messages()).run(seed=1, record=False, sink=seen.append)
    assert result.ok and result.trace.events == ()
    assert tuple(seen) == simulate(two_messages(), seed=1).trace.events


def test_an_action_of_two_variables_must_return_two_values():
    c = Choreography("arity")
    A, B = c.lifelines("A", "B")
    x, y = c.var("x", int), c.var("y", int)
    c.act(A, lambda v, rng: (1, 2, 3), assigns=[x, y], label="pair")
    result = simulate(c)
    assert result.status == "failed" and "A, before its first event: action 'pair' returned " \
        "(1, 2, 3); it assigns x, y, so it must return a tuple of 2 values or a dict of them" \
        in result.error
