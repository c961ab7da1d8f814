"""``cpl export``: a recorded run as OpenTelemetry spans, to a file or to a collector.

Reads any trace form as ``cpl render`` does (a cut-off stream is exported as far
as it goes, with a warning); the spans are built by ``cpl.export`` on the
OpenTelemetry SDK, an extra: without it the command says what to install (exit 2).
``--otlp`` is written whole or not at all (``cpl_cli.outputs``); a collector that
cannot be reached or refuses the spans is exit 1, after ``--otlp`` was written.
"""

from __future__ import annotations

import os
import re

from cpl.errors import TraceError

from .arguments import add_command, add_trace_file
from .outputs import STDOUT, Output
from .usage import EXIT_OK, UsageError, complain

_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP header name (RFC 9110)

TIMEOUT = 10.0  # seconds for each request to --endpoint, as a whole


def _headers(given: list[str]) -> dict:
    """--header NAME=VALUE, after the OTLP exporters' environment variables."""
    from opentelemetry.util.re import parse_env_headers
    found = {}
    for variable in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        found.update(parse_env_headers(os.environ.get(variable, ""), liberal=True))
    for pair in given:
        name, equals, value = pair.partition("=")
        if not equals or not name.strip() or any(c in pair for c in "\r\n\0"):
            raise UsageError(f"--header {pair!r}: give NAME=VALUE on one line")
        found[name.strip()] = value.strip()
    for name, value in found.items():  # http.client sends latin-1 and refuses line breaks
        if not (_TOKEN.fullmatch(name) and value.isascii() and value.isprintable()):
            raise UsageError(f"--header {name!r}: a header's name is letters, digits and "
                             f"!#$%&'*+-.^_`|~ (no spaces or colons), its value printable ASCII")
    return found


class _Counted:
    """The requests ``batches()`` makes, one at a time (all at once would hold every span
    of a long trace), counting their spans and links for the summary as they pass."""

    def __init__(self, batches):
        self.batches, self.spans, self.links = batches, 0, 0

    def __iter__(self):
        self.spans = self.links = 0
        for request in self.batches():
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    self.spans += len(scope.spans)
                    self.links += sum(len(span.links) for span in scope.spans)
            yield request


def _summary(trace, counted: _Counted) -> str:
    """What was exported, in the words of the trace (the counts a reader checks first)."""
    decisions = sum(event.kind == "choice" for event in trace.events)
    transit = len(trace.in_transit())
    return (f"{counted.spans} spans (the run, {len(trace.lifelines)} lifelines, "
            f"{len(trace.events)} events), {counted.links} message links, {decisions} decisions"
            + (f", {transit} messages in transit" if transit else ""))


def cmd_export(args) -> int:
    from cpl.export import endpoint_url, otlp_batches, otlp_json, require_sdk
    from .traces import read_trace

    if args.otlp is None and args.endpoint is None:
        raise UsageError("say where the spans go: --otlp OUT.json and/or --endpoint URL")
    if not 0 < args.timeout <= 3600:  # also refuses nan; inf would wait forever
        raise UsageError("--timeout: give a number of seconds above 0, at most 3600")
    output = None if args.otlp is None else Output.of(args.otlp, "--otlp")
    if args.header and args.endpoint is None:
        raise UsageError("--header is for --endpoint: give the collector's URL too")
    url = None
    if args.endpoint is not None:
        try:
            url = endpoint_url(args.endpoint)
        except ValueError as error:
            raise UsageError(f"--endpoint: {error}") from None
    require_sdk()  # before the trace is read: a missing extra (MissingExtra, exit 2) first
    headers = _headers(args.header) if url is not None else {}
    trace = read_trace(args.trace, lambda text: complain(f"warning: {text}"), whole=True)
    try:
        anchor = os.stat(args.trace).st_mtime_ns
    except OSError:
        anchor = 0
    requests = _Counted(lambda: otlp_batches(trace, args.parent, anchor))
    if output is not None:  # made as they are written (again below for --endpoint)
        output.write(text.encode("utf-8") for text in otlp_json(requests))
        if args.otlp != STDOUT:
            complain(f"wrote {args.otlp}: {_summary(trace, requests)}")
    if url is not None:
        _post_all(requests, url, headers, args.timeout)
        complain(f"posted to {url}: {_summary(trace, requests)}")
    return EXIT_OK


def _post_all(requests: _Counted, url: str, headers: dict, timeout: float) -> None:
    """Each request posted as it is made; the first that fails says how many went before."""
    from cpl.export import ExportError, post
    number = 0
    for number, request in enumerate(requests):
        try:
            post(request, url, headers, timeout)
        except ExportError as error:
            done = f" (after {number} requests were accepted)" if number else ""
            raise TraceError(f"--endpoint: {error}{done}") from None


def add_export_command(commands) -> None:
    export = add_command(
        commands, "export", cmd_export,
        help="send a trace to OpenTelemetry: OTLP JSON, or posted to an OTLP/HTTP collector",
        description="Export TRACE as one OpenTelemetry trace: the run a root span, a span "
        "per lifeline and per event, messages as span links with messaging.* attributes, "
        "decisions with their guard and value (gen_ai.guardrail.*).")
    add_trace_file(export)
    export.add_argument("--otlp", metavar="OUT.json",
                        help="write OTLP JSON (an ExportTraceServiceRequest) to OUT.json "
                             "('-': standard output)")
    export.add_argument("--endpoint", metavar="URL",
                        help="POST the spans (OTLP/HTTP, protobuf) to URL; a URL without a "
                             "path gets /v1/traces (http://localhost:4318)")
    export.add_argument("--parent", choices=("link", "message"), default="link",
                        help="a receive's parent span: its lifeline (link: the send is a "
                             "span link) or its send too (message: for backends that drop "
                             "links, e.g. Langfuse, Phoenix)")
    export.add_argument("--header", action="append", default=[], metavar="NAME=VALUE",
                        help="an HTTP header for --endpoint (repeatable; also read from "
                             "OTEL_EXPORTER_OTLP_HEADERS)")
    export.add_argument("--timeout", type=float, default=TIMEOUT, metavar="SECONDS",
                        help=f"give each request to --endpoint at most this long, from "
                             f"connecting to the last byte of the answer (default {TIMEOUT:g})")
