"""Sending a recorded run to where people already look: OpenTelemetry (OTLP).

A trace becomes one OTel trace: the run a root span, each lifeline a span under
it, each event a span under its lifeline, messages span links (``otlp``).
The OpenTelemetry SDK is an extra (``causal-guards[otel]``), imported only when
an export runs: :class:`MissingExtra` says what to install.
"""

from ..lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .otlp import (
        PARENTS,
        MissingExtra,
        otlp_batches,
        otlp_json,
        otlp_request,
    )
    from .otlp import (
        _sdk as require_sdk,
    )
    from .post import ExportError, endpoint_url, post

__all__ = ["ExportError", "MissingExtra", "PARENTS", "endpoint_url", "otlp_batches", "otlp_json",
           "otlp_request", "post", "require_sdk"]

face(__name__, {
    ".otlp": "MissingExtra PARENTS otlp_batches otlp_json otlp_request _sdk:require_sdk",
    ".post": "ExportError endpoint_url post",
})
