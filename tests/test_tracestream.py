"""Trace I/O (#7): the streaming writer, the three forms every reader takes, cut-off and
malformed streams, hostile input (deep, huge, odd names), and `cpl eval` on `.jsonl`."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import pytest

from cpl.trace import Event, Trace, TraceWriter, dump_trace, load_trace, open_trace
from cpl.errors import TraceError
from cpl.trace.files import dumps_trace, loads_trace, parse_trace
from cpl.trace.stream import TraceWarning

ROOT = Path(__file__).resolve().parents[1]
FIG2 = ROOT / "examples" / "traces" / "fig2.json"
FORMS = ("t.json", "t.msgpack", "t.mpk", "t.jsonl")
ODD = ('Q"uote', "new\nline", "Ünï código ✓", "back\\slash", "A")


def cpl(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "cpl_cli", *args], capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def rich_trace(lifelines=("A", "B")) -> Trace:
    a, b = lifelines[0], lifelines[1]
    return Trace(lifelines, {a: {"x": 0, "s": "é"}}, [
        Event(f"{a}.1", a, "act", set={"x": 1, "s": "ü ✓ \"q\"\n"}, vc={a: 1}, time=1.5,
              label="lbl"),
        Event(f"{a}.2", a, "send", to=b, msg=f"{a}:1", vc={a: 2}, payload={"k": [1, 2.5, None]}),
        Event(f"{b}.1", b, "recv", msg=f"{a}:1", set={"s": [1, {"n": None}]}, vc={a: 2, b: 1}),
        Event(f"{b}.2", b, "choice", guard=f"@{a}.x == 1" if a.isidentifier() else "x == 1",
              outcome=True, vc={a: 2, b: 2}),
    ], vars=("x", "s"), symbols=("k",), meta={"status": "ok", "seed": 7, "inputs": {"n": "ñ"}})


def write(path, trace: Trace) -> None:
    writer = TraceWriter.open(path, lifelines=trace.lifelines, init=trace.init,
                              vars=trace.vars, symbols=trace.symbols)
    for event in trace.events:
        writer.write(event)
    writer.close(dict(trace.meta))


# ------------------------------------------------------------- writing


@pytest.mark.parametrize("name", FORMS)
@pytest.mark.parametrize("lifelines", [("A", "B"), ODD])
def test_writer_round_trips_every_form(tmp_path, name, lifelines):
    trace = rich_trace(lifelines)
    write(tmp_path / name, trace)
    again = load_trace(tmp_path / name)
    assert again == trace and again.to_dict() == trace.to_dict()
    assert again.events[2].vc == {lifelines[0]: 2, lifelines[1]: 1}
    assert dict(again.meta) == {"status": "ok", "seed": 7, "inputs": {"n": "ñ"}}


def test_writer_bytes_are_the_documents_dumps_trace_always_wrote(tmp_path):
    trace = rich_trace()
    write(tmp_path / "t.json", trace)
    write(tmp_path / "t.msgpack", trace)
    data = trace.to_dict()
    lines = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}"
             for k, v in data.items() if k != "events"]
    events = ",\n".join("    " + json.dumps(e, ensure_ascii=False) for e in data["events"])
    lines.insert(list(data).index("events"), f'  "events": [\n{events}\n  ]')
    assert (tmp_path / "t.json").read_text() == "{\n" + ",\n".join(lines) + "\n}\n"
    assert (tmp_path / "t.msgpack").read_bytes() == msgpack.packb(data, use_bin_type=True)
    assert dumps_trace(trace) == (tmp_path / "t.json").read_bytes()
    jsonl = (tmp_path / "x.jsonl")
    dump_trace(trace, jsonl)
    rows = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert rows[0] == {k: v for k, v in data.items() if k not in ("events", "meta")}
    assert rows[1:-1] == data["events"] and rows[-1] == {"end": data["meta"]}


@pytest.mark.parametrize("name", ["t.json", "t.jsonl", "t.msgpack"])
def test_empty_run_and_no_meta(tmp_path, name):
    writer = TraceWriter.open(tmp_path / name, lifelines=["A"])
    writer.close()
    trace = load_trace(tmp_path / name)
    assert trace.events == () and trace.lifelines == ("A",)


def test_writer_is_a_context_manager_and_closes_once(tmp_path):
    with pytest.raises(RuntimeError):
        with TraceWriter.open(tmp_path / "t.jsonl", lifelines=["A"]) as writer:
            writer.write(Event("A.1", "A", "act"))
            raise RuntimeError("boom")
    trace = load_trace(tmp_path / "t.jsonl")
    assert [e.id for e in trace.events] == ["A.1"]
    assert trace.meta == {"status": "failed", "error": "RuntimeError: boom"}
    writer.close({"status": "ok"})  # a second close does nothing
    with pytest.raises(ValueError, match="closed"):
        writer.write(Event("A.2", "A", "act"))


@pytest.mark.parametrize("name", ["t.json", "t.jsonl", "t.msgpack"])
def test_close_after_an_exception_leaves_a_loadable_trace(tmp_path, name):
    writer = TraceWriter.open(tmp_path / name, lifelines=["A"], vars=["x"])
    writer.write(Event("A.1", "A", "act", set={"x": 1}))
    with pytest.raises(ValueError, match=r"event 'A.2': 'set' is nan, which JSON cannot hold"):
        writer.write(Event("A.2", "A", "act", set={"x": math.nan}))
    writer.close({"status": "failed", "error": "a NaN"})
    trace = load_trace(tmp_path / name)
    assert [e.id for e in trace.events] == ["A.1"] and trace.meta["status"] == "failed"


def test_values_json_cannot_hold_are_the_callers_bug(tmp_path):
    writer = TraceWriter.open(tmp_path / "t.msgpack", lifelines=["A"])
    deep = 1
    for _ in range(200):
        deep = [deep]
    for event, text in ((Event("e", "A", "act", set={"x": math.inf}), "'set' is inf"),
                        (Event("e", "A", "act", payload=deep), "'payload' is nested more"),
                        (Event("e", "A", "act", payload=b"raw"), "holds a bytes value"),
                        (Event("e", "A", "act", time=math.nan), "'time' is nan")):
        with pytest.raises(ValueError, match=text):
            writer.write(event)
    writer.close({"status": "ok", "bad": math.nan})
    assert load_trace(tmp_path / "t.msgpack").meta["error"].startswith("(a meta value is nan")


def test_unwritable_paths_fail_at_open(tmp_path):
    cases = [(tmp_path / "missing" / "t.jsonl", "does not exist"),
             (tmp_path / "missing" / "t.msgpack", "does not exist"),
             (tmp_path, "it is a directory")]
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append((locked / "t.json", "Permission denied"))
    for path, text in cases:
        with pytest.raises(TraceError, match=text) as caught:
            TraceWriter.open(path, lifelines=["A"])
        assert caught.value.origin == str(path)


def _events(n: int):
    """A long run, made lazily: acts, and messages A -> B received at once."""
    for i in range(1, n + 1):
        if i % 3:
            yield Event(f"A.{i}", "A", "act", set={"x": i % 5, "s": "ok"}, vc={"A": i})
        else:
            yield Event(f"A.{i}", "A", "send", to="B", msg=f"A:{i}", vc={"A": i})
            yield Event(f"B.{i}", "B", "recv", msg=f"A:{i}", vc={"A": i, "B": i})


WRITE_RUN = """
import resource, sys
sys.path.insert(0, {tests!r})
from test_tracestream import _events
from cpl.trace.stream import TraceWriter
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for name in sys.argv[1:]:
    writer = TraceWriter.open(name, lifelines=["A", "B"], vars=["x", "s"])
    events = _events(150_000)  # 200,000 events
    for _, event in zip(range(20_000), events):
        writer.write(event)
    before = peak()
    for event in events:
        writer.write(event)
    writer.close({{"status": "ok"}})
    print(name, peak() - before)
