"""`cpl export`: a trace as OpenTelemetry spans, read back with the OTLP protobuf parser.

Every check parses what the command wrote (or posted) with protobuf's own parser into
the OTLP request message, so a file a collector would refuse fails here too.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from choreo_util import cpl, killed_simulation
from cpl.trace import load_trace

json_format = pytest.importorskip(
    "google.protobuf.json_format", reason="the otel extra: pip install -e '.[otel]'")
trace_service = pytest.importorskip(
    "opentelemetry.proto.collector.trace.v1.trace_service_pb2",
    reason="the otel extra: pip install -e '.[otel]'")

ROOT = Path(__file__).resolve().parent.parent
IDS = ("traceId", "spanId", "parentSpanId")


def parsed(text: str):
    """The ExportTraceServiceRequest in OTLP/JSON ``text``: its hex ids put back in
    base64, the one way OTLP/JSON differs from protobuf's JSON mapping."""
    data = json.loads(text)
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for holder in (span, *span.get("links", ())):
                    for key in IDS:
                        if key in holder:
                            holder[key] = base64.b64encode(bytes.fromhex(holder[key])).decode()
    return json_format.Parse(json.dumps(data), trace_service.ExportTraceServiceRequest())


def spans_of(request) -> list:
    return [span for resource in request.resource_spans for scope in resource.scope_spans
            for span in scope.spans]


def attributes(span) -> dict:
    found = {}
    for pair in span.attributes:
        kind = pair.value.WhichOneof("value")
        value = getattr(pair.value, kind)
        found[pair.key] = [v.string_value for v in value.values] if kind == "array_value" \
            else value
    return found


def exported(trace, tmp_path, *extra):
    out = tmp_path / "out.json"
    result = cpl("export", trace, "--otlp", out, *extra)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return parsed(out.read_text(encoding="utf-8")), result


def by_event(request) -> dict:
    return {attributes(s)["cpl.event"]: s for s in spans_of(request)
            if "cpl.event" in attributes(s)}


def check_complete(trace_path, request, parent: str) -> None:
    """Every lifeline and event is a span of one trace; every received message a link from
    the receive to its send (with ``message``, also its parent); every decision carries its
    guard and value."""
    trace = load_trace(trace_path, warn=lambda text: None)
    spans = spans_of(request)
    assert len({span.trace_id for span in spans}) == 1
    assert len(spans) == 1 + len(trace.lifelines) + len(trace.events)
    events = by_event(request)
    assert set(events) == {event.id for event in trace.events}
    lifelines = {span.name: span for span in spans
                 if set(attributes(span)) >= {"cpl.lifeline", "cpl.events"}}
    assert set(lifelines) == set(trace.lifelines)
    root = [span for span in spans if not span.parent_span_id]
    assert len(root) == 1 and all(s.parent_span_id == root[0].span_id
                                  for s in lifelines.values())
    messages = 0
    for event in trace.events:
        span, seen = events[event.id], attributes(events[event.id])
        assert seen["cpl.lifeline"] == event.lifeline and seen["cpl.kind"] == event.kind
        assert json.loads(seen["cpl.vc"]) == dict(event.vc)
        for name, value in event.set.items():
            assert seen[f"cpl.set.{name}"] == value
        if event.kind == "recv":
            messages += 1
            send = events[trace.send_of(event.msg).id]
            assert [link.span_id for link in span.links] == [send.span_id]
            link = attributes(span.links[0])
            assert link["messaging.system"] == "cpl" and link["messaging.message.id"] == event.msg
            assert seen["messaging.operation.type"] == "receive"
            assert seen["messaging.destination.name"] == event.lifeline
            expected = send if parent == "message" else lifelines[event.lifeline]
            assert span.parent_span_id == expected.span_id
        else:
            assert not span.links and span.parent_span_id == lifelines[event.lifeline].span_id
        if event.kind == "send":
            assert seen["messaging.operation.type"] == "send"
            assert seen["messaging.destination.name"] == event.to
            assert seen["cpl.in_transit"] is (trace.receive_of(event.msg) is None)
        if event.kind == "choice":
            word = {True: "true", False: "false", None: "undecided"}[event.outcome]
            assert seen["cpl.guard"] == seen["gen_ai.guardrail.policy"] == event.guard
            assert seen["cpl.outcome"] == seen["gen_ai.guardrail.result"] == word
    assert messages == sum(len(span.links) for span in spans)


