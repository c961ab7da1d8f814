"""A trace as one OpenTelemetry trace, built by the OTel SDK and encoded by its OTLP encoder.

The run is a root span, each lifeline a span under it, each event a span under
its lifeline; a receive links to its send's span (``--parent link``, the
messaging convention) and, with ``--parent message``, also has it as parent: some
backends (Langfuse, Phoenix) drop links.  Ids are derived from the trace's content,
so exporting one trace twice gives the same ids: a backend overwrites rather than
duplicates.  Times are the events' ``time`` if every event has one, else one
millisecond per event in trace order, ending at ``anchor`` (the file's mtime).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Iterator

from ..errors import EXIT_USAGE, CplError

PARENTS = ("link", "message")
MAX_TEXT = 4096  # characters of one attribute value: a backend refuses or cuts longer ones
MAX_NAME = 256  # characters of a span name or of the variable in an attribute key
MAX_LIST = 1000  # message ids listed as in transit
BATCH = 2000  # spans per request: a collector limits a request's size (4 MiB is common)
STEP = 1_000_000  # nanoseconds between the events of a trace that recorded no times
SYSTEM = "cpl"  # messaging.system


class MissingExtra(CplError):
    """The OpenTelemetry SDK is not installed (the ``otel`` extra)."""

    exit_code = EXIT_USAGE


def _sdk():
    """The SDK's pieces, imported when an export runs (the SDK is an extra)."""
    try:
        from opentelemetry import trace as api
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk import trace as sdk
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from opentelemetry.sdk.trace.id_generator import IdGenerator
        from opentelemetry.sdk.trace.sampling import ALWAYS_ON
    except ImportError as error:
        raise MissingExtra(f"needs the OpenTelemetry SDK ({error.name or error} is not "
                           f"installed): pip install 'causal-guards[otel]'") from None
    return (api, encode_spans, sdk, Resource, SimpleSpanProcessor, InMemorySpanExporter,
            IdGenerator, ALWAYS_ON)


# ------------------------------------------------------------------ values


def text(value: str, limit: int = MAX_TEXT) -> str:
    """``value`` cut to ``limit`` characters (marked ``…``) and encodable as UTF-8 (a lone
    surrogate becomes ``?``): protobuf refuses what UTF-8 cannot hold."""
    if len(value) > limit:
        value = value[:limit - 1] + "…"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value


def _json(value) -> str:
    return text(json.dumps(value, ensure_ascii=False, default=str))


def attribute(value):
    """A trace value as an OTel attribute value: strings, booleans, floats and 64-bit ints
    as themselves; null, lists, objects and larger ints as their JSON text."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, bool) or (isinstance(value, float) and math.isfinite(value)):
        return value
    if isinstance(value, int) and -2**63 <= value < 2**63:
        return value
    return _json(value)


def _key(prefix: str, name: str) -> str:
    return prefix + text(str(name), MAX_NAME)


def outcome_word(outcome) -> str:
    """A choice's value as the export words it: ``true``, ``false`` or ``undecided``."""
    return "undecided" if outcome is None else "true" if outcome else "false"


# --------------------------------------------------------------------- ids


def trace_id(trace) -> int:
    """128 bits of SHA-256 over the trace's document (header, events, meta) as sorted ASCII
    JSON: the same trace, in whichever form, gives the same id.  Hashed an event at a time
    (``events`` sorts first), so the whole document's text is never in memory at once."""
    import attrs

    def text(value) -> bytes:
        return json.dumps(value, sort_keys=True, ensure_ascii=True, default=str).encode("ascii")

    empty = text(attrs.evolve(trace, events=()).to_dict())
    start = b'{"events": ['
    assert empty.startswith(start + b"]")
    digest = hashlib.sha256(start)
    for index, event in enumerate(trace.events):
        digest.update(b", " + text(event.to_dict()) if index else text(event.to_dict()))
    digest.update(empty[len(start):])
    return int.from_bytes(digest.digest()[:16], "big") or 1


