"""`cpl export --timeout` bounds each request as a whole.

A collector that trickles its answer, one byte at a time, never lets a single read
wait past a socket timeout: before, `--timeout 3` against one that sent a byte every
2 s had not ended after 60 s.  Here the collector is a thread on 127.0.0.1 that
trickles a byte every 0.2 s, forever, either from the status line or from the
body after whole headers.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time

import pytest

from choreo_util import ROOT

pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2",
                    reason="the otel extra: pip install -e '.[otel]'")

HEADERS = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 1000\r\n\r\n"
BEAT = 0.2  # seconds between two bytes: every single read ends well within any timeout


@pytest.fixture(params=["status line", "body"])
def trickling(request):
    """The URL of a collector that reads a request, then answers a byte every BEAT s."""
    start = b"" if request.param == "status line" else HEADERS
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)

    def answer(conn):
        with conn:
            conn.settimeout(5)
            try:
                conn.recv(1 << 16)  # the request's start: enough to know it came
                conn.sendall(start)
                for byte in (b"" if start else HEADERS) + b"x" * 1000:
                    if stop.wait(BEAT):
                        return
                    conn.sendall(bytes((byte,)))
                stop.wait(30)
            except OSError:
                return

    def serve():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    listener.close()


def _request():
    from cpl.export import otlp_request
    from cpl.trace.files import loads_trace
    trace = loads_trace('{"format": "cpl-msc/1", "lifelines": ["A"], "events": '
                        '[{"id": "a", "lifeline": "A", "kind": "act"}]}')
    return otlp_request(trace)


def test_a_trickling_collector_is_cut_at_the_timeout(trickling):
    from cpl.export import ExportError, post
    started = time.monotonic()
    with pytest.raises(ExportError, match=r"did not answer within 1 s"):
        post(_request(), trickling + "/v1/traces", timeout=1)
    assert time.monotonic() - started < 1.5


def test_cpl_export_against_a_trickling_collector_exits_1_in_time(trickling, tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text('{"format": "cpl-msc/1", "lifelines": ["A"], "events": '
                     '[{"id": "a", "lifeline": "A", "kind": "act"}]}', encoding="utf-8")
    started = time.monotonic()
    try:
        result = subprocess.run([sys.executable, "-m", "cpl_cli", "export", str(trace),
                                 "--endpoint", trickling, "--timeout", "1"],
                                capture_output=True, text=True, timeout=20, cwd=ROOT)
    except subprocess.TimeoutExpired:
        pytest.fail("cpl export --timeout 1 still waited after 20 s")
    took = time.monotonic() - started
    assert result.returncode == 1, result.stderr
    assert "did not answer within 1 s" in result.stderr and "Traceback" not in result.stderr
    assert took < 1 + 6, took  # the timeout, and the start-up of a Python process


def test_an_answer_in_time_is_still_read_whole(tmp_path):
    """The deadline cuts nothing that comes in time (the collector of test_export_otlp)."""
    from cpl.export import post
    listener = socket.create_server(("127.0.0.1", 0))

    def answer():
        conn, _ = listener.accept()
        with conn:
            conn.recv(1 << 16)
            conn.sendall(HEADERS.replace(b"1000", b"0"))

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        assert post(_request(), f"http://127.0.0.1:{listener.getsockname()[1]}/v1/traces",
                    timeout=5) == 3  # the run, its lifeline, its event
    finally:
        thread.join(5)
        listener.close()
