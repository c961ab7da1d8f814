"""Random choreographies: what validates must run to the end, and every decision must re-check.

Projection promises that a valid choreography (every lifeline whose
behaviour depends on a decision learns it) runs without deadlock under any
delivery order; the monitors promise that every recorded outcome is the
guard's meaning on the trace.  Nested ifs, loops and parallel threads of one
lifeline, under all three control policies, exercise both.
"""

import random

import pytest

import choreo
from choreo import Choreography
from choreo.execution.simulate import simulate
from cpl.semantics.reference import recheck
from cpl.trace.files import dumps_trace, loads_trace

NAMES = ["A", "B", "C", "D"]


def _inc(name):
    def inc(variables, rng):
        return variables[name] + 1
    return inc


def _coin(variables, rng):
    return rng.random() < 0.5


def build(seed: int, control: str) -> Choreography:
    rng = random.Random(seed)
    c = Choreography(f"random{seed}", control=control)
    c.lifelines(*NAMES)
    x = c.var("x", int, init=0)
    flag = c.var("flag", bool, init=False)
    loops = []

    def block(depth: int, length: int) -> None:
        for _ in range(length):
            r = rng.random()
            if depth >= 3 or r < 0.35:
                c.send(*rng.sample(NAMES, 2), x)
            elif r < 0.5:
                if rng.random() < 0.5:
                    c.act(rng.choice(NAMES), _inc("x"), assigns=[x], reads=[x])
                else:
                    c.act(rng.choice(NAMES), _coin, assigns=[flag])
            elif r < 0.75:
                other = rng.choice(NAMES)
                guard = rng.choice(["x > 1", "flag", f"@{other}.x >= 1",
                                    f"@{other}(x > 0 S flag)", "x == 0 || flag"])
                with c.if_(guard, at=rng.choice(NAMES)):
                    block(depth + 1, rng.randint(0, 3))
                if rng.random() < 0.6:
                    with c.else_():
                        block(depth + 1, rng.randint(0, 3))
            elif r < 0.87:
                owner = rng.choice(NAMES)
                counter = c.var(f"k{len(loops)}", int, init=0)  # only the owner counts: it ends
                loops.append(counter)
                with c.while_(f"{counter.name} < 2", at=owner):
                    c.act(owner, _inc(counter.name), assigns=[counter], reads=[counter])
                    block(depth + 1, rng.randint(1, 3))
            else:
                with c.parallel():
                    for _ in range(rng.randint(2, 3)):
                        with c.thread():
                            block(depth + 1, rng.randint(1, 3))

    block(0, rng.randint(2, 6))
    return c


@pytest.mark.parametrize("control", ["minimal", "broadcast", "none"])
def test_valid_random_choreographies_run_to_the_end_and_recheck(control):
    valid = 0
    for seed in range(60):
        c = build(seed, control)
        if not choreo.analysis.validate(c).ok:
            continue
        valid += 1
        for run_seed in range(2):
            result = simulate(c, seed=run_seed, max_steps=20000)
            assert result.ok, f"choreography seed {seed}, run seed {run_seed}: {result.error}"
            trace = loads_trace(dumps_trace(result.trace))
            wrong = [(e.id, e.guard) for e, recorded, value in recheck(trace) if recorded != value]
            assert not wrong, f"choreography seed {seed}, run seed {run_seed}: {wrong}"
    assert valid >= 5


def test_minimal_control_makes_every_random_choreography_know_its_choices():
    for seed in range(60):
        report = choreo.analysis.validate(build(seed, "minimal"))
        assert "knowledge-of-choice" not in {e.kind for e in report.errors}
