"""Under ``cpl verify`` an action's draws are choice points: one MSC per distinct value.

Each case is one action whose every outcome is counted by hand; outcomes that set
the same value are one MSC, and a draw verify cannot enumerate is said, never
"complete".
"""

import asyncio
import random
import time

import pytest

import choreo
from choreo import Choreography, coin


def _one_action(action) -> Choreography:
    c = Choreography("draws")
    a, b = c.lifelines("A", "B")
    x = c.var("x", object)
    c.act(a, action, assigns=[x], label="draw")
    c.send(a, b, x)
    return c


@pytest.mark.parametrize("action,mscs", [
    (lambda v, rng: rng.randint(1, 3), 3),
    (lambda v, rng: rng.choice("abcd"), 4),
    (lambda v, rng: rng.randrange(0, 10, 5), 2),
    (lambda v, rng: rng.sample([1, 2, 3], 2), 6),  # ordered pairs of three
    (lambda v, rng: (lambda items: (rng.shuffle(items), items)[1])([1, 2, 3]), 6),
    (lambda v, rng: coin(rng, 0.3), 2),
    (lambda v, rng: coin(rng, 0), 1),  # never: no draw
    (lambda v, rng: rng.randint(0, 3) > 1, 2),  # four outcomes, two values
    (lambda v, rng: [rng.randint(0, 1) for _ in range(rng.randint(1, 2))], 6),  # nested
    (lambda v, rng: 7, 1),
    (lambda v, rng: rng.sample(range(25), 2), 25 * 24),  # Random.sample's set method past 21
    (lambda v, rng: rng.choice([(1, 2), [1, 2]]), 2),  # written alike, but not alike
    (lambda v, rng: rng.choice([{"a": 1, "b": 2}, {"b": 2, "a": 1}]), 2),  # iterated apart
    (lambda v, rng: coin(rng, float("nan")), 1),  # never, as rng.random() < nan
], ids=["randint", "choice", "randrange", "sample", "shuffle", "coin", "coin-0",
        "same-values", "nested", "no-draw", "sample-25", "tuple-list", "dict-order", "coin-nan"])
def test_each_distinct_value_of_an_action_is_one_msc(action, mscs):
    report = choreo.verify(_one_action(action), detectors=None)
    assert report.complete and report.mscs == mscs and report.runs == mscs


def test_a_float_is_not_enumerable_and_the_report_says_which_action():
    report = choreo.verify(_one_action(lambda v, rng: rng.random() < 0.5), detectors=None)
    assert not report.complete and report.bound == "not enumerable"
    assert "action 'draw' on A called rng.random()" in report.why
    assert report.exit_code == 3


def test_the_calls_that_enumerate_an_action_change_nothing_of_the_run():
    """An action that changes a list in place: the verifier's calls get a copy, and each
    run its own list (init values are copied per store), so the run sees one append."""
    c = Choreography("grow")
    a, b = c.lifelines("A", "B")
    c.var("items", object, init=[])
    n = c.var("n", int)

    def grow(variables, rng):
        variables["items"].append(rng.choice([1, 2]))
        return len(variables["items"])
    c.act(a, grow, assigns=[n], label="grow")
    c.send(a, b, n)
    received = []
    report = choreo.verify(c, detectors=None, each=lambda trace: received.extend(
        event.set["n"] for event in trace.events if event.kind == "recv"))
    assert report.complete and report.mscs == 1 and received == [1]


@pytest.mark.parametrize("error", [BaseException, asyncio.CancelledError])
def test_an_action_raising_a_base_exception_is_a_failed_run(error):
    def action(variables, rng):
        raise error("raised")
    report = choreo.verify(_one_action(action), detectors=None)
    assert report.statuses == {"failed": 1} and report.exit_code == 1


@pytest.mark.parametrize("action", [
    lambda v, rng: random.random() < 0.5,  # the random module's generator, not rng
    lambda v, rng: time.perf_counter_ns(),
], ids=["random-module", "clock"])
def test_an_action_that_is_not_a_function_of_its_rng_is_named(action):
    from choreo.exploration.reduction import NotDeterministic
    with pytest.raises(NotDeterministic, match="action 'draw' on A gave .* for the same draws"):
        choreo.verify(_one_action(action), detectors=None)


def test_a_sampled_draw_takes_any_size():
    report = choreo.verify(_one_action(lambda v, rng: rng.randint(0, 10 ** 400) % 7),
                           detectors=None, sample_domains=True)
    assert report.statuses == {"ok": 1} and report.bound == "sampled"
