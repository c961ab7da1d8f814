"""Under ``cpl verify`` an action's draws are choice points: one MSC per distinct value.

Each case is one action whose every outcome is counted by hand; outcomes that set
the same value are one MSC, and a draw verify cannot enumerate is said, never
"complete".
"""

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
], ids=["randint", "choice", "randrange", "sample", "shuffle", "coin", "coin-0",
        "same-values", "nested", "no-draw"])
def test_each_distinct_value_of_an_action_is_one_msc(action, mscs):
    report = choreo.verify(_one_action(action), detectors=None)
    assert report.complete and report.mscs == mscs and report.runs == mscs


def test_a_float_is_not_enumerable_and_the_report_says_which_action():
    report = choreo.verify(_one_action(lambda v, rng: rng.random() < 0.5), detectors=None)
    assert not report.complete and report.bound == "not enumerable"
    assert "action 'draw' on A called rng.random()" in report.why
    assert report.exit_code == 3