"""


def test_writing_200k_events_keeps_memory_constant(tmp_path):
    names = [str(tmp_path / name) for name in ("t.jsonl", "t.json", "t.msgpack")]
    result = subprocess.run([sys.executable, "-c", WRITE_RUN.format(tests=str(ROOT / "tests")),
                             *names], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    growth = {line.split()[0]: int(line.split()[1]) for line in result.stdout.splitlines()}
    assert all(kb < 4_000 for kb in growth.values()), growth  # 200,000 Events: ~100 MB
    assert all(os.path.getsize(name) > 10_000_000 for name in names)
    assert load_trace(names[2]).events[-1].id == "B.150000"


# ------------------------------------------------------------- reading


def test_every_reader_sniffs_the_form(tmp_path):
    trace = rich_trace()
    for form, name in (("jsonl", "a.trace"), ("jsonl", "b.json"), ("json", "c.log"),
                       ("msgpack", "d.bin"), ("json", "e.jsonx")):
        data = dumps_trace(trace, form=form)
        (tmp_path / name).write_bytes(data)
        assert load_trace(tmp_path / name) == trace, name
        assert loads_trace(data) == trace, name
    # a one-line document is a document, not a stream with a header alone
    (tmp_path / "one.log").write_text(json.dumps({"format": "cpl-msc/1", "lifelines": ["A"]}))
    with pytest.raises(TraceError, match='missing "events"'):
        load_trace(tmp_path / "one.log")


def _stream(*lines, end="\n") -> str:
    return "\n".join(lines) + end


HEADER = '{"format": "cpl-msc/1", "lifelines": ["A", "B"], "vars": ["x"]}'
ACT = '{"id": "A.1", "lifeline": "A", "kind": "act", "set": {"x": 1}}'
SEND = '{"id": "A.2", "lifeline": "A", "kind": "send", "to": "B", "msg": "A:1"}'


def test_cut_off_stream_is_accepted_and_said(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_stream(HEADER, ACT, SEND))
    with pytest.warns(TraceWarning, match="the run was cut off"):
        trace = load_trace(path)
    assert [e.id for e in trace.events] == ["A.1", "A.2"] and trace.meta == {"cut_off": True}
    path.write_text(_stream(HEADER, ACT, SEND[:30], end=""))  # the last line cut mid-way
    said = []
    trace = load_trace(path, warn=said.append)
    assert [e.id for e in trace.events] == ["A.1"] and trace.meta == {"cut_off": True}
    assert "line 3 was cut off mid-way; dropped it" in said[0] and "cut off" in said[1]
    result = cpl("eval", str(path), "x == 1", "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"event": "A.1", "lifeline": "A", "value": true}\n'
    assert f"warning: {path}: the run was cut off" in result.stderr


@pytest.mark.parametrize("lines, expected", [
    ((HEADER, "{oops", ACT, '{"end": {}}'), "line 2: not JSON (Expecting property name"),
    ((HEADER, SEND[:30], '{"end": {}}'), "line 2: not JSON"),
    ((HEADER, ACT, ACT), "line 3: event #1 'A.1': duplicate event id 'A.1' (also event #0)"),
    ((HEADER, ACT, '{"end": {}}', ACT), "line 4: a line after the end line"),
    ((HEADER, '{"end": {}, "id": "x"}'), "line 2: the end line has only \"end\", not 'id'"),
    ((HEADER, '{"end": [1]}'), 'line 2: "meta" must be an object'),
    (('{"lifelines": ["A"]}', ACT), 'line 1: missing "format"'),
    (('{"format": "cpl-msc/1", "lifelines": ["A"], "events": []}', ACT),
     'line 1: the header line has "events"'),
    ((HEADER, '{"id": "A.1", "id": "A.2", "lifeline": "A", "kind": "act"}'),
     "line 2: not a valid trace: the key 'id' occurs twice"),
    ((HEADER, '{"id": "B.1", "lifeline": "B", "kind": "recv", "msg": "A:1"}', SEND),
     "line 2: event #0 'B.1' (B): receives message 'A:1' before its send (event #1 'A.2')"),
    (("\ufeff" + HEADER, "[1]"), "line 2: event #0: expected an object, found a list"),
])
def test_malformed_lines_are_located(tmp_path, lines, expected):
    path = tmp_path / "t.jsonl"
    path.write_text(_stream(*lines), encoding="utf-8")
    with pytest.raises(TraceError) as caught:
        load_trace(path, warn=lambda _: None)
    assert str(caught.value).startswith(f"{path}: {expected}"), str(caught.value)


def test_stream_errors_are_the_document_errors_with_a_line(tmp_path):
    """One checker: each malformation of fig2 says the same thing in both forms."""
    base = json.loads(FIG2.read_text())
    rng = random.Random(7)
    checked = 0
    for _ in range(300):
        data = json.loads(json.dumps(base))
        event = rng.choice(data["events"])
        event[rng.choice(["id", "lifeline", "kind", "to", "msg", "set", "outcome"])] = rng.choice(
            ["t1", "r1", "r2", "Committer", "TestRunner", "act", "recv", 3, None, {"z": 1}])
        try:
            parse_trace(data)
            continue
        except TraceError as error:
            expected = error.message
        header = {k: v for k, v in data.items() if k != "events"}
        path = tmp_path / "t.jsonl"
        path.write_text("\n".join(json.dumps(x) for x in [header, *data["events"]]) + "\n")
        with pytest.raises(TraceError) as caught:
            load_trace(path, warn=lambda _: None)
        index = caught.value.index
        assert caught.value.message == f"line {index + 2}: {expected}"
        checked += 1
    assert checked > 100


def test_long_lines_are_refused_not_read(tmp_path, monkeypatch):
    monkeypatch.setenv("CPL_TRACE_LIMIT", "1000")
    path = tmp_path / "t.jsonl"
    path.write_text(_stream(HEADER, '{"id": "A.1", "lifeline": "A", "kind": "act", "set": '
                                    '{"x": "%s"}}' % ("y" * 2000)))
    with pytest.raises(TraceError, match="line 2 is longer than"):
        load_trace(path)


# ---------------------------------------------------------- hostile input

DEEP = "[" * 100_000 + "]" * 100_000
DOC = {"format": "cpl-msc/1", "lifelines": ["A"],
       "events": [{"id": "a", "lifeline": "A", "kind": "act", "set": {"x": 1}}]}


def _deep_document(where: str, depth_text: str) -> str:
    text = json.dumps(DOC)
    if where == "set":
        return text.replace('{"x": 1}', '{"x": %s}' % depth_text)
    if where == "payload":
        return text.replace('"set": {"x": 1}', '"payload": %s' % depth_text)
    if where == "init":
        return text.replace('"events"', '"init": {"A": {"x": %s}}, "events"' % depth_text)
    return text[:-1] + ', "meta": {"m": %s}}' % depth_text


def _as_form(text: str, form: str) -> bytes:
    data = json.loads(text) if form != "json" else None
    if form == "json":
        return text.encode()
    if form == "msgpack":
        return msgpack.packb(data)
    header = {k: v for k, v in data.items() if k not in ("events", "meta")}
    return "\n".join(json.dumps(x) for x in [header, *data["events"],
                                              {"end": data.get("meta", {})}]).encode() + b"\n"


@pytest.mark.parametrize("where", ["set", "payload", "init", "meta"])
def test_deep_nesting_is_an_error_not_a_traceback(tmp_path, where):
    name = {"json": "t.json", "msgpack": "t.msgpack", "jsonl": "t.jsonl"}
    for form in name:
        path = tmp_path / name[form]
        # 150 deep: every decoder takes it, the checker refuses it
        path.write_bytes(_as_form(_deep_document(where, "[" * 150 + "]" * 150), form))
        with pytest.raises(TraceError, match="nested more than 100 lists or objects deep"):
            load_trace(path)
    # 100,000 deep: past every decoder's stack; msgpack cannot even be built by packb
    for path in (tmp_path / "deep.json", tmp_path / "deep.jsonl"):
        text = _deep_document(where, DEEP)
        if path.suffix == ".jsonl":
            header = {"format": "cpl-msc/1", "lifelines": ["A"]}
            lines = [json.dumps(header), json.dumps(DOC["events"][0]), '{"end": {}}']
            index = {"init": 0, "set": 1, "payload": 1, "meta": 2}[where]
            lines[index] = {"init": lines[0][:-1] + ', "init": {"A": {"x": %s}}}' % DEEP,
                            "set": lines[1].replace("1}}", "%s}}" % DEEP),
                            "payload": lines[1][:-1] + ', "payload": %s}' % DEEP,
                            "meta": '{"end": {"m": %s}}' % DEEP}[where]
            text = "\n".join(lines) + "\n"
        path.write_text(text)
        result = cpl("eval", str(path), "true")
        assert result.returncode == 1, result.stderr
        assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
        assert "nested more than 100" in result.stderr, result.stderr
    raw = msgpack.packb(DOC).replace(b"\xa1x\x01", b"\xa1x" + b"\x91" * 100_000 + b"\x01")
    (tmp_path / "deep.msgpack").write_bytes(raw)
    result = cpl("eval", str(tmp_path / "deep.msgpack"), "true")
    assert result.returncode == 1 and "nested more than" in result.stderr, result.stderr


def test_a_few_megabytes_in_one_value_are_fine(tmp_path):
    big = "y" * (4 << 20)
    trace = Trace(("A",), {"A": {"x": big}}, [Event("A.1", "A", "act", set={"x": big},
                                                    payload=[big])], meta={"note": big})
    for name in ("t.jsonl", "t.msgpack", "t.json"):
        dump_trace(trace, tmp_path / name)
        result = cpl("eval", str(tmp_path / name), "x == x", "--format", "jsonl")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["value"] is True


@pytest.mark.parametrize("engine", ["monitor", "reference"])
@pytest.mark.parametrize("name", ["t.json", "t.jsonl", "t.msgpack"])
def test_odd_names_in_cpl_eval(tmp_path, engine, name):
    trace = rich_trace(ODD)
    dump_trace(trace, tmp_path / name)
    for guard in ("x == 1", "@A.x == 1 || s == s"):
        result = cpl("eval", str(tmp_path / name), guard, "--format", "jsonl", "--engine", engine)
        assert result.returncode == 0, result.stderr
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        assert [(r["event"], r["lifeline"]) for r in rows] == [(e.id, e.lifeline)
                                                               for e in trace.events]
    text = cpl("eval", str(tmp_path / name), "x == 1", "--engine", engine)
    assert text.returncode == 0 and len(text.stdout.splitlines()) == 4  # newlines quoted
    assert '"new\\nline"' in text.stdout


# ------------------------------------------------------------ cpl eval


def test_cpl_eval_on_a_stream_matches_the_document(tmp_path):
    trace = load_trace(FIG2)
    dump_trace(trace, tmp_path / "t.jsonl")
    for extra in ([], ["--lifeline", "Committer"], ["--engine", "reference"]):
        for fmt in ("jsonl", "text"):
            args = ["@TestRunner(status != failed S status == passed)", "--format", fmt, *extra]
            streamed = cpl("eval", str(tmp_path / "t.jsonl"), *args)
            assert streamed.returncode == 0, streamed.stderr
            assert streamed.stdout == cpl("eval", str(FIG2), *args).stdout


def test_cpl_eval_stream_exit_codes(tmp_path):
    path = tmp_path / "t.jsonl"
    lines = [HEADER, ACT, SEND] + [ACT.replace("A.1", f"A.{i}") for i in range(3, 3000)]
    path.write_text(_stream(*lines, '{"id": "B.1", "lifeline": "B", "kind": "recv", '
                                    '"msg": "nope"}', '{"end": {}}'))
    result = cpl("eval", str(path), "x == 1", "--format", "jsonl")
    assert result.returncode == 1 and result.stdout == ""  # nothing printed from it
    assert "line 3001: event #2999 'B.1' (B): receives message 'nope'" in result.stderr
    result = cpl("eval", str(path), "x ==", "--format", "jsonl")
    assert result.returncode == 2 and "^" in result.stderr
    result = cpl("eval", str(path), "@Nobody.x == 1")
    assert result.returncode == 2 and result.stdout == ""
    path.write_text(_stream(HEADER.replace(', "vars": ["x"]', ""), ACT, '{"end": {}}'))
    result = cpl("eval", str(path), "x == 1", "--format", "jsonl")  # no vars: a first pass
    assert result.returncode == 0 and json.loads(result.stdout)["value"] is True


def test_cpl_eval_stream_memory_does_not_grow_with_the_run(tmp_path):
    def peak_kb(n):
        path = tmp_path / f"r{n}.jsonl"
        with TraceWriter.open(path, lifelines=["A", "B"], vars=["x", "s"]) as writer:
            for event in _events(n):
                writer.write(event)
        script = ("import resource, sys, cpl_cli as c; sys.stdout = open(__import__('os')"
                  ".devnull, 'w'); c.main(sys.argv[1:]); sys.stderr.write(str(resource."
                  "getrusage(resource.RUSAGE_SELF).ru_maxrss))")
        result = subprocess.run([sys.executable, "-c", script, "eval", str(path),
                                 "@A(x == 1) && s == ok", "--format", "jsonl"], cwd=ROOT,
                                capture_output=True, text=True, timeout=120)
        return int(result.stderr.strip().splitlines()[-1])
    small, large = peak_kb(3_000), peak_kb(90_000)  # 4,000 vs 120,000 events
    assert large - small < 12_000, (small, large)  # a whole Trace of 120,000 events: > 60 MB


@pytest.mark.parametrize("ids, duplicate", [
    (["A.1", "A.2", "B.1", "A.3"], None),
    (["B.1", "B.1"], 1),                        # used on A first, then B's counter name
    (["A.1", "A.2", "B.1", "A.2"], 3),          # a counter name again, on another lifeline
    (["A.1", "B.A.1"], None),
    (["A.01", "A.1", "A.2"], None),             # "A.01" is not counter n = 1
    (["A.1", "B.3", "A.2", "A.3", "B.1", "A.2"], 5),
    (["x", "A.1", "x"], 2),
])
def test_ids_kept_as_counters_are_still_unique(ids, duplicate):
    lanes = ["A", "B"]
    events = [{"id": i, "lifeline": lanes[n % 2] if not i.startswith("A.") else "A",
               "kind": "act"} for n, i in enumerate(ids)]
    data = {"format": "cpl-msc/1", "lifelines": lanes, "events": events}
    if duplicate is None:
        assert [e.id for e in parse_trace(data).events] == ids
    else:
        with pytest.raises(TraceError, match=f"event #{duplicate} .*duplicate event id"):
            parse_trace(data)


def test_an_unterminated_last_line_is_cut_only_if_its_json_is_unfinished(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_stream(HEADER, '{"id": "A.1", "id": "A.2", "lifeline": "A", "kind": "act"}',
                            end=""))
    with pytest.raises(TraceError, match="line 2: not a valid trace: the key 'id' occurs twice"):
        load_trace(path, warn=lambda _: None)
    path.write_bytes(_stream(HEADER, ACT).encode() + '{"id": "ü'.encode()[:-1])  # mid-character
    said = []
    assert [e.id for e in load_trace(path, warn=said.append).events] == ["A.1"]
    assert "line 3 was cut off mid-way" in said[0] and "(1 event read)" in said[1]


# ---------------------------------------------------------- what is read at all


def _refused_fast(path, expected: str) -> None:
    started = time.monotonic()
    with pytest.raises(TraceError, match=expected):
        open_trace(path)
    assert time.monotonic() - started < 0.5


def test_a_document_past_the_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    zero = tmp_path / "t.json"
    zero.symlink_to("/dev/zero")
    _refused_fast(zero, "it is a device, not a trace file")
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:  # sparse: 65 MiB of nothing, no newline
        handle.truncate(65 * 2**20)
    for name in ("big.msgpack", "big.log"):
        (tmp_path / name).symlink_to(big)
    for name in ("big.json", "big.msgpack", "big.log"):
        _refused_fast(tmp_path / name, "larger than 64 MiB, the most read whole as a document; "
                                       "write the trace as .jsonl")
    document = tmp_path / "small.json"
    document.write_text(json.dumps(DOC))
    monkeypatch.setenv("CPL_TRACE_LIMIT", "100")
    with pytest.raises(TraceError, match="larger than 100 bytes.*CPL_TRACE_LIMIT"):
        load_trace(document)
    monkeypatch.setenv("CPL_TRACE_LIMIT", "1K")
    assert load_trace(document).events[0].id == "a"
    monkeypatch.setenv("CPL_TRACE_LIMIT", "lots")
    with pytest.raises(TraceError, match="CPL_TRACE_LIMIT='lots' is not a size"):
        load_trace(document)


def test_a_stream_past_the_limit_is_still_read_a_line_at_a_time(tmp_path, monkeypatch):
    path = tmp_path / "t.json"  # sniffed as a stream: only its lines count
    write(path.with_suffix(".jsonl"), rich_trace())
    path.write_bytes(path.with_suffix(".jsonl").read_bytes())
    monkeypatch.setenv("CPL_TRACE_LIMIT", "300")
    assert len(load_trace(path).events) == len(rich_trace().events)


@pytest.mark.parametrize("name", ["t.json", "t.jsonl", "t.msgpack"])
def test_a_fifo_or_a_directory_is_not_a_trace(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    _refused_fast(fifo, r"it is a named pipe \(FIFO\); a trace is read from a regular file")
    folder = tmp_path / "folder" / name
    folder.mkdir(parents=True)
    _refused_fast(folder, "it is a directory; name a trace file in it")
    result = cpl("eval", str(fifo))
    assert result.returncode == 1 and "named pipe" in result.stderr
