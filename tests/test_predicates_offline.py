"""Offline tools know the choreography's own predicates.

A recorded trace names the application predicates its guards call; ``cpl eval``
loads them with ``--predicates FILE`` and names the one that is missing. A bare
name one edit from a variable is an error; ``cpl check`` shows a generic
``P φ`` without a schema.
"""

from __future__ import annotations

import json
import uuid

import msgpack
import pytest

import cpl
from cpl.errors import TraceError
from cpl.trace import Event, Trace, load_trace
from cpl.lang import Schema
from cpl.lang.spelling import one_edit_apart
from cpl.trace.files import dumps_trace, loads_trace
from cpl_cli.predicates import load_predicates
from cpl_cli.usage import UsageError

from choreo_util import cpl as run_cpl, write

PREDICATE = '''
from cpl import predicate


@predicate
def is_urgent(priority) -> bool:
    return priority in ("high", "critical")
'''

CHOREO = PREDICATE + '''

c = Choreography("triage")
Desk, Oncall = c.lifelines("Desk", "Oncall")
priority = c.var("priority", str, init={Desk: "high"})
paged = c.var("paged", bool, init={Oncall: False})
c.send(Desk, Oncall, priority)
with c.if_('is_urgent(priority) && startswith(priority, "hi")', at=Oncall,
           label="page?"):
    c.set(Oncall, paged=True)
c.result(Oncall, paged)
'''