def span_id(trace: int, what: str, name: str) -> int:
    """64 bits of SHA-256 over the trace id and what the span stands for."""
    seed = f"{trace:032x}\0{what}\0{name}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(seed).digest()[:8], "big") or 1


# ------------------------------------------------------------------- times


def _nanoseconds(seconds) -> int:
    if not isinstance(seconds, (int, float)) or not math.isfinite(seconds):
        return 0
    return min(max(round(seconds * 1e9), 0), 2**63 - 1)


def times(trace, anchor: int) -> list[tuple[int, int]]:
    """Each event's (start, end) in ns since the epoch: its recorded ``time`` (an instant)
    if every event has one, else ``STEP`` apart in trace order, the last ending at
    ``anchor``."""
    events = trace.events
    if events and all(event.time is not None for event in events):
        return [(at, at) for at in (_nanoseconds(event.time) for event in events)]
    base = max(anchor - len(events) * STEP, 0)
    return [(base + index * STEP, base + (index + 1) * STEP) for index in range(len(events))]


# -------------------------------------------------------------------- run


def run_status(trace) -> tuple[str, str | None]:
    """How the run ended (``meta``'s status; ``cut_off`` for a stream without its end
    line; ``unknown`` for a trace that does not say) and its error, if any."""
    meta = dict(trace.meta or {})
    if meta.get("cut_off"):
        return "cut_off", ("the trace ends without its end line: "
                           "the run was killed or is still running")
    status = meta.get("status")
    error = meta.get("error")
    return (str(status) if status is not None else "unknown",
            None if error is None else str(error))


def _run_attributes(trace) -> dict:
    meta = dict(trace.meta or {})
    status, error = run_status(trace)
    found = {"cpl.run.status": status, "cpl.trace.format": "cpl-msc/1",
             "cpl.trace.events": len(trace.events),
             "cpl.trace.lifelines": [text(name, MAX_NAME) for name in trace.lifelines[:MAX_LIST]],
             "cpl.trace.lifelines.count": len(trace.lifelines)}
    if error is not None:
        found["cpl.run.error"] = text(error)
    for key in ("choreography", "seed", "steps"):
        if meta.get(key) is not None:
            found[f"cpl.run.{key}"] = attribute(meta[key])
    if isinstance(meta.get("died"), dict) and meta["died"].get("lifeline") is not None:
        found["cpl.run.died.lifeline"] = text(str(meta["died"]["lifeline"]), MAX_NAME)
    transit = [event.msg for event in trace.in_transit()]
    found["cpl.run.in_transit.count"] = len(transit)
    if transit:
        found["cpl.run.in_transit"] = [text(str(msg), MAX_NAME) for msg in transit[:MAX_LIST]]
    if meta:
        found["cpl.run.meta"] = _json(meta)
    return found


def _died(trace) -> str | None:
    died = (trace.meta or {}).get("died")
    return str(died.get("lifeline")) if isinstance(died, dict) else None


# ------------------------------------------------------------------ events


def _name(event, sender: str | None) -> str:
    if event.label:
        return text(f"{event.kind}: {event.label}", MAX_NAME)
    default = {"send": f"send to {event.to}", "recv": f"receive from {sender}"}
    return text(default.get(event.kind, event.kind), MAX_NAME)


def _message(event, operation: str, destination: str) -> dict:
    return {"messaging.system": SYSTEM, "messaging.operation.type": operation,
            "messaging.operation.name": operation, "messaging.message.id": text(str(event.msg)),
            "messaging.destination.name": text(str(destination), MAX_NAME)}