@pytest.fixture(scope="module")
def review(tmp_path_factory):
    """The flagship's trace, as `cpl run --sim --trace` writes it."""
    path = tmp_path_factory.mktemp("review") / "review.jsonl"
    result = cpl("run", ROOT / "examples" / "code_review.py", "--sim", "--seed", "3",
                 "--arg", "rounds=2", "--trace", path)
    assert result.returncode == 0, result.stderr
    return path


@pytest.mark.parametrize("parent", ["link", "message"])
def test_the_flagship_exports_every_message_as_a_link_and_every_decision(review, tmp_path, parent):
    request, result = exported(review, tmp_path, "--parent", parent)
    check_complete(review, request, parent)
    assert "spans" in result.stderr and "links" in result.stderr
    root = [s for s in spans_of(request) if not s.parent_span_id][0]
    assert attributes(root)["cpl.run.status"] == "ok"
    choices = [s for s in spans_of(request) if attributes(s).get("cpl.kind") == "choice"]
    assert choices and {attributes(s)["cpl.outcome"] for s in choices} == {"true", "false"}


def test_the_same_trace_gives_the_same_ids_in_any_form(review, tmp_path):
    first, _ = exported(review, tmp_path)
    from cpl.trace import dump_trace

    def ids(request):
        return sorted((s.trace_id, s.span_id, s.parent_span_id) for s in spans_of(request))

    for name in ("review.json", "review.msgpack"):
        dump_trace(load_trace(review), tmp_path / name)
        again, _ = exported(tmp_path / name, tmp_path)
        assert ids(first) == ids(again), name
    assert ids(exported(review, tmp_path, "--parent", "message")[0]) != ids(first)


def test_a_killed_runs_trace_exports_as_far_as_it_went(tmp_path):
    trace = tmp_path / "killed.jsonl"
    killed_simulation(trace, 30_000)
    request, result = exported(trace, tmp_path, "--parent", "message")
    assert "cut off" in result.stderr
    check_complete(trace, request, "message")
    root = [s for s in spans_of(request) if not s.parent_span_id][0]
    assert attributes(root)["cpl.run.status"] == "cut_off"
    assert root.status.code == root.status.STATUS_CODE_ERROR


DIED = {
    "format": "cpl-msc/1", "lifelines": ["A", "B"], "init": {"B": {"x": None}},
    "events": [
        {"id": "a1", "lifeline": "A", "kind": "act", "set": {"x": 1}, "time": 1700000000.5},
        {"id": "a2", "lifeline": "A", "kind": "send", "to": "B", "msg": "m1",
         "time": 1700000001.0},
        {"id": "a3", "lifeline": "A", "kind": "send", "to": "B", "msg": "m2",
         "time": 1700000001.5},
        {"id": "b1", "lifeline": "B", "kind": "recv", "msg": "m1", "set": {"x": 1},
         "time": 1700000002.0},
        {"id": "b2", "lifeline": "B", "kind": "choice", "guard": "@A(x == 1)",
         "time": 1700000002.5}],
    "meta": {"status": "died", "error": "lifeline B died (signal 9)",
             "died": {"lifeline": "B", "exit": None, "signal": 9}, "in_transit": ["m2"]}}


def test_a_died_run_with_a_message_in_transit_and_no_clocks(tmp_path):
    path = tmp_path / "died.json"
    path.write_text(json.dumps(DIED), encoding="utf-8")
    request, _ = exported(path, tmp_path)
    events = by_event(request)
    assert attributes(events["a3"])["cpl.in_transit"] is True
    assert attributes(events["a2"])["cpl.in_transit"] is False
    assert json.loads(attributes(events["b1"])["cpl.vc"]) == {"A": 2, "B": 1}  # computed
    assert attributes(events["b2"])["gen_ai.guardrail.result"] == "undecided"
    assert events["a1"].start_time_unix_nano == 1700000000_500000000  # recorded times
    root = [s for s in spans_of(request) if not s.parent_span_id][0]
    seen = attributes(root)
    assert seen["cpl.run.status"] == "died" and seen["cpl.run.died.lifeline"] == "B"
    assert seen["cpl.run.in_transit"] == ["m2"] and seen["cpl.run.in_transit.count"] == 1
    b = [s for s in spans_of(request) if s.name == "B" and s.parent_span_id == root.span_id]
    assert b[0].status.code == b[0].status.STATUS_CODE_ERROR