ENGINES = ("monitor", "reference")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A choreography with its own predicate, and its simulated run in all three forms."""
    folder = tmp_path_factory.mktemp("triage")
    choreo = write(folder, CHOREO, "triage.py")
    (folder / "preds.py").write_text(PREDICATE, encoding="utf-8")
    traces = {}
    for suffix in ("jsonl", "json", "msgpack"):
        path = folder / f"run.{suffix}"
        result = run_cpl("run", choreo, "--sim", "--seed", "3", "--trace", path)
        assert result.returncode == 0, result.stderr
        traces[suffix] = path
    return folder, choreo, traces


def test_a_simulated_run_records_the_predicates_its_guards_call(recorded):
    _, _, traces = recorded
    header = json.loads(traces["jsonl"].read_text().splitlines()[0])
    assert header["predicates"] == ["is_urgent"]  # startswith is a built-in: not listed
    for path in traces.values():
        assert load_trace(path).predicates == ("is_urgent",)


def test_a_run_over_processes_records_them_too(recorded, tmp_path):
    _, choreo, _ = recorded
    path = tmp_path / "zmq.json"
    result = run_cpl("run", choreo, "--trace", path, "--timeout", "60")
    assert result.returncode == 0, result.stderr
    assert json.loads(path.read_text())["predicates"] == ["is_urgent"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("form", ["jsonl", "json", "msgpack"])
def test_recheck_without_predicates_names_the_missing_one(recorded, engine, form):
    _, _, traces = recorded
    result = run_cpl("eval", traces[form], "--engine", engine)
    assert result.returncode == 2 and result.stdout == ""
    assert "'is_urgent'" in result.stderr and "--predicates CHOREO.py" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("module", ["triage.py", "preds.py"])
def test_recheck_with_the_choreography_or_a_predicates_module_agrees(recorded, engine, module):
    folder, _, traces = recorded
    result = run_cpl("eval", traces["jsonl"], "--engine", engine, "--predicates",
                     folder / module)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Oncall.2  Oncall  page?: recorded true, computed true  agrees",
        "1 decision re-checked: all agree"]


def test_a_guard_naming_an_unknown_predicate_still_fails_with_a_caret(recorded):
    folder, _, traces = recorded
    result = run_cpl("eval", traces["json"], "is_urgent(priority)")
    assert result.returncode == 2 and "^^^^^^^^^" in result.stderr
    assert "unknown predicate 'is_urgent'" in result.stderr and "--predicates" in result.stderr
    for engine in ENGINES:
        result = run_cpl("eval", traces["json"], "is_urgent(priority)", "--engine", engine,
                         "--lifeline", "Oncall", "--predicates", folder / "preds.py")
        assert result.returncode == 0, result.stderr
        assert "Oncall.2  Oncall  choice  true" in result.stdout


def test_a_guard_that_calls_no_trace_predicate_needs_no_predicates(recorded):
    _, _, traces = recorded
    result = run_cpl("eval", traces["jsonl"], 'priority == "high"', "--lifeline", "Desk")
    assert result.returncode == 0, result.stderr


def test_a_predicates_file_that_does_not_register_it_is_named(recorded, tmp_path):
    _, _, traces = recorded
    other = tmp_path / "other.py"
    other.write_text("from cpl import predicate\n\n@predicate\ndef is_urgnt(p):\n    return True\n")
    result = run_cpl("eval", traces["json"], "--predicates", other)
    assert result.returncode == 2
    assert "'is_urgent'" in result.stderr and "does not register" in result.stderr
    assert "did you mean 'is_urgnt'" in result.stderr


@pytest.mark.parametrize("content, expected", [
    (None, "no such predicates file"),
    ("def broken(:\n", "bad.py:1: error: syntax error"),
    ("import json\nraise RuntimeError('no database')\n",
     "bad.py:2: error: RuntimeError: no database"),
])
def test_a_predicates_file_that_cannot_load_is_a_clear_error(recorded, tmp_path, content,
                                                             expected):
    _, _, traces = recorded
    path = tmp_path / "bad.py"
    if content is not None:
        path.write_text(content)
    result = run_cpl("eval", traces["json"], "--predicates", path, cwd=tmp_path)
    assert result.returncode == 2 and expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_hand_written_trace_without_the_field_is_checked_from_its_guards(tmp_path):
    """The recorded guards alone say which predicates a re-check needs."""
    trace = {"format": "cpl-msc/1", "lifelines": ["A"], "events": [
        {"id": "a1", "lifeline": "A", "kind": "act", "set": {"p": "high"}},
        {"id": "a2", "lifeline": "A", "kind": "choice", "guard": "is_urgent(p)",
         "outcome": True}]}
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(trace))
    (tmp_path / "preds.py").write_text(PREDICATE)
    for engine in ENGINES:
        result = run_cpl("eval", path, "--engine", engine)
        assert result.returncode == 2 and "'is_urgent'" in result.stderr
        result = run_cpl("eval", path, "--engine", engine, "--predicates", tmp_path / "preds.py")
        assert result.returncode == 0 and "all agree" in result.stdout, result.stderr


def test_a_predicate_that_raises_is_exit_1_not_an_internal_error(tmp_path):
    trace = {"format": "cpl-msc/1", "lifelines": ["A"], "predicates": ["fragile"], "events": [
        {"id": "a1", "lifeline": "A", "kind": "act", "set": {"p": 1}},
        {"id": "a2", "lifeline": "A", "kind": "choice", "guard": "fragile(p)", "outcome": True}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    module = tmp_path / "fragile.py"
    module.write_text("from cpl import predicate\n\n@predicate\ndef fragile(p):\n"
                      "    raise ValueError('cannot tell')\n")
    for engine in ENGINES:
        result = run_cpl("eval", path, "--engine", engine, "--predicates", module)
        assert result.returncode == 1, result.stderr
        assert "fragile" in result.stderr and "cannot tell" in result.stderr
        assert "internal error" not in result.stderr


# ------------------------------------------------------------ the trace field

HEADER = {"format": "cpl-msc/1", "lifelines": ["A"]}
EVENT = {"id": "a1", "lifeline": "A", "kind": "act"}


def _forms(value) -> dict[str, bytes]:
    """The same trace, with ``"predicates": value``, as a document, msgpack and a stream."""
    document = {**HEADER, "predicates": value, "events": [EVENT], "meta": {}}
    stream = "\n".join(json.dumps(line) for line in
                       ({**HEADER, "predicates": value}, EVENT, {"end": {}})) + "\n"
    return {"json": json.dumps(document).encode(), "msgpack": msgpack.packb(document),
            "jsonl": stream.encode()}


HOSTILE = {
    "a string": "is_urgent",
    "an object": {"is_urgent": 1},
    "a number": 7,
    "a non-string": ["ok", 3],
    "an empty name": [""],
    "a space": ["is urgent"],
    "a leading digit": ["1st"],
    "a keyword": ["since"],
    "a dotted name": ["os.system"],
    "a huge name": ["p" * 10_000],
    "a huge object": [{"p": "q" * 10_000}],
    "a huge duplicate": ["p" * 10_000] * 2,
    "a duplicate": ["p", "p"],
    "a huge list": [f"p{i}" for i in range(10_001)],
}


@pytest.mark.parametrize("case", HOSTILE)
@pytest.mark.parametrize("form", ["json", "msgpack", "jsonl"])
def test_hostile_predicates_fields_are_rejected_naming_the_field(case, form):
    raw = _forms(HOSTILE[case])[form]
    with pytest.raises(TraceError) as caught:
        loads_trace(raw, "t." + form, msgpack_first=form == "msgpack")
    assert '"predicates"' in str(caught.value)
    assert len(str(caught.value)) < 400  # the message shows the name, not the whole input


@pytest.mark.parametrize("form", ["json", "msgpack", "jsonl"])
def test_the_field_is_kept_in_all_three_forms(form):
    trace = loads_trace(_forms(["is_urgent", "member"])[form], "t",
                        msgpack_first=form == "msgpack")
    assert trace.predicates == ("is_urgent", "member")
    again = loads_trace(dumps_trace(trace, form=form), "again", msgpack_first=form == "msgpack")
    assert again == trace and again.predicates == trace.predicates


def test_hostile_fields_exit_1_from_the_cli(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(_forms(["a b"])["json"])
    result = run_cpl("eval", path)
    assert result.returncode == 1 and '"predicates"' in result.stderr


def test_trace_to_dict_writes_the_field_and_leaves_it_out_when_unknown():
    events = [Event("a1", "A", "act")]
    assert Trace(("A",), events=events, predicates=["p"]).to_dict()["predicates"] == ["p"]
    assert "predicates" not in Trace(("A",), events=events).to_dict()
    assert Trace(("A",), events=events).predicates is None


# --------------------------------------------------------------- the loader


def test_load_predicates_imports_a_module_and_checks_the_names(tmp_path):
    name = f"offline_{uuid.uuid4().hex[:8]}"
    module = tmp_path / "mine.py"
    module.write_text(f"from cpl import predicate\n\n@predicate\ndef {name}(x):\n"
                      f"    return x == 1\n")
    with pytest.raises(UsageError, match=f"'{name}'.*--predicates CHOREO.py"):
        load_predicates(None, [name, "member"], "t.json")
    registry = load_predicates(str(module), [name, "member"], "t.json")
    assert registry.get(name).function(1) is True
    with pytest.raises(UsageError, match="'absent'"):
        load_predicates(str(module), ["absent"], "t.json")


def test_many_missing_predicates_are_summed_up():
    with pytest.raises(UsageError) as caught:
        load_predicates(None, [f"nope{i}" for i in range(50)], "t.json")
    assert "'nope0'" in str(caught.value) and "and 45 more" in str(caught.value)


# ------------------------------------------------------- a misspelt variable

SCHEMA = {"lifelines": ["A", "B"], "vars": ["status", "candidate"]}
REFUSED = "error: 'statuss' is not a declared variable; did you mean 'status'?"


@pytest.fixture
def schema_file(tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def test_cpl_check_refuses_a_symbol_one_edit_from_a_variable(schema_file):
    for options in ((), ("--format", "json")):
        result = run_cpl("check", "--schema", schema_file, *options, "statuss == passed")
        assert result.returncode == 2 and result.stdout == ""
        assert result.stderr.startswith("guard:1:1: " + REFUSED + "\n  statuss == passed\n"
                                        "  ^^^^^^^\n  hint: ")


def test_a_name_far_from_every_variable_stays_a_symbol(schema_file):
    result = run_cpl("check", "--schema", schema_file, "status == passed && @A.candidate == c7")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == "status == passed && @A.candidate == c7\n"


def test_cpl_eval_refuses_it_too(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({**HEADER, "events": [
        {"id": "a1", "lifeline": "A", "kind": "act", "set": {"status": "ok"}}]}))
    for options in ((), ("--format", "jsonl")):
        result = run_cpl("eval", path, "statuss == ok", *options)
        assert result.returncode == 2 and REFUSED in result.stderr and result.stdout == ""
    result = run_cpl("eval", path, '"statuss" == ok')  # quoted: the string, as meant
    assert result.returncode == 0 and result.stdout.split() == ["a1", "A", "act", "false"]


def test_cpl_check_as_a_function_refuses_it():
    schema = Schema(lifelines=("A",), variables=frozenset({"status", "candidate"}))
    with pytest.raises(cpl.GuardError, match="'candidat' is not a declared variable; did you "
                                             "mean 'candidate'"):
        cpl.check("status == passed && candidat == c1", schema)
    with pytest.raises(cpl.GuardError, match="did you mean 'status'"):
        cpl.resolve(cpl.parse("Status == passed"), schema)
    # a declared symbol is meant; short names are too close to everything to judge
    closed = Schema(variables=frozenset({"merges", "x"}), symbols=frozenset({"merged", "y"}))
    assert cpl.check("merges == merged && x == y", closed).canonical == "merges == merged && x == y"
    assert cpl.check('status == "statuss"', schema).canonical == 'status == "statuss"'


@pytest.mark.parametrize("a, b, apart", [
    ("statuss", "status", True), ("statsu", "status", True), ("sttus", "status", True),
    ("xtatus", "status", True), ("status", "status", False), ("stat", "status", False),
    ("sutats", "status", False), ("passed", "failed", False)])
def test_one_edit_apart(a, b, apart):
    assert one_edit_apart(a, b) is apart and one_edit_apart(b, a) is apart


# ------------------------------------------------------- cpl check of P φ


def test_cpl_check_prints_a_generic_past_without_a_schema():
    result = run_cpl("check", "P (x == 1) && P @A(y)")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "P x == 1 && P @A(y)\n"
    result = run_cpl("check", "--format", "json", "P (x == 1)")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "canonical": "P x == 1", "lifelines": [], "subformulas": 4,
        "remote": {"*": {"formulas": ["true S x == 1"], "vars": []}}}


def test_with_a_schema_a_generic_past_ranges_over_its_lifelines(schema_file):
    result = run_cpl("check", "--schema", schema_file, "--format", "json", "P (status == ok)")
    assert result.returncode == 0, result.stderr
    assert set(json.loads(result.stdout)["remote"]) == {"A", "B"}


def test_the_library_still_asks_for_the_lifelines():
    with pytest.raises(cpl.GuardError, match="needs the set of lifelines"):
        cpl.check("P (x == 1)")
