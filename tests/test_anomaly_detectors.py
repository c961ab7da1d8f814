"""The catalog's detectors (cpl.anomalies.detectors) on hand-made histories: the spec's
minimal witnesses (TLC witnesses S1, S5, S6, S7 and the S10 lost update) fire with the
witness the spec names; the near misses the definitions exclude do not; OpRecord's JSON
form round-trips and refuses hostile input, naming the field."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given, strategies as st

from cpl.anomalies.detectors import (
    CATALOG, Cascade, LostUpdate, Phantom, Reordering, Residue, Stale, cascade_residue,
    causal_cascade, flat_projection, lost_update, phantom_tool, same, stale_generation,
    tool_effect_reordering, witness_json)
from cpl.anomalies.records import (
    MAX_ITEMS, OpRecord, RecordError, history_from_json, history_to_json)

# ------------------------------------------------------------------- A1

# S1, the TLC witness (anomalies.md §3.1(b)): a1 writes c1 = v1 at time 1 while a2,
# which read c1 = NULL at time 0, generates; a2 then commits read-only at time 2.
S1 = (OpRecord("a1", write_set={"c1"}, write_values={"c1": "v1"}, read_time=0, write_time=1),
      OpRecord("a2", read_set={"c1"}, read_values={"c1": None}, read_time=0, write_time=2))


def test_a1_fires_on_the_tlc_witness_with_i_2_j_1():
    assert stale_generation(S1) == [Stale(i=2, j=1, cell="c1")]


def test_a1_guarded_retry_reads_at_time_1_and_does_not_fire():
    retry = (S1[0], OpRecord("a2", read_set={"c1"}, read_values={"c1": "v1"}, read_time=1,
                             write_time=2))
    assert stale_generation(retry) == []


def test_a1_is_cross_agent_only():
    same_agent = (S1[0], OpRecord("a1", read_set={"c1"}, read_time=0, write_time=2))
    assert stale_generation(same_agent) == []


def test_a1_needs_a_different_value_and_the_right_order():
    equal = (OpRecord("a1", write_set={"c1"}, write_values={"c1": "v"}, write_time=1),
             OpRecord("a2", read_set={"c1"}, read_values={"c1": "v"}, read_time=0, write_time=2))
    assert stale_generation(equal) == []
    # the write commits after the reader: not intervening
    late = (OpRecord("a2", read_set={"c1"}, read_time=0, write_time=1),
            OpRecord("a1", write_set={"c1"}, write_values={"c1": "v"}, write_time=2))
    assert stale_generation(late) == []
    # values compare without coercion: 1 and true differ, 1 and 1.0 do not
    coerced = (OpRecord("a1", write_set={"c1"}, write_values={"c1": True}, write_time=1),
               OpRecord("a2", read_set={"c1"}, read_values={"c1": 1}, write_time=2))
    assert stale_generation(coerced) == [Stale(2, 1, "c1")]
    numeric = (OpRecord("a1", write_set={"c1"}, write_values={"c1": 1.0}, write_time=1),
               OpRecord("a2", read_set={"c1"}, read_values={"c1": 1}, write_time=2))
    assert stale_generation(numeric) == []


def test_a1_aba_names_the_first_write_only():
    aba = (OpRecord("a1", write_set={"c1"}, write_values={"c1": "y"}, write_time=1),
           OpRecord("a1", write_set={"c1"}, write_values={"c1": "x"}, read_time=1, write_time=2),
           OpRecord("a2", read_set={"c1"}, read_values={"c1": "x"}, read_time=0, write_time=3))
    assert stale_generation(aba) == [Stale(3, 1, "c1")]


# ------------------------------------------------------------------- A2

def test_a2_fires_on_the_tlc_witness():
    witness = [OpRecord("a1", read_registry={"t1", "t2"}, planned_tool="t1",
                        write_registry={"t2"}, write_time=1)]
    assert phantom_tool(witness) == [Phantom(1, "t1")]


@pytest.mark.parametrize("record", [
    # removed and re-added before commit: membership unchanged
    OpRecord("a1", read_registry={"t1", "t2"}, planned_tool="t1", write_registry={"t1", "t2"}),
    # S5b: a signature change leaves membership alone, so Definition 2 is silent
    OpRecord("a1", read_registry={"t1", "t2"}, planned_tool="t1", write_registry={"t1", "t2"}),
    # a tool never seen at read
    OpRecord("a1", read_registry={"t2"}, planned_tool="t1", write_registry={"t2"}),
    # no tool planned
    OpRecord("a1", read_registry={"t1"}, planned_tool=None, write_registry=set()),
])
def test_a2_does_not_fire_on_what_definition_2_excludes(record):
    assert phantom_tool([record]) == []


# ------------------------------------------------------------------- A3

def s6(cascaded: bool):
    p1 = OpRecord("Planner", write_set={"plan"}, write_values={"plan": "v1"}, write_time=1,
                  aborted=True)
    j1 = OpRecord("Executor", read_set={"plan"}, read_values={"plan": "v1"}, read_time=1,
                  write_set={"result"}, write_values={"result": "r1"}, write_time=2,
                  preds={1}, aborted=cascaded)
    return (p1, j1)


def test_a3_fires_on_the_two_operation_witness_and_not_after_the_cascade():
    assert causal_cascade(s6(cascaded=False)) == [Cascade(j=2, p=1)]
    assert causal_cascade(s6(cascaded=True)) == []


def test_a3_residue_fires_on_the_flat_projection():
    flat = flat_projection(s6(cascaded=False))
    assert [record.agent for record in flat] == ["Executor"]
    assert causal_cascade(flat) == []
    assert cascade_residue(flat) == [Residue(j=1, cell="plan")]
    # with p1 surviving, its write supports the read
    survived = (attrs.evolve(s6(False)[0], aborted=False), s6(False)[1])
    assert cascade_residue(survived) == []


def test_a3_residue_over_approximates_initial_values_and_ignores_null():
    initial = [OpRecord("a", read_set={"c"}, read_values={"c": "seeded"}, write_time=1)]
    assert cascade_residue(initial) == [Residue(1, "c")]
    assert cascade_residue([OpRecord("a", read_set={"c"}, write_time=1)]) == []


def test_a3_ignores_positions_outside_the_log():
    assert causal_cascade([OpRecord("a", preds={5}, write_time=1)]) == []


# ------------------------------------------------------------------- A6

IO = (("c1", "v1"), ("c2", "v1"))


def test_a6_fires_on_the_tlc_witness():
    assert tool_effect_reordering([OpRecord("a1", io=IO, co=IO[::-1], write_time=1)]) == \
        [Reordering(1)]


@pytest.mark.parametrize("io,co", [
    (IO, IO),  # equal orders
    (IO[:1], IO[:1]),  # one effect cannot be reordered
    (IO, IO[:1]),  # an effect lost: not a permutation
    (IO, (("c2", "v1"), ("c1", "v2"))),  # a different value: not a permutation
    ((("c1", 1), ("c1", 1)), (("c1", 1), ("c1", True))),  # no coercion in multiplicities
])
def test_a6_does_not_fire_without_a_true_permutation(io, co):
    assert tool_effect_reordering([OpRecord("a1", io=io, co=co, write_time=1)]) == []


# ----------------------------------------------------------- lost update

def s10(reporter_value, reporter_reads=False):
    planner = OpRecord("Planner", write_set={"todos"}, write_values={"todos": ["a", "b"]},
                       write_time=1)
    reporter = OpRecord("Reporter", write_set={"todos"}, write_values={"todos": reporter_value},
                        read_set={"todos"} if reporter_reads else set(),
                        read_values={"todos": ["a", "b"]} if reporter_reads else {},
                        read_time=1, write_time=2)
    return (planner, reporter)


def test_lost_update_fires_on_the_deerflow_clobber():
    assert lost_update(s10(None)) == [LostUpdate(k=1, m=2, cell="todos")]


def test_lost_update_is_silent_when_the_contribution_survives_or_was_read():
    assert lost_update(s10(["a", "b", "c"])) == []  # a reducer merged it
    assert lost_update(s10(None, reporter_reads=True)) == []  # read the head first
    assert lost_update(s10(None), final={"todos": ["a", "b"]}) == []  # final value given


def test_lost_update_cross_agent_by_default():
    own = (OpRecord("a", write_set={"x"}, write_values={"x": 1}, write_time=1),
           OpRecord("a", write_set={"x"}, write_values={"x": 2}, write_time=2))
    assert lost_update(own) == []
    assert lost_update(own, same_agent=True) == [LostUpdate(1, 2, "x")]


def test_lost_update_scalar_and_null_contributions():
    blind = (OpRecord("a", write_set={"x"}, write_values={"x": 1}, write_time=1),
             OpRecord("b", write_set={"x"}, write_values={"x": 2}, write_time=2))
    assert lost_update(blind) == [LostUpdate(1, 2, "x")]
    null_first = (OpRecord("a", write_set={"x"}, write_values={"x": None}, write_time=1),
                  blind[1])
    assert lost_update(null_first) == []


# ------------------------------------------------------------- witnesses

def test_witnesses_print_as_json():
    assert witness_json(Stale(2, 1, "c1")) == {"kind": "Stale", "i": 2, "j": 1, "cell": "c1"}
    assert set(CATALOG) == {"stale_generation", "phantom_tool", "causal_cascade",
                            "tool_effect_reordering", "lost_update"}


def test_same_compares_deep_values_without_recursion_limits():
    deep_a = deep_b = 0
    for _ in range(5000):
        deep_a, deep_b = [deep_a], [deep_b]
    assert same(deep_a, deep_b)
    assert not same([1, {"a": True}], [1, {"a": 1}])
    assert same({"a": [1, 2.0]}, {"a": [1.0, 2]})


# ------------------------------------------------------------------ JSON

names = st.text("abc_1", min_size=1, max_size=4)
values = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3),
                   st.lists(st.integers(0, 3), max_size=3))


@st.composite
def records(draw):
    read, write = draw(st.frozensets(names, max_size=3)), draw(st.frozensets(names, max_size=3))
    pairs = st.lists(st.tuples(names, values), max_size=3)
    return OpRecord(
        draw(names), read, {c: draw(values) for c in read}, draw(st.frozensets(names)),
        draw(st.none() | names), draw(st.integers(0, 9)), write,
        {c: draw(values) for c in write}, draw(st.frozensets(names)), draw(st.integers(0, 9)),
        draw(pairs), draw(pairs), draw(st.booleans()),
        draw(st.frozensets(st.integers(1, 9), max_size=3)))


@given(st.lists(records(), max_size=4))
def test_json_round_trips(history):
    text = json.dumps(history_to_json(history))
    assert history_from_json(json.loads(text)) == tuple(history)


GOOD = S1[1].to_json()


@pytest.mark.parametrize("change,message", [
    ({"agent": 7}, "agent must be a string, not a number"),
    ({"agent": ""}, "agent must be a name"),
    ({"agent": "a" * 201}, "agent must be a name"),
    ({"read_set": "c1"}, "read_set must be a list, not a string"),
    ({"read_set": ["c1", "c1"]}, "read_set lists a name twice"),
    ({"read_set": [None]}, "read_set item must be a string"),
    ({"read_values": []}, "read_values must be an object"),
    ({"read_values": {"c1": float("nan")}}, "read_values['c1'] is nan"),
    ({"planned_tool": ["t1"]}, "planned_tool must be a string, not a list"),
    ({"read_time": 1.5}, "read_time must be an integer"),
    ({"read_time": True}, "read_time must be an integer, not a boolean"),
    ({"write_time": -1}, "write_time must be between 0"),
    ({"write_time": 2**60}, "write_time must be between 0"),
    ({"io": [["c1"]]}, "io entry 1 must be a [cell, value] pair"),
    ({"co": {"c1": 1}}, "co must be a list"),
    ({"aborted": 0}, "aborted must be true or false, not a number"),
    ({"preds": [0]}, "preds holds positions in the log, which start at 1"),
    ({"preds": ["1"]}, "preds item must be an integer, not a string"),
    ({"write_set": ["c"] * (MAX_ITEMS + 1)}, f"more than {MAX_ITEMS}"),
    ({"extra": 1}, "unknown field 'extra'"),
])
def test_hostile_json_is_refused_naming_the_field(change, message):
    data = {**GOOD, **change}
    with pytest.raises(RecordError, match=None) as caught:
        OpRecord.from_json(data)
    assert message in str(caught.value)


def test_hostile_json_shapes():
    missing = {k: v for k, v in GOOD.items() if k != "preds"}
    for data, message in [(None, "is a JSON object, not null"), ([], "not a list"),
                          (missing, "missing field 'preds'")]:
        with pytest.raises(RecordError) as caught:
            OpRecord.from_json(data)
        assert message in str(caught.value)
    with pytest.raises(RecordError, match="record 2: agent"):
        history_from_json([GOOD, {**GOOD, "agent": 1}])
    with pytest.raises(RecordError, match="a history is a JSON list"):
        history_from_json({"records": []})
    with pytest.raises(RecordError, match="more than"):
        history_from_json([GOOD] * (MAX_ITEMS + 1))


# ------------------------------------- the definitions, written out literally

def literal_stale(h):
    return sorted([Stale(i, j, c) for i in range(1, len(h) + 1) for j in range(1, len(h) + 1)
                   if i != j and h[i - 1].agent != h[j - 1].agent
                   for c in h[i - 1].read_set & h[j - 1].write_set
                   if h[i - 1].read_time < h[j - 1].write_time < h[i - 1].write_time
                   and not same(h[i - 1].read_value(c), h[j - 1].write_value(c))],
                  key=lambda w: (w.i, w.j, w.cell))


def literal_lost(h, same_agent):
    def final(c):
        return max((r for r in h if c in r.write_set), key=lambda r: r.write_time).write_value(c)
    found = []
    for k in range(1, len(h) + 1):
        for m in range(k + 1, len(h) + 1):
            a, b = h[k - 1], h[m - 1]
            for c in a.write_set & b.write_set:
                if (a.write_time < b.write_time and (same_agent or a.agent != b.agent)
                        and not (c in b.read_set and b.read_time >= a.write_time)):
                    v, end = a.write_value(c), final(c)
                    present = v is None or (
                        isinstance(v, list) and isinstance(end, list)
                        and all(any(same(x, y) for y in end) for x in v)) or (
                        not isinstance(v, list) and same(v, end))
                    if not present:
                        found.append(LostUpdate(k, m, c))
    return sorted(found, key=lambda w: (w.k, w.m, w.cell))


small = st.sampled_from(["c", "d"])
history_values = st.sampled_from([None, 1, 2, True, "x", [1], [1, 2]])


@st.composite
def busy_records(draw):
    # one last writer per cell (equal write_times make "the last write" ambiguous)
    read, write = draw(st.frozensets(small)), draw(st.frozensets(small))
    return OpRecord(draw(st.sampled_from(["a", "b", "e"])), read,
                    {c: draw(history_values) for c in read}, read_time=draw(st.integers(0, 6)),
                    write_set=write, write_values={c: draw(history_values) for c in write},
                    write_time=draw(st.integers(0, 6)))


@given(st.lists(busy_records(), max_size=7), st.booleans())
def test_the_indexed_detectors_are_the_literal_definitions(h, same_agent):
    assert stale_generation(h) == literal_stale(h)
    times = {}
    for record in h:
        for cell in record.write_set:
            times.setdefault(cell, []).append(record.write_time)
    if all(values.count(max(values)) == 1 for values in times.values()):
        assert lost_update(h, same_agent=same_agent) == literal_lost(h, same_agent)