def event_attributes(trace, index: int, vc, received: bool) -> dict:
    """The span attributes of event ``index``: what it is, its clock, its values set, and
    its message (``messaging.*``) or decision (``gen_ai.guardrail.*``)."""
    event = trace.events[index]
    found = {"cpl.event": text(event.id), "cpl.lifeline": text(event.lifeline, MAX_NAME),
             "cpl.kind": event.kind, "cpl.index": index,
             "cpl.vc": _json(dict(vc)) if vc is not None else "null"}
    if event.label is not None:
        found["cpl.label"] = text(event.label)
    if event.time is not None:
        found["cpl.time"] = attribute(event.time)
    if event.payload is not None:
        found["cpl.payload"] = _json(event.payload)
    for name, value in event.set.items():
        found[_key("cpl.set.", name)] = attribute(value)
    if event.kind == "send":
        found.update(_message(event, "send", event.to))
        found["cpl.in_transit"] = not received
    elif event.kind == "recv":
        found.update(_message(event, "receive", event.lifeline))
        send = trace.send_of(event.msg)
        found["cpl.from"] = text(send.lifeline, MAX_NAME)
        found["cpl.send"] = text(send.id)
    elif event.kind == "choice":
        word = outcome_word(event.outcome)
        guard = text(event.guard) if event.guard is not None else ""
        found.update({"cpl.guard": guard, "cpl.outcome": word,
                      "gen_ai.guardrail.name": text(event.label or event.id),
                      "gen_ai.guardrail.policy": guard, "gen_ai.guardrail.result": word})
    return found


def clocks(trace) -> Iterator:
    """Each event's vector clock, in trace order: the recorded one, else computed from the
    MSC's edges.  One at a time: all of them at once would be events × lifelines."""
    if all(event.vc is not None for event in trace.events):
        yield from (event.vc for event in trace.events)
        return
    from ..trace import Clocks
    stamper = Clocks(trace.lifelines)
    for event in trace.events:  # every event stamped, so that the clocks stay in step
        stamped = stamper.stamp(event.lifeline, event.kind, event.msg)
        yield stamped if event.vc is None else event.vc


# ------------------------------------------------------------------- spans


def otlp_request(trace, parent: str = "link", anchor: int = 0):
    """The one ``ExportTraceServiceRequest`` of the whole ``trace`` (``otlp_batches``)."""
    batches = iter(otlp_batches(trace, parent, anchor))
    request = next(batches)
    for more in batches:
        request.resource_spans.extend(more.resource_spans)
    return request


