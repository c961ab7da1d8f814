"""Sending a recorded run to where people already look: OpenTelemetry (OTLP).

A trace becomes one OTel trace: the run a root span, each lifeline a span under
it, each event a span under its lifeline, messages span links (``otlp``).
The OpenTelemetry SDK is an extra (``causal-guards[otel]``), imported only when
an export runs: :class:`MissingExtra` says what to install.
"""

from ..lazy import face

__all__ = ["ExportError", "MissingExtra", "PARENTS", "endpoint_url", "otlp_batches", "otlp_json",
           "otlp_request",
           "post", "require_sdk"]

face(__name__, {
    ".otlp": "MissingExtra PARENTS otlp_batches otlp_json otlp_request _sdk:require_sdk",
    ".post": "ExportError endpoint_url post",
})