def test_odd_names_and_huge_values_are_kept_readable_and_capped(tmp_path):
    odd = "Ré\u202eviewer 🤖\x1b[31m"
    huge = "y" * 2_000_000
    trace = {"format": "cpl-msc/1", "lifelines": [odd, "B"], "events": [
        {"id": "ẽ1", "lifeline": odd, "kind": "act", "label": "z" * 10_000,
         "set": {"ünï": huge, "n": 2**64 - 1, "l": [1, {"k": None}], "v" * 5000: True}},
        {"id": "e2", "lifeline": odd, "kind": "send", "to": "B", "msg": "m\u2028",
         "payload": {"text": huge}},
        {"id": "e3", "lifeline": "B", "kind": "recv", "msg": "m\u2028"}]}
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(trace), encoding="utf-8")
    request, _ = exported(path, tmp_path)
    events = by_event(request)
    seen = attributes(events["ẽ1"])
    assert seen["cpl.lifeline"] == odd
    assert len(seen["cpl.set.ünï"]) <= 4096 and seen["cpl.set.ünï"].endswith("…")
    assert seen["cpl.set.n"] == str(2**64 - 1) and json.loads(seen["cpl.set.l"]) == [1, {"k": None}]
    assert max(len(pair.key) for pair in events["ẽ1"].attributes) <= 300
    assert len(events["ẽ1"].name) <= 256
    assert len(attributes(events["e2"])["cpl.payload"]) <= 4096
    assert [link.span_id for link in events["e3"].links] == [events["e2"].span_id]
    assert (tmp_path / "out.json").stat().st_size < 200_000


def test_a_malformed_trace_is_the_same_error_as_cpl_eval(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "cpl-msc/1", "lifelines": ["A"], "events": [
        {"id": "a1", "lifeline": "A", "kind": "recv", "msg": "m"}]}), encoding="utf-8")
    export = cpl("export", path, "--otlp", tmp_path / "out.json")
    check = cpl("eval", path)
    assert export.returncode == check.returncode == 1
    assert export.stderr == check.stderr and "no earlier event sends" in export.stderr
    assert not (tmp_path / "out.json").exists()
    missing = cpl("export", tmp_path / "nope.jsonl", "--otlp", tmp_path / "out.json")
    assert missing.returncode == 1 and missing.stderr == cpl("eval", tmp_path / "nope.jsonl").stderr


@pytest.mark.parametrize("target, words", [
    (".", "it is a directory"),
    ("no/such/dir/out.json", "does not exist"),
    pytest.param("/proc/out.json", "is not writable", marks=pytest.mark.skipif(
        not os.path.isdir("/proc/self"),
        reason="needs Linux's /proc (unwritable even for root): not something to install, "
               "the platform lacks it (sys.platform)")),
])
def test_an_out_path_that_cannot_be_written_is_one_clear_line(review, tmp_path, target, words):
    result = cpl("export", review, "--otlp", tmp_path / target)
    assert result.returncode == 2 and words in result.stderr, result.stderr  # a usage error
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize("argv, words", [
    ((), "--otlp OUT.json and/or --endpoint URL"),
    (("--endpoint", "ftp://host/x"), "not an http:// or https:// URL"),
    (("--endpoint", "http://127.0.0.1:9", "--timeout", "0"), "--timeout"),
    (("--endpoint", "http://127.0.0.1:9", "--header", "nothing"), "NAME=VALUE"),
    (("--endpoint", "http://127.0.0.1:9", "--header", "X-Key=clé"), "printable ASCII"),
    (("--endpoint", "http://127.0.0.1:9", "--timeout", "nan"), "--timeout"),
    (("--endpoint", "http://[::1"), "--endpoint"),
    (("--endpoint", "http://127.0.0.1:9", "--header", "a:b=c"), "no spaces or colons"),
    (("--endpoint", "http://127.0.0.1:abc"), "the port is not a number"),
    (("--endpoint", "http://127.0.0.1:99999"), "the port is not a number"),
    (("--otlp", "-", "--header", "a=b"), "--header is for --endpoint"),
])
def test_usage_errors_exit_2(review, argv, words):
    result = cpl("export", review, *argv)
    assert result.returncode == 2 and words in result.stderr, result.stderr


