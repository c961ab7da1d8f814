"""The cpl-msc/1 loader: the spec's example loads, round-trips, and every malformation is named."""

import copy
import json
from pathlib import Path

import msgpack
import pytest

from cpl.errors import TraceError
from cpl.trace import Event, Trace, dump_trace, load_trace
from cpl.trace.files import dumps_trace, loads_trace, parse_trace

FIG2 = Path(__file__).resolve().parents[1] / "examples" / "traces" / "fig2.json"


def fig2() -> dict:
    return json.loads(FIG2.read_text())


def test_spec_example_loads():
    trace = load_trace(FIG2)
    assert trace.lifelines == ("Orchestrator", "TestRunner", "Committer")
    assert [e.id for e in trace.events] == ["t1", "t2", "t3", "t4", "c1", "o1", "c2", "c3"]
    c3 = trace.event("c3")
    assert (c3.kind, c3.outcome) == ("choice", True)
    assert c3.guard == "@TestRunner(status != failed S status == passed)"
    assert trace.event("t1").set["status"] == "passed"
    assert trace.variables() == ("candidate", "status")
    schema = trace.schema()
    assert schema.variables == {"candidate", "status"} and schema.symbols is None
    assert [e.id for e in trace.in_transit()] == ["t4"]
    assert trace.send_of("r1").id == "t2" and trace.receive_of("r1").id == "c1"
    assert trace.receive_of("r2") is None
    assert trace.predecessors(trace.index_of("c1")) == (trace.index_of("t2"),)
    assert trace.previous(trace.index_of("c2")) == trace.index_of("c1")
    assert trace.previous(trace.index_of("t1")) is None


def test_valuations_are_init_updated_by_own_sets():
    trace = load_trace(FIG2)
    values = dict(zip((e.id for e in trace.events), trace.valuations()))
    assert dict(values["c1"]) == {"candidate": None}  # init: set to null, not unset
    assert dict(values["c2"]) == {"candidate": "c7"}
    assert dict(values["t3"]) == {"candidate": "c7", "status": "failed"}
    assert dict(values["o1"]) == {}


def test_events_are_read_only():
    event = load_trace(FIG2).event("t1")
    with pytest.raises(TypeError):
        event.set["status"] = "failed"
    with pytest.raises(AttributeError):
        event.kind = "send"
    assert hash(event) == hash(Event("t1", "TestRunner", "act", set={"candidate": "c7",
                                                                      "status": "passed"}))


def test_round_trip_json_and_msgpack(tmp_path):
    data = fig2()
    data["vars"] = ["candidate", "status", "tags"]
    data["events"][0].update(set={"candidate": "c7", "status": "passed", "tags": ["a", {"b": 1}]},
                             label="tests", time=1.5, vc={"TestRunner": 1})
    data["events"][1]["payload"] = {"report": [1, 2.5, None, True]}
    trace = parse_trace(data)
    assert trace.to_dict() == data
    for name in ("out.json", "out.msgpack", "out.mpk"):
        dump_trace(trace, tmp_path / name)
        again = load_trace(tmp_path / name)
        assert again == trace and again.to_dict() == data
    assert (tmp_path / "out.msgpack").read_bytes()[:1] != b"{"
    # msgpack bytes are recognised whatever the suffix
    (tmp_path / "run.trace").write_bytes(dumps_trace(trace, binary=True))
    assert load_trace(tmp_path / "run.trace") == trace


def test_model_round_trip_built_in_code():
    trace = Trace(("A", "B"), {"A": {"x": 0}}, [
        Event("a1", "A", "act", set={"x": 1}),
        Event("a2", "A", "send", to="B", msg="m"),
        Event("b1", "B", "recv", msg="m"),
        Event("b2", "B", "choice", guard="@A.x == 1", outcome=True, label="go"),
    ])
    assert parse_trace(trace.to_dict()) == trace
    assert loads_trace(dumps_trace(trace)) == trace


def test_meta_and_null_optional_fields_are_accepted():
    data = fig2()
    data["meta"] = {"seed": 3, "failed": "TestRunner"}
    data["events"][0]["label"] = None
    trace = parse_trace(data)
    assert trace.meta["failed"] == "TestRunner" and trace.events[0].label is None


