"""Hand-written monitor cases: the paper's Fig. 2, partiality, pruning, metadata."""

from __future__ import annotations

import pytest

import cpl
from cpl.monitor import OwnedFormula, compile_guards, Metadata, MetadataError, Monitor
from cpl.monitor.offline import evaluate_trace
from cpl.trace import load_trace
from cpl.trace.files import parse_trace
from cpl.lang import UNSET

LIFELINES = ("Orchestrator", "TestRunner", "Security", "Committer")
SCHEMA = cpl.Schema(lifelines=LIFELINES, variables=frozenset({"status", "candidate", "x"}))
PAPER_GUARD = ("@TestRunner.candidate == candidate && @Security.candidate == candidate && "
               "@TestRunner(status != failed S status == passed) && "
               "@Security(status != critical S status == cleared)")


def monitors_for(guard: str, owner: str = "Committer", prune: bool = True):
    primitive = cpl.check(guard, SCHEMA).primitive
    program = compile_guards([OwnedFormula(owner, primitive)], LIFELINES, prune=prune)
    return primitive, program, {name: Monitor(program, name) for name in LIFELINES}


def test_fig2_failure_in_transit_keeps_the_committer_guard_true(tmp_path):
    trace = load_trace("examples/traces/fig2.json")
    values = dict((e.id, v) for e, v in evaluate_trace(
        trace, "@TestRunner(status != failed S status == passed)", "Committer"))
    assert values["c3"] is True  # t3's failure was sent (t4) but is not received


def test_fig2_guard_turns_false_once_the_failure_is_received():
    primitive, _, m = monitors_for(PAPER_GUARD)
    m["TestRunner"].act({"candidate": "c7", "status": "passed"})
    passed = m["TestRunner"].send()
    m["TestRunner"].act({"status": "failed"})
    failed = m["TestRunner"].send()
    m["Security"].act({"candidate": "c7", "status": "cleared"})
    cleared = m["Security"].send()
    m["Committer"].receive(passed)
    m["Committer"].receive(cleared, {"candidate": "c7"})
    m["Committer"].choice()
    assert m["Committer"].value(primitive) is True
    m["Committer"].receive(failed)
    m["Committer"].choice()
    assert m["Committer"].value(primitive) is False


def test_non_fifo_an_older_report_arriving_last_does_not_roll_back_the_view():
    primitive, _, m = monitors_for("@TestRunner(status == failed)")
    m["TestRunner"].act({"status": "passed"})
    old = m["TestRunner"].send()
    m["TestRunner"].act({"status": "failed"})
    new = m["TestRunner"].send()
    m["Committer"].receive(new)
    m["Committer"].receive(old)  # not ahead on TestRunner: nothing copied
    m["Committer"].choice()
    assert m["Committer"].value(primitive) is True


@pytest.mark.parametrize("guard, expected", [
    ("x != 1", False),  # an atom with an unset term is false
    ("!(x == 1)", True),
    ("x == null", False),
    ("@TestRunner.x != 1", False),  # no TestRunner event visible
    ("!Seen(TestRunner)", True),
])
def test_partiality_while_x_is_unset(guard, expected):
    primitive, _, m = monitors_for(guard)
    m["Committer"].act()
    assert m["Committer"].value(primitive) is expected


def test_null_is_a_value():
    primitive, _, m = monitors_for("x == null")
    m["Committer"].act({"x": None})
    assert m["Committer"].value(primitive) is True


def test_exports_are_pruned_to_what_is_read_remotely():
    _, program, _ = monitors_for(PAPER_GUARD)
    exported = {name: program.exports[program.index(name)] for name in LIFELINES}
    assert [cpl.to_text(f) for f in exported["TestRunner"].formulas] == \
        ["status != failed S status == passed"]
    assert exported["TestRunner"].variables == ("candidate",)
    assert exported["Orchestrator"].formulas == () and exported["Committer"].variables == ()
    assert program.local("Orchestrator").slots == ()  # evaluates nothing


def test_metadata_round_trips_and_does_not_grow_with_local_guards():
    _, program, small = monitors_for(PAPER_GUARD)
    small["TestRunner"].act({"candidate": "c7", "status": "passed"})
    frame = small["TestRunner"].send()
    assert Metadata.decode(frame.encode(), len(program.carried)) == frame
    more = PAPER_GUARD + " && candidate != x && Y Y candidate == x"
    _, _, big = monitors_for(more)
    big["TestRunner"].act({"candidate": "c7", "status": "passed"})
    assert len(big["TestRunner"].send().encode()) == len(frame.encode())
    # a guard reading Orchestrator adds Orchestrator's entries (clock, view, variable
    # view: one byte each here), which every lifeline relays, and nothing else
    _, wider, other = monitors_for(PAPER_GUARD + " && @Orchestrator(x == 1)")
    assert wider.carried == ("Orchestrator", "TestRunner", "Security")
    other["TestRunner"].act({"candidate": "c7", "status": "passed"})
    assert len(other["TestRunner"].send().encode()) == len(frame.encode()) + 3


def test_only_the_lifelines_some_guard_reads_are_carried():
    _, program, m = monitors_for(PAPER_GUARD)
    assert program.carried == ("TestRunner", "Security")
    assert program.carried.index("Security") == 1 and "Committer" not in program.carried
    m["Committer"].act({"candidate": "c7"})
    assert m["Committer"].send() == Metadata((0, 0), (0, 0), ((UNSET,), (UNSET,)))
    _, unpruned, _ = monitors_for(PAPER_GUARD, prune=False)
    assert unpruned.carried == LIFELINES