def test_without_the_otel_extra_it_says_what_to_install(review, tmp_path):
    blocked = ("import sys; sys.modules['opentelemetry'] = None; from cpl_cli import main; "
               "sys.exit(main(sys.argv[1:]))")
    result = subprocess.run([sys.executable, "-c", blocked, "export", str(review), "--otlp",
                             str(tmp_path / "o.json")], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "pip install 'causal-guards[otel]'" in result.stderr


class _Collector(http.server.BaseHTTPRequestHandler):
    answer = 200
    posts: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).posts.append((self.path, dict(self.headers), body))
        self.send_response(self.answer)
        self.send_header("Content-Type", "application/x-protobuf")
        reply = b"" if self.answer == 200 else b"collector says no\n\x1b[31m"
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def collector():
    class Handler(_Collector):
        posts = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, Handler
    server.shutdown()
    server.server_close()


def test_posting_to_an_otlp_http_receiver(review, tmp_path, collector):
    server, handler = collector
    url = f"http://127.0.0.1:{server.server_address[1]}"
    result = cpl("export", review, "--endpoint", url, "--parent", "message", "--otlp",
                 tmp_path / "also.json", "--header", "Authorization=Basic abc")
    assert result.returncode == 0, result.stderr
    [(path, headers, body)] = handler.posts
    assert path == "/v1/traces" and headers["Content-Type"] == "application/x-protobuf"
    assert headers["Authorization"] == "Basic abc"
    request = trace_service.ExportTraceServiceRequest.FromString(body)
    check_complete(review, request, "message")
    assert request == parsed((tmp_path / "also.json").read_text(encoding="utf-8"))
    result = cpl("export", review, "--endpoint", f"{url}/custom/path")
    assert result.returncode == 0 and handler.posts[-1][0] == "/custom/path"


def test_a_collector_that_refuses_is_a_clear_error(review, collector):
    server, handler = collector
    handler.answer = 503
    result = cpl("export", review, "--endpoint", f"http://127.0.0.1:{server.server_address[1]}")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "answered HTTP 503" in result.stderr and "collector says no" in result.stderr
    assert "\x1b" not in result.stderr


def test_an_unreachable_or_silent_collector_fails_in_bounded_time(review):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    result = cpl("export", review, "--endpoint", f"http://127.0.0.1:{port}")
    assert result.returncode == 1 and "cannot reach" in result.stderr, result.stderr
    silent = socket.socket()  # listens, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)
    try:
        started = time.monotonic()
        result = cpl("export", review, "--endpoint",
                     f"http://127.0.0.1:{silent.getsockname()[1]}", "--timeout", "1")
        assert time.monotonic() - started < 15
    finally:
        silent.close()
    assert result.returncode == 1 and "did not answer within 1 s" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_batches_hold_every_span_once_and_link_across_batches(review):
    from cpl.export import otlp_batches, otlp_request
    trace = load_trace(review, warn=lambda text: None)
    batches = list(otlp_batches(trace, "message", 0, size=10))
    assert len(batches) == 8 and all(len(spans_of(batch)) <= 10 for batch in batches)
    whole = otlp_request(trace, "message", 0)
    assert sorted(s.SerializeToString() for b in batches for s in spans_of(b)) == \
        sorted(s.SerializeToString() for s in spans_of(whole))
    check_complete(review, whole, "message")


def test_a_disabled_sdk_is_said_not_exported_empty(review, tmp_path):
    result = subprocess.run([sys.executable, "-m", "cpl_cli", "export", str(review),
                             "--otlp", str(tmp_path / "o.json")], capture_output=True, text=True,
                            env={**os.environ, "OTEL_SDK_DISABLED": "true"})
    assert result.returncode == 2 and "OTEL_SDK_DISABLED" in result.stderr, result.stderr
    assert not (tmp_path / "o.json").exists()