def _rejects(data, expected: str, origin="trace"):
    with pytest.raises(TraceError) as caught:
        parse_trace(data, origin)
    assert expected in str(caught.value), str(caught.value)
    return caught.value


def _with(**changes):
    """fig2 with events changed: {index: {field: value or None to delete}}."""
    data = fig2()
    for index, fields in changes.get("events", {}).items():
        for key, value in fields.items():
            if value is None:
                data["events"][index].pop(key, None)
            else:
                data["events"][index][key] = value
    data.update(changes.get("top", {}))
    return data


def test_receive_of_unknown_message():
    error = _rejects(_with(events={4: {"msg": "r9"}}),
                     "event #4 'c1' (Committer): receives message 'r9', "
                     "which no earlier event sends")
    assert (error.index, error.event_id, error.origin) == (4, "c1", "trace")


def test_receive_before_send():
    data = fig2()
    data["events"].insert(0, data["events"].pop(4))  # c1 first, before t2 sends r1
    _rejects(data, "event #0 'c1' (Committer): receives message 'r1' before its send "
                   "(event #2 't2'); list events in causal order")


def test_receive_on_wrong_lifeline():
    _rejects(_with(events={4: {"lifeline": "Orchestrator"}}),
             "event #4 'c1' (Orchestrator): receives message 'r1', but its send "
             "(event #1 't2') is addressed to 'Committer'")


def test_message_received_twice():
    data = fig2()
    data["events"].insert(5, {"id": "c1b", "lifeline": "Committer", "kind": "recv", "msg": "r1"})
    _rejects(data, "event #5 'c1b' (Committer): receives message 'r1', which event #4 'c1' "
                   "already received")


def test_duplicate_event_id():
    _rejects(_with(events={3: {"id": "t1"}}),
             "event #3 't1': duplicate event id 't1' (also event #0)")


def test_set_on_send_and_choice():
    _rejects(_with(events={1: {"set": {"status": "x"}}}),
             "event #1 't2' (TestRunner): a send cannot \"set\" variables")
    _rejects(_with(events={7: {"set": {"status": "x"}}}),
             "event #7 'c3' (Committer): a choice cannot \"set\" variables")


def test_unknown_lifeline():
    _rejects(_with(events={2: {"lifeline": "TestRuner"}}),
             "event #2 't3': unknown lifeline 'TestRuner'; did you mean 'TestRunner'?")
    _rejects(_with(top={"init": {"Comitter": {"candidate": None}}}),
             "\"init\": unknown lifeline 'Comitter'; did you mean 'Committer'?")


def test_unknown_kind():
    _rejects(_with(events={2: {"kind": "action"}}),
             "event #2 't3' (TestRunner): unknown kind 'action'; did you mean 'act'?; "
             "expected act, send, recv or choice")


