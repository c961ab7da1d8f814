"""Operation records from traces (cpl.anomalies.extract): on the scenario traces of
test_anomaly_guards.py the catalog's detector fires on the unguarded run, with the
spec's witness, and nothing fires on the guarded one; traces that do not follow the
convention — missing fields, wrong types, huge names, real runs — give no records or
harmless ones, never an error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, strategies as st

from cpl.anomalies.detectors import (
    Cascade, LostUpdate, Phantom, Reordering, Residue, Stale, cascade_residue, flat_projection)
from cpl.anomalies.extract import DETECTORS, detect, detect_history, extract
from cpl.anomalies.records import OpRecord, history_from_json, history_to_json
from cpl.trace import Event, Trace, load_trace
from test_anomaly_guards import SCENARIOS, s1, s5, s6, s7, s10

FIRES = {  # scenario → (detector, witnesses) on the unguarded run
    "S1": ("stale_generation", [Stale(2, 1, "c1")]),
    "S1b": ("stale_generation", [Stale(2, 1, "c1")]),
    "S1c": ("stale_generation", [Stale(3, 1, "c1")]),  # j = the first write (ABA)
    "S5": ("phantom_tool", [Phantom(1, "t1")]),
    "S6": ("causal_cascade", [Cascade(2, 1)]),
    "S10": ("lost_update", [LostUpdate(1, 2, "todos")]),
}


@pytest.mark.parametrize("name", sorted(FIRES))
def test_the_detector_fires_unguarded_with_the_spec_witness_and_nothing_guarded(name):
    detector, witnesses = FIRES[name]
    unguarded = detect(SCENARIOS[name](False))
    assert unguarded[detector] == witnesses
    assert all(not found for other, found in unguarded.items() if other != detector)
    assert all(not found for found in detect(SCENARIOS[name](True)).values())


def test_a6_fires_for_gather_and_not_for_the_issuer_or_the_sink():
    assert detect(s7("gather"))["tool_effect_reordering"] == [Reordering(1)]
    for mode in ("issuer", "sink"):
        assert all(not found for found in detect(s7(mode)).values()), mode


def test_signature_change_leaves_definition_2_silent():
    assert all(not found for found in detect(s5(False, signature=True)).values())


def test_detect_names_the_five_catalog_detectors():
    assert DETECTORS == ("stale_generation", "phantom_tool", "causal_cascade",
                         "tool_effect_reordering", "lost_update")
    assert tuple(detect(s1())) == DETECTORS


def test_s1_records_are_the_tlc_witness():
    history = extract(s1(False))
    assert history.records == (
        OpRecord("a1", write_set={"c1"}, write_values={"c1": "v1"}, read_time=0, write_time=1),
        OpRecord("a2", read_set={"c1"}, read_values={"c1": None}, read_time=0, write_time=2))
    assert history.events == ("Store.7", "Store.11")
    retry = extract(s1(True)).records[1]
    assert (retry.read_time, retry.read_values) == (1, {"c1": "v1"})  # re-read after the 409


def test_s5_records_registry_snapshots_and_the_planned_tool():
    record = extract(s5(False)).records[0]
    assert (record.read_registry, record.planned_tool, record.write_registry) == (
        {"t1", "t2"}, "t1", {"t2"})
    guarded = extract(s5(True)).records
    assert len(guarded) == 1 and guarded[0].planned_tool == "t2"


def test_s6_records_ids_preds_aborts_and_the_residue():
    history = extract(s6(False))
    assert history.op_ids == ("p1", "j1")
    assert [(r.aborted, r.preds) for r in history.records] == [(True, set()), (False, {1})]
    assert history.describe(2) == "#2 (op j1, agent Executor, event Store.9)"
    assert cascade_residue(flat_projection(history.records)) == [Residue(1, "plan")]
    assert [r.aborted for r in extract(s6(True)).records] == [True, True]


def test_s7_gather_io_and_co():
    (record,) = extract(s7("gather")).records
    assert record.io == (("c1", 1), ("c2", 2)) and record.co == (("c2", 2), ("c1", 1))
    assert extract(s7("gather")).op_ids == ("op1",)


def test_s10_records_the_clobber():
    history = extract(s10(False)).records
    assert [r.write_values for r in history] == [{"todos": ["a", "b"]}, {"todos": None}]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_extracted_records_round_trip_through_json(name):
    for guarded in (True, False):
        history = extract(SCENARIOS[name](guarded)).records
        text = json.dumps(history_to_json(history))
        assert history_from_json(json.loads(text)) == history
        assert detect_history(history) == detect(SCENARIOS[name](guarded))


# ------------------------------------------------------------ hostile traces

def trace_of(*assignments, lifeline="Store", init=None):
    events = [Event(f"e{n}", lifeline, "act", set=assigned)
              for n, assigned in enumerate(assignments)]
    return Trace(lifelines=[lifeline], init=init or {}, events=events)


HUGE = "a" * 100_000


@pytest.mark.parametrize("assignments", [
    [{"op": "serve"}, {"op": "apply"}],  # no op_agent, no writer
    [{"op": 5, "op_agent": "a"}, {"op": ["apply"], "writer": "a"}],
    [{"op": "serve", "op_agent": ["a"]}, {"op": "apply", "writer": {"a": 1}}],
    [{"op": "apply", "writer": ""}],
    [{"op": "apply", "writer": HUGE}],
    [{"op": "serve", "op_agent": HUGE, f"rd_{HUGE}_c": 1}],
    [{"op": "commit_req", "req_agent": None}, {"op": "commit_req"}],
    [{"applied_op": "x", "applied_idx": "1"}, {"applied_op": "x", "applied_idx": True},
     {"applied_op": "", "applied_idx": 1}, {"applied_op": HUGE, "applied_idx": 2},
     {"applied_op": 3, "applied_idx": 3}],
    [{"aborted_": True, "committed_": True, "w_": True, "has_": True, "rd__": 1}],
])
def test_traces_off_the_convention_give_no_records(assignments):
    assert extract(trace_of(*assignments)).records == ()
    assert all(not found for found in detect(trace_of(*assignments)).values())


def test_partial_fields_give_harmless_records():
    history = extract(trace_of(
        {"op": "apply", "writer": "a", "w_c": "yes", "w_d": True, "req_tool": 7,
         "committed_p": True, "committed_q": True, "req_dep_zz": True, "req_dep_p": True,
         f"has_{HUGE}": True, "has_t": 1, "applied_op": "p", "applied_idx": 1},
        {"op": "apply", "writer": "b", "w_d": True, "val_d": [1, {"x": None}]}))
    first, second = history.records
    assert first.write_set == {"d"} and first.write_values == {"d": None}
    assert first.planned_tool is None and first.write_registry == frozenset()
    assert first.preds == frozenset()  # itself and an unknown op are not predecessors
    assert first.co == (("p#1", 1),) and history.op_ids == ("p", None)
    assert second.write_values == {"d": [1, {"x": None}]}
    assert detect(trace_of({"op": "apply", "writer": "a"}))["lost_update"] == []


keys = st.sampled_from([
    "op", "op_agent", "writer", "req_agent", "w_c", "val_c", "rd_a_c", "rd_b_c", "has_t",
    "req_tool", "committed_p", "committed_q", "aborted_p", "req_dep_p", "applied_op",
    "applied_idx", "applied"])
values = st.sampled_from(["serve", "commit_req", "apply", "abort", "a", "b", "c", "p", "q",
                          "t", "", True, False, 0, 1, 2, -1, 1.5, None, [1], {"k": "v"}])


@given(st.lists(st.tuples(st.sampled_from(["S", "R"]),
                          st.dictionaries(keys, values, max_size=6)), max_size=40))
def test_random_convention_soup_never_crashes(steps):
    trace = Trace(lifelines=["S", "R"], events=[
        Event(f"e{n}", lifeline, "act", set=assigned)
        for n, (lifeline, assigned) in enumerate(steps)])
    history = extract(trace)
    assert history_from_json(json.loads(json.dumps(history_to_json(history.records)))) == \
        history.records
    for found in detect(trace).values():
        for witness in found:
            for field in ("i", "j", "k", "m", "p"):
                position = getattr(witness, field, 1)
                assert 1 <= position <= len(history.records)


def test_real_traces_that_ignore_the_convention_give_nothing(tmp_path):
    assert extract(load_trace("examples/traces/fig2.json")).records == ()
    path = tmp_path / "review.json"
    result = subprocess.run([sys.executable, "-m", "cpl_cli", "run", "examples/code_review.py",
                             "--sim", "--seed", "3", "--trace", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert all(not found for found in detect(load_trace(path)).values())
