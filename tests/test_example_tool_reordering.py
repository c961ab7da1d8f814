"""examples/anomalies/tool_reordering.py: the A6 prevention twins.

Over 200 explored runs the unguarded ToolNode lets the World apply the batch's
effects out of issuance order (the catalog's detector fires) and its invariant
``live_ok`` breaks; the guarded one (G6_sink at the World) never does, and
still applies effects.  The guarded twin also runs over ZeroMQ, and every
decision of that trace re-checks.
"""

from __future__ import annotations

import json

import pytest

from choreo import load_one
from choreo.exploration.explore import schedule_of
from choreo.execution.simulate import Simulator
from choreo_util import cpl
from cpl.anomalies import detect, guards
from cpl.trace import load_trace
from runtime_util import EXAMPLES, check_semantics, run_cpl

EXAMPLE = str(EXAMPLES / "anomalies" / "tool_reordering.py")
DETECTOR = "tool_effect_reordering"


@pytest.mark.parametrize("name", ["unguarded", "guarded"])
def test_both_twins_validate(name):
    result = cpl("validate", EXAMPLE, "--name", name)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_twins_differ_only_in_the_worlds_guard():
    twins = {name: cpl("show", EXAMPLE, "--name", name).stdout for name in ("unguarded", "guarded")}
    sink = guards.g6_sink("deploy", 3).text
    canonical = cpl("check", sink).stdout.strip()
    assert canonical in twins["guarded"]
    assert twins["guarded"].replace(canonical, 'req_op == "deploy"') == twins["unguarded"]


def _explore(name: str) -> dict:
    result = cpl("explore", EXAMPLE, "--name", name, "--runs", "200", "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_explore_unguarded_reorders_guarded_never_and_still_commits():
    unguarded, guarded = _explore("unguarded"), _explore("guarded")
    for found in (unguarded, guarded):
        assert found["runs"] == 200 and found["failed"] == 0, found["statuses"]
        assert found["work"]["commits"] > 0
        assert {"aborts", "retries"} <= set(found["work"])
    assert unguarded["anomalies"][DETECTOR] > 0
    assert guarded["anomalies"][DETECTOR] == 0
    assert guarded["work"]["retries"] > 0  # early effects were turned away, not reordered
    assert not any(guarded["anomalies"].values())  # no other detector fires either


def test_the_harm_live_traffic_before_the_database():
    """live_ok (the World's invariant) breaks only without the guard; a reordered run is
    exactly what the detector reports, and the guarded World applies in issuance order."""
    broken = {}
    for name in ("unguarded", "guarded"):
        simulator = Simulator(load_one(EXAMPLE, name))
        broken[name] = 0
        for seed in range(40):
            run = simulator.run(seed=seed, schedule=schedule_of(seed))
            assert run.ok, run.error
            order = [e.set["applied_idx"] for e in run.trace.events
                     if e.set and "applied_idx" in e.set]
            assert bool(detect(run.trace)[DETECTOR]) == (order != sorted(order))
            broken[name] += run.results["World"]["live_ok"] is False
            if name == "guarded":
                assert order == list(range(1, len(order) + 1))
    assert broken["unguarded"] > 0 and broken["guarded"] == 0


def test_guarded_over_zeromq_rechecks(tmp_path):
    trace_path = tmp_path / "guarded.json"
    code, out, err, _ = run_cpl(tmp_path, "run", EXAMPLE, "--name", "guarded", "--timeout", "60",
                                "--trace", str(trace_path), timeout=90)
    assert code == 0, err
    trace = load_trace(trace_path)
    assert trace.meta["status"] == "ok" and trace.meta["processes"] is True
    assert check_semantics(trace) > 0
    assert not detect(trace)[DETECTOR]
    assert trace.meta["results"]["World"]["live_ok"] is True
    assert "World:" in out
    result = cpl("eval", str(trace_path))
    assert result.returncode == 0, result.stdout + result.stderr