def test_not_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "cpl-msc/1", "lifelines": [')
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert str(caught.value).startswith(f"{path}: not JSON (")
    with pytest.raises(TraceError, match="not a msgpack trace"):
        loads_trace(b"\xc1", msgpack_first=True)
    with pytest.raises(TraceError, match="cannot read the trace"):
        load_trace(tmp_path / "missing.json")
    with pytest.raises(TraceError, match="the key 'id' occurs twice"):
        loads_trace(b'{"format": "cpl-msc/1", "lifelines": [], "events": [{"id": "a", "id": "b"}]}')
    with pytest.raises(TraceError, match="NaN is not a JSON number"):
        loads_trace(b'{"format": "cpl-msc/1", "lifelines": ["A"], "init": {"A": {"x": NaN}}, '
                    b'"events": []}')


@pytest.mark.parametrize("data, expected", [
    ([], "expected a JSON object"),
    (_with(top={"format": "cpl-msc/2"}), "format is 'cpl-msc/2', but this reader understands"),
    ({"lifelines": [], "events": []}, 'missing "format"'),
    ({"format": "cpl-msc/1", "events": []}, 'missing "lifelines"'),
    ({"format": "cpl-msc/1", "lifelines": ["A"]}, 'missing "events"'),
    (_with(top={"event": []}), "unknown top-level field 'event'; did you mean 'events'?"),
    (_with(top={"lifelines": ["A", "A"]}), '"lifelines" lists \'A\' twice'),
    (_with(top={"lifelines": "A"}), '"lifelines" must be a list of names, found a string'),
    (_with(top={"vars": ["status"]}), "assigns 'candidate', which \"vars\" does not declare"),
    (_with(top={"vars": ["x"], "symbols": ["x"]}), "'x' is listed both in \"vars\" and in"),
    (_with(top={"init": {"Committer": [1]}}), '"init" of Committer must be an object'),
    (_with(top={"meta": [1]}), '"meta" must be an object'),
    (_with(top={"events": [1]}), "event #0: expected an object, found a number"),
    (_with(events={0: {"id": None}}),
     "event #0: \"id\" must be a non-empty string (it is missing)"),
    (_with(events={0: {"id": 7}}), "event #0: \"id\" must be a non-empty string (found 7)"),
    (_with(events={0: {"lifeline": None}}), "event #0 't1': missing \"lifeline\""),
    (_with(events={0: {"kind": None}}), "event #0 't1' (TestRunner): missing \"kind\""),
    (_with(events={0: {"sets": {}}}), "event #0 't1': unknown field 'sets'; did you mean 'set'?"),
    (_with(events={1: {"to": None}}), "event #1 't2' (TestRunner): a send needs \"to\""),
    (_with(events={1: {"msg": None}}), "event #1 't2' (TestRunner): a send needs \"msg\""),
    (_with(events={1: {"to": "Comitter"}}), "event #1 't2' (TestRunner): \"to\": unknown "
                                            "lifeline 'Comitter'; did you mean 'Committer'?"),
    (_with(events={1: {"to": "TestRunner"}}), "event #1 't2' (TestRunner): sends to its own "
                                              "lifeline"),
    (_with(events={3: {"msg": "r1"}}), "event #3 't4' (TestRunner): sends message 'r1', which "
                                       "event #1 't2' already sends"),
    (_with(events={4: {"msg": None}}), "event #4 'c1' (Committer): a recv needs \"msg\""),
    (_with(events={4: {"to": "Committer"}}), "\"to\" is only for a send, not a recv"),
    (_with(events={0: {"msg": "r1"}}), "\"msg\" is only for a send or recv, not an act"),
    (_with(events={0: {"guard": "true"}}), "event #0 't1' (TestRunner): \"guard\" is only for "
                                           "a choice, not an act"),
    (_with(events={1: {"outcome": True}}), "\"outcome\" is only for a choice, not a send"),
    (_with(events={7: {"outcome": "yes"}}), "\"outcome\" must be true or false, found 'yes'"),
    (_with(events={7: {"label": 3}}), "\"label\" must be a string, found a number"),
    (_with(events={0: {"set": [1]}}), "\"set\" must be an object variable → value"),
    (_with(events={0: {"set": {"": 1}}}), "has the key ''; variable names are non-empty"),
    (_with(events={0: {"vc": [1]}}), "event #0 't1' (TestRunner): \"vc\" must be an object"),
    (_with(events={0: {"vc": {"TestRunner": -1}}}), "\"vc\" of TestRunner must be a count"),
    (_with(events={0: {"vc": {"TestRunner": True}}}), "\"vc\" of TestRunner must be a count"),
    (_with(events={0: {"vc": {"Nobody": 1}}}), "\"vc\": unknown lifeline 'Nobody'"),
    (_with(events={0: {"time": True}}), "\"time\" must be a number of seconds, found True"),
])
def test_rejections(data, expected):
    _rejects(data, expected)


def test_msgpack_specific_rejections():
    data = fig2()
    data["events"][0]["set"] = {1: "x"}
    with pytest.raises(TraceError, match=r"event #0 't1' \(TestRunner\): \"set\" has the key 1"):
        loads_trace(msgpack.packb(data), msgpack_first=True)
    data = fig2()
    data["events"][0]["set"] = {"status": b"raw"}
    with pytest.raises(TraceError, match="'status' holds a bytes value; values are string"):
        loads_trace(msgpack.packb(data, use_bin_type=True))


def test_first_error_in_list_order_wins():
    data = _with(events={2: {"kind": "action"}, 5: {"lifeline": "Nobody"}})
    _rejects(copy.deepcopy(data), "event #2 't3'")


def test_origin_prefixes_the_message(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_with(events={3: {"id": "t1"}})))
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert str(caught.value).startswith(f"{path}: event #3 't1': duplicate event id")