def otlp_batches(trace, parent: str = "link", anchor: int = 0, size: int = BATCH):
    """``ExportTraceServiceRequest``s of at most ``size`` spans (the event spans in trace
    order, then the lifelines' and the run's): spans made by the SDK's tracer (our ids,
    times and attributes given), encoded by ``encode_spans`` and dropped a batch at a time,
    so a long trace does not hold every SDK span at once.  ``anchor``: the ns time a
    trace without recorded times ends at."""
    if parent not in PARENTS:
        raise ValueError(f"parent must be one of {PARENTS}")
    (api, encode_spans, sdk, Resource, SimpleSpanProcessor, InMemorySpanExporter,
     IdGenerator, ALWAYS_ON) = _sdk()
    identity = trace_id(trace)

    class Ids(IdGenerator):
        """The id of the span about to start (set before each ``start_span``)."""
        following = 0

        def generate_trace_id(self) -> int:
            return identity

        def generate_span_id(self) -> int:
            return self.following

    ids = Ids()
    meta = trace.meta or {}
    resource = Resource({"service.name": text(str(meta.get("choreography") or "cpl"), MAX_NAME),
                         "cpl.trace.format": "cpl-msc/1"})
    limits = sdk.SpanLimits(max_span_attributes=512, max_event_attributes=128,
                            max_link_attributes=128, max_events=128, max_links=128,
                            max_attribute_length=MAX_TEXT, max_span_attribute_length=MAX_TEXT)
    provider = sdk.TracerProvider(sampler=ALWAYS_ON, resource=resource, id_generator=ids,
                                  span_limits=limits, shutdown_on_exit=False)
    kept = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(kept))
    tracer = provider.get_tracer("cpl.export")
    if not isinstance(tracer, sdk.Tracer):
        raise MissingExtra("the OpenTelemetry SDK is disabled (OTEL_SDK_DISABLED=true): "
                           "unset it to export")

    def start(what, name, span_name, parent_span, start_time, **options):
        ids.following = span_id(identity, what, name)
        context = api.set_span_in_context(parent_span) if parent_span is not None else None
        return tracer.start_span(span_name, context=context, start_time=start_time, **options)

    spans = times(trace, anchor)
    first = min((s for s, _ in spans), default=anchor)
    last = max((e for _, e in spans), default=anchor)
    status, error = run_status(trace)
    root = start("run", "", text(f"run {meta.get('choreography') or ''}".strip(), MAX_NAME),
                 None, first, attributes=_run_attributes(trace))
    if status not in ("ok", "unknown"):
        root.set_status(api.Status(api.StatusCode.ERROR,
                                   text(f"{status}: {error}" if error else status)))
    lifelines = {}
    died = _died(trace)
    for name in trace.lifelines:
        local = [spans[index] for index in trace.local_events(name)]
        store = trace.init.get(name) or {}
        span = start("lifeline", name, text(name, MAX_NAME), root,
                     min((s for s, _ in local), default=first),
                     attributes={"cpl.lifeline": text(name, MAX_NAME), "cpl.events": len(local),
                                 "cpl.init": _json(dict(store))})
        if name == died:
            span.set_status(api.Status(api.StatusCode.ERROR, text(error or "died")))
        lifelines[name] = (span, max((e for _, e in local), default=first))
    made = {}  # a send's id -> its span's context, until its receive links to it
    vcs = clocks(trace)
    received = {event.msg for event in trace.events if event.kind == "recv"}
    for index, (event, vc) in enumerate(zip(trace.events, vcs)):
        links, above = (), lifelines[event.lifeline][0]
        kind = api.SpanKind.INTERNAL
        sender = None
        if event.kind == "send":
            kind = api.SpanKind.PRODUCER
        elif event.kind == "recv":
            kind = api.SpanKind.CONSUMER
            send = trace.send_of(event.msg)
            sender = send.lifeline
            sent = made.pop(send.id)
            links = [api.Link(sent, _message(event, "send", event.lifeline))]
            if parent == "message":
                above = api.NonRecordingSpan(sent)
        span = start("event", event.id, _name(event, sender), above, spans[index][0],
                     kind=kind, links=links,
                     attributes=event_attributes(trace, index, vc, event.msg in received))
        span.end(end_time=spans[index][1])
        if event.kind == "send" and event.msg in received:
            made[event.id] = span.get_span_context()
        if (index + 1) % size == 0:
            yield encode_spans(kept.get_finished_spans())
            kept.clear()
    for span, end in lifelines.values():
        span.end(end_time=end)
    root.end(end_time=last)
    finished = kept.get_finished_spans()
    for start_at in range(0, len(finished), size):  # at least one batch, with the run's span
        yield encode_spans(finished[start_at:start_at + size])


_IDS = ("traceId", "spanId", "parentSpanId")


def otlp_json(requests) -> Iterator[str]:
    """OTLP/JSON text of ``requests`` as one request, in parts: protobuf's JSON mapping,
    but with trace and span ids as hex strings and enums as integers, as the OTLP
    specification's JSON encoding asks (a collector's JSON receiver reads it;
    ``json_format.Parse`` wants the ids in base64)."""
    import base64
    from google.protobuf import json_format
    yield '{"resourceSpans":['
    comma = ""
    for request in requests:
        data = json_format.MessageToDict(request, use_integers_for_enums=True)
        for resource in data.get("resourceSpans", ()):
            for scope in resource.get("scopeSpans", ()):
                for span in scope.get("spans", ()):
                    for holder in (span, *span.get("links", ())):
                        for key in _IDS:
                            if key in holder:
                                holder[key] = base64.b64decode(holder[key]).hex()
            yield comma + json.dumps(resource, ensure_ascii=False, separators=(",", ":"))
            comma = ","
    yield "]}\n"