def test_metadata_size_does_not_depend_on_how_many_lifelines_take_part():
    def frame(lifelines):
        schema = cpl.Schema(lifelines=lifelines, variables=SCHEMA.variables)
        guard = cpl.check(PAPER_GUARD, schema).primitive
        program = compile_guards([OwnedFormula("Committer", guard)], lifelines)
        tester = Monitor(program, "TestRunner")
        tester.act({"candidate": "c7", "status": "passed"})
        return tester.send().encode()
    assert frame(LIFELINES + tuple(f"U{i}" for i in range(252))) == frame(LIFELINES)


def test_a_lifeline_nobody_reads_relays_the_entries_of_those_read():
    """TestRunner -> Orchestrator -> Committer: the Committer learns of TestRunner's pass
    only through Orchestrator, which is not carried (no entry of its own) but must keep
    and forward TestRunner's, and must not forward an older view over a newer one."""
    primitive, program, m = monitors_for("@TestRunner(status == passed)")
    assert "Orchestrator" not in program.carried
    m["TestRunner"].act({"status": "passed"})
    m["Orchestrator"].receive(m["TestRunner"].send())
    m["TestRunner"].act({"status": "failed"})
    failed = m["TestRunner"].send()
    relayed = m["Orchestrator"].send()
    assert relayed.vc == (2,) and relayed.views == (1,)
    m["Committer"].receive(relayed)
    m["Committer"].choice()
    assert m["Committer"].value(primitive) is True
    m["Committer"].receive(failed)
    m["Committer"].receive(m["Orchestrator"].send())  # older news on TestRunner: ignored
    m["Committer"].choice()
    assert m["Committer"].value(primitive) is False


@pytest.mark.parametrize("frame, problem", [
    (b"\xc1", "not a msgpack"),
    (Metadata((1, 2), (0, 0), ((), ())).encode(), "clock must be 4"),
    (Metadata((1, 2, 3, -1), (0, 0, 0, 0), ((),) * 4).encode(), "clock must be 4"),
])
def test_bad_metadata_frames_are_rejected_with_a_reason(frame, problem):
    with pytest.raises(MetadataError, match=problem):
        Metadata.decode(frame, 4)


def test_metadata_of_another_shape_is_rejected_before_a_monitor_reads_past_a_view():
    _, program, m = monitors_for(PAPER_GUARD)  # TestRunner, Security: one bit, one variable each
    m["TestRunner"].act({"candidate": "c7", "status": "passed"})
    good = m["TestRunner"].send()
    assert Metadata.decode(good.encode(), program.shape) == good
    for bad, problem in [(good._replace(vars=((), (UNSET,))), "variable view 0 must hold 1"),
                         (good._replace(views=(2, 0)), "view 0 has bits beyond the 1"),
                         (good._replace(vc=(1, 0, 0)), "clock must be 2")]:
        with pytest.raises(MetadataError, match=problem):
            Metadata.decode(bad.encode(), program.shape)


def test_unknown_owner_is_rejected():
    primitive = cpl.check("x == 1", SCHEMA).primitive
    with pytest.raises(ValueError, match="not lifelines"):
        compile_guards([OwnedFormula("Nobody", primitive)], LIFELINES)


def test_shared_subformulas_are_one_slot():
    first = cpl.check("@TestRunner(status == passed) && x == 1", SCHEMA).primitive
    second = cpl.check("@TestRunner(status == passed) || x == 2", SCHEMA).primitive
    program = compile_guards([OwnedFormula("Committer", first), OwnedFormula("Committer", second)],
                             LIFELINES)
    committer = program.local("Committer")
    at_nodes = [s for s in committer.slots if isinstance(s, cpl.ast.At)]
    assert len(at_nodes) == 1
    assert len(program.exports[program.index("TestRunner")].formulas) == 1


def test_offline_evaluation_of_past_and_previous():
    trace = parse_trace({"format": "cpl-msc/1", "lifelines": ["A", "B"], "events": [
        {"id": "a1", "lifeline": "A", "kind": "act", "set": {"x": 1}},
        {"id": "a2", "lifeline": "A", "kind": "send", "to": "B", "msg": "m"},
        {"id": "b1", "lifeline": "B", "kind": "recv", "msg": "m"},
        {"id": "b2", "lifeline": "B", "kind": "choice"}]})
    values = [v for _, v in evaluate_trace(trace, "P @A(x == 1) && Y Seen(A)")]
    assert values == [False, True, False, True]  # Y looks at the previous local event only


def test_every_step_computes_every_slot_once_bottom_up():
    """act, send, receive and choice each evaluate all of the lifeline's slots, in slot
    order (Algorithm 2 inlined): one kind of slot skipped by a step would show here."""
    guard = ("@TestRunner(status != failed S status == passed) && "
             "!(Y x > 2 || (status != failed S x == 1))")
    _, program, _ = monitors_for(guard)
    local = program.local("Committer")
    kinds = {type(slot).__name__ for slot in local.slots}
    assert {"At", "Since", "Prev", "Not", "And", "Or", "Compare"} <= kinds
    state, *steps = local.source.split("\n    def ")
    assert [step.split("(")[0] for step in steps] == ["act", "send", "receive", "choice",
                                                      "values"]
    every_slot = [f"v{i}" for i in range(len(local.slots))]
    for step in steps[:4]:
        lines = step.splitlines()
        assert [line.split()[0] for line in lines if line.startswith("        v")] == every_slot
