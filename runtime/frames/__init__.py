"""What the processes of a run say to each other: the frames both sides speak.

:mod:`.wire` is the one layout of a message between lifelines; :mod:`.control`
is the protocol between the supervisor and a lifeline; a :class:`Ticket` is what
a lifeline needs to join a run, and :mod:`.curve` the CURVE keys that protect it.
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .control import (
        BEAT, Beat, FROM_SUPERVISOR, HELLO_TIMEOUT, Hello, IDLE, JOIN_TIMEOUT, LOG_BATCH, Log,
        MAX_CONTROL, Probe, Refused, SHIPPING, SILENCE, STOP_GRACE, SUPERVISOR_SILENCE, Start,
        State, Stop, decode, heard, quiet, routing_id, send,
    )
    from .curve import KeyRing, Keys, Zap, authenticator, secure_client, secure_server
    from .ticket import JoinError, Ticket, write_connection_file
    from .wire import FrameRejected, FrameTooLarge, Inbound, MAX_FRAME, MAX_PARTS, encode

__all__ = ["authenticator", "BEAT", "Beat", "Ticket", "decode", "encode", "FrameRejected",
           "FrameTooLarge", "FROM_SUPERVISOR", "heard", "Hello", "HELLO_TIMEOUT", "IDLE", "Inbound",
           "JOIN_TIMEOUT", "JoinError", "KeyRing", "Keys", "Log", "LOG_BATCH", "MAX_CONTROL",
           "MAX_FRAME", "MAX_PARTS", "Probe", "quiet", "Refused", "routing_id", "secure_client",
           "secure_server", "send", "SHIPPING", "SILENCE", "Start", "State", "Stop", "STOP_GRACE",
           "SUPERVISOR_SILENCE", "write_connection_file", "Zap"]

face(__name__, {
    ".control": ("BEAT Beat decode FROM_SUPERVISOR heard Hello HELLO_TIMEOUT IDLE JOIN_TIMEOUT Log "
                 "LOG_BATCH MAX_CONTROL Probe quiet Refused routing_id send SHIPPING SILENCE Start "
                 "State Stop STOP_GRACE SUPERVISOR_SILENCE"),
    ".curve": "KeyRing Keys Zap authenticator secure_client secure_server",
    ".ticket": "JoinError Ticket write_connection_file",
    ".wire": "encode FrameRejected FrameTooLarge Inbound MAX_FRAME MAX_PARTS",
})
