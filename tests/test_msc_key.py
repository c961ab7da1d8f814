"""``msc_key``: one MSC, one key, whatever the linearisation; any change to what a lifeline
did, decided or received, another key."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cpl.trace import Event, Trace, msc_key
from msc_gen import mscs, relinearise


def _with(trace: Trace, index: int, **changes) -> Trace:
    events = list(trace.events)
    events[index] = events[index]._replace(**changes)
    return Trace(trace.lifelines, trace.init, events, trace.vars, trace.symbols)


@settings(max_examples=60, deadline=None)
@given(mscs(max_events=20), st.integers(0, 2 ** 32))
def test_every_linearisation_of_an_msc_has_its_key(trace, seed):
    assert msc_key(relinearise(trace, seed)) == msc_key(trace)


@settings(max_examples=60, deadline=None)
@given(mscs(max_events=20), st.integers(0, 2 ** 32))
def test_ids_clocks_times_and_message_names_take_no_part(trace, seed):
    """Renamed events and messages (sends renumbered as a run would: ``SENDER:k``), clocks
    and times added: the same MSC."""
    renamed, sent = {}, {}
    for event in trace.events:
        if event.kind == "send":
            sent[event.lifeline] = sent.get(event.lifeline, 0) + 1
            renamed[event.msg] = f"{event.lifeline}:{sent[event.lifeline]}"
    events = [e._replace(id=f"n{seed}.{i}", msg=renamed.get(e.msg, e.msg), time=float(i),
                         vc={e.lifeline: i}) for i, e in enumerate(trace.events)]
    again = Trace(trace.lifelines, trace.init, events, trace.vars, trace.symbols)
    assert msc_key(relinearise(again, seed)) == msc_key(trace)


def _receives(trace: Trace) -> list[int]:
    return [i for i, e in enumerate(trace.events) if e.kind == "recv"]


@settings(max_examples=60, deadline=None)
@given(mscs(max_events=20), st.data())
def test_a_changed_value_outcome_label_or_receiver_is_another_msc(trace, data):
    assume(trace.events)  # an empty MSC has nothing to change
    index = data.draw(st.integers(0, len(trace.events) - 1))
    event = trace.events[index]
    changed = [_with(trace, index, label=f"{event.label}'"),
               _with(trace, index, set={**event.set, "x": ["changed"]}),
               _with(trace, index, payload={"changed": event.payload})]
    if event.kind == "choice":
        changed.append(_with(trace, index, outcome=not event.outcome, guard="x"))
    if event.kind == "send":
        changed.append(_with(trace, index, to=f"{event.to}'"))
    keys = {msc_key(t) for t in changed}
    assert msc_key(trace) not in keys and len(keys) == len(changed)


def test_values_compare_by_content_not_by_order_or_spelling():
    def one(values):
        return Trace(("A",), {}, [Event("A.1", "A", "act", set=values)])
    assert msc_key(one({"x": {"a": 1, "b": [1, {"c": 2, "d": 3}]}, "y": 0})) == \
        msc_key(one({"y": 0, "x": {"b": [1, {"d": 3, "c": 2}], "a": 1}}))
    different = [one({"x": value}) for value in (1, 1.0, True, "1", [1], {"1": 1}, None)]
    assert len({msc_key(t) for t in different}) == len(different)


def test_which_send_a_receive_takes_makes_the_msc():
    """Two sends A→B, received in either order: two MSCs, though every lifeline's labels,
    kinds and values are the same sequence."""
    def received(first: str, second: str) -> Trace:
        return Trace(("A", "B"), {}, [
            Event("A.1", "A", "send", to="B", msg="A:1", label="m"),
            Event("A.2", "A", "send", to="B", msg="A:2", label="m"),
            Event("B.1", "B", "recv", msg=first, label="m"),
            Event("B.2", "B", "recv", msg=second, label="m")])
    assert msc_key(received("A:1", "A:2")) != msc_key(received("A:2", "A:1"))
    in_transit = Trace(("A", "B"), {}, received("A:1", "A:2").events[:3])
    assert msc_key(in_transit) not in {msc_key(received("A:1", "A:2")),
                                       msc_key(received("A:2", "A:1"))}


@settings(max_examples=60, deadline=None)
@given(mscs(max_events=20), st.data())
def test_swapping_two_receives_of_one_lifeline_is_another_msc(trace, data):
    """A receive taking another pending send (matching changed, local order kept)."""
    pairs = [(i, j) for i in _receives(trace) for j in _receives(trace)
             if i < j and trace.events[i].lifeline == trace.events[j].lifeline]
    if not pairs:
        return
    i, j = data.draw(st.sampled_from(pairs))
    a, b = trace.events[i], trace.events[j]
    swapped = _with(_with(trace, i, msg=b.msg), j, msg=a.msg)
    assert msc_key(swapped) != msc_key(trace)


def test_initial_stores_make_the_msc():
    events = [Event("A.1", "A", "act", set={"x": 1})]
    assert msc_key(Trace(("A",), {"A": {"x": 0}}, events)) != \
        msc_key(Trace(("A",), {"A": {"x": 2}}, events))
    assert msc_key(Trace(("A",), {"A": {"x": 0, "y": 1}}, events)) == \
        msc_key(Trace(("A",), {"A": {"y": 1, "x": 0}}, events))
