"""Posting an OTLP request to a collector over OTLP/HTTP (protobuf body), bounded in time.

A plain HTTP POST of the encoder's bytes: every way it can fail (no such host,
refused, too slow, an HTTP error, a partial success) becomes one ``ExportError``
that says what the collector answered.  ``--endpoint`` follows the OTLP exporters'
convention: a bare base URL (no path) gets ``/v1/traces``, a URL with a path is used
as given.  The timeout bounds the request as a whole (``Deadline``): a socket
timeout alone bounds each read, and a collector that trickles a byte now and then
would hold the export forever.
"""

from __future__ import annotations

import http.client
import socket
import urllib.error
import urllib.parse
import urllib.request

from ..errors import CplError
from .deadline import Deadline, bounded_opener

TRACES_PATH = "/v1/traces"
REPLY = 1 << 20  # bytes of a collector's answer read
DETAIL = 300  # characters of an error body quoted


class ExportError(CplError):
    """The collector could not be reached or did not accept the spans."""


def endpoint_url(url: str) -> str:
    """The URL to post to; ``ValueError`` naming what is wrong with ``url``."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018 (urllib checks the port only when asked)
    except ValueError:
        raise ValueError(f"{url!r}: the port is not a number from 0 to 65535") from None
    if parts.path in ("", "/"):
        parts = parts._replace(path=TRACES_PATH)
    return urllib.parse.urlunsplit(parts)


def _quoted(body: bytes) -> str:
    words = body[:DETAIL * 4].decode("utf-8", "replace")
    words = " ".join("".join(c if c.isprintable() else " " for c in words).split())
    return f": {words[:DETAIL]}" if words else ""


def post(request, url: str, headers: dict | None = None, timeout: float = 10.0) -> int:
    """POST ``request`` (an ``ExportTraceServiceRequest``) to ``url`` as given; the number
    of spans the collector accepted.  The whole request, from connecting to the last byte
    of the answer, takes at most ``timeout`` s."""
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse)
    sent = sum(len(scope.spans) for resource in request.resource_spans
               for scope in resource.scope_spans)
    call = urllib.request.Request(url, data=request.SerializeToString(), method="POST",
                                  headers={"Content-Type": "application/x-protobuf",
                                           **(headers or {})})
    late = ExportError(f"{url} did not answer within {timeout:g} s")
    with Deadline(timeout) as deadline:
        try:
            with bounded_opener(deadline).open(call, timeout=timeout) as response:
                reply = response.read(REPLY)
        except urllib.error.HTTPError as error:
            try:
                with error:
                    body = error.read(REPLY) if error.fp is not None else b""
            except (OSError, http.client.HTTPException, ValueError):
                if deadline.passed:
                    raise late from None
                body = b""
            raise ExportError(f"{url} answered HTTP {error.code} {error.reason}"
                              f"{_quoted(body)}") from None
        except (OSError, http.client.HTTPException, ValueError) as error:
            reason = getattr(error, "reason", error) if isinstance(error, urllib.error.URLError) \
                else error
            if deadline.passed or isinstance(reason, (TimeoutError, socket.timeout)):
                raise late from None
            if isinstance(error, urllib.error.URLError):
                why = getattr(reason, "strerror", None) or str(reason)
                raise ExportError(f"cannot reach {url}: {why}") from None
            raise ExportError(f"cannot post to {url}: {error}") from None
        if deadline.passed:  # the answer came whole, cut by the deadline
            raise late
    answer = ExportTraceServiceResponse()
    try:
        answer.ParseFromString(reply)
    except DecodeError:  # a collector that answers 2xx with something else: it took them
        return sent
    rejected = answer.partial_success.rejected_spans
    if rejected:
        message = answer.partial_success.error_message
        raise ExportError(f"{url} rejected {rejected} of {sent} spans"
                          + (f": {message[:DETAIL]}" if message else ""))
    return sent
