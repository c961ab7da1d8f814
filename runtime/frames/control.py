"""The run's control protocol: what the supervisor and a lifeline process say to each other.

A lifeline says :class:`Hello` (where its inbox listens, which plan it
loaded), :class:`State` (idle, busy or ended, its counts and results),
:class:`Log` (the event lines of a lifeline on another host) and
:class:`Beat`; the supervisor says :class:`Start` (every inbox), :class:`Beat`,
:class:`Probe` and :class:`Stop`.  Each message is one ZeroMQ frame holding a
msgpack array ``[kind, field, ...]``; :func:`encode` writes it, :func:`decode`
reads it back and checks every field, and whatever is not a well-formed
message of a kind the reader takes is :class:`Refused` with a reason to count.

The supervisor takes a frame's sender from the key that signed it (the ZAP
``User-Id``), never from the ROUTER's routing id, which only *claims* a
lifeline: :func:`heard` refuses a frame whose claim and key differ.  Without
keys (``--insecure``) the claim is all there is.

Deadlock detection is Mattern's counting in two waves: :func:`quiet` says when
the reports add up, a :class:`Probe` wave asks every lifeline again, and each
answers with a :class:`State` carrying the wave's number.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import ClassVar

import attrs
import msgpack
import zmq

from cpl.trace import value_problem

BEAT = 0.5  # seconds between heartbeats, both ways
IDLE = 0.05  # seconds a lifeline stays idle before it says so (deadlock detection)
SILENCE = 5.0  # seconds without a lifeline's heartbeat: it is dead
SUPERVISOR_SILENCE = 10.0  # seconds without a word from the supervisor: it is gone
HELLO_TIMEOUT = 60.0  # seconds for every lifeline to load its choreography and say hello
JOIN_TIMEOUT = 300.0  # the same when lifelines are started by hand on other hosts
STOP_GRACE = 0.3  # seconds the lifelines have, after stop, for their last words

MAX_CONTROL = 64 << 20  # bytes in one control frame; also the supervisor's ZMQ_MAXMSGSIZE
SHIPPING = 64  # control frames queued at most each way between a lifeline and the
# supervisor: a shipped log's lines past that wait for room (ZeroMQ's 1,000 let a stop
# find 40,000 lines on the way, seconds of merging)
LOG_BATCH = 1 << 20  # bytes of log lines a lifeline ships in one frame (one line may be more)
_CLAIM = 200  # bytes of a lifeline's name in a routing id (which holds at most 255)
_COUNT = 1 << 63  # counts and wave numbers are below this (msgpack's int64)


class _Invalid(ValueError):
    """A field that does not hold what its message says it does."""


def _text(_, attribute, value) -> None:
    if type(value) is not str:
        raise _Invalid(f"{attribute.name} is {type(value).__name__}, not text")


def _count(_, attribute, value) -> None:
    if type(value) is not int or not 0 <= value < _COUNT:
        raise _Invalid(f"{attribute.name} = {value!r:.40} is not a count")


def _one_of(*allowed: str):
    def check(_, attribute, value) -> None:
        if value not in allowed or type(value) is not str:
            raise _Invalid(f"{attribute.name} = {value!r:.40} is not one of {', '.join(allowed)}")
    return check


def _optional(check):
    def optional(instance, attribute, value) -> None:
        if value is not None:
            check(instance, attribute, value)
    return optional


def _texts(_, attribute, value) -> None:
    if type(value) is not tuple or not all(type(item) is str for item in value):
        raise _Invalid(f"{attribute.name} is not a list of texts")


def _lines(_, attribute, value) -> None:
    if type(value) is not tuple or not all(type(item) is str and "\n" not in item
                                           for item in value):
        raise _Invalid(f"{attribute.name} is not a list of single lines of text")


def _tuple(value):
    """A msgpack array as a tuple; anything else unchanged, for the validator to refuse."""
    return tuple(value) if type(value) in (list, tuple) else value


def _mapping(keys, values):
    def check(instance, attribute, value) -> None:
        if type(value) is not dict:
            raise _Invalid(f"{attribute.name} is {type(value).__name__}, not a map")
        for key, item in value.items():
            keys(instance, attribute, key)
            values(instance, attribute, item)
    return check


def _json(_, attribute, value) -> None:
    problem = value_problem(value, sequences=(list, tuple))  # msgpack sends both as arrays
    if problem:
        raise _Invalid(f"{attribute.name}: a value {problem}")


@attrs.frozen
class Hello:
    """A lifeline is up: its inbox, and the fingerprint of the plan it loaded."""

    kind: ClassVar[str] = "hello"
    endpoint: str = attrs.field(validator=_text)  # tcp://HOST:PORT
    plan: str = attrs.field(validator=_text)  # choreo.execution.fingerprint of what it runs


@attrs.frozen
class Start:
    """Every lifeline said hello: here is every inbox; go."""

    kind: ClassVar[str] = "start"
    endpoints: dict = attrs.field(validator=_mapping(_text, _text))  # lifeline -> inbox


@attrs.frozen
class Beat:
    """I live (a lifeline's heartbeat thread, and the supervisor's pings)."""

    kind: ClassVar[str] = "beat"


@attrs.frozen
class Probe:
    """Deadlock detection: say your state again, as of now, marked with this wave."""

    kind: ClassVar[str] = "probe"
    wave: int = attrs.field(validator=_count)


@attrs.frozen
class Stop:
    """The run is over: say your last state and exit."""

    kind: ClassVar[str] = "stop"


@attrs.frozen
class State:
    """A lifeline's report: when it idles, ends, answers a probe, and at its stop."""

    kind: ClassVar[str] = "state"
    state: str = attrs.field(validator=_one_of("idle", "busy", "end"))
    status: str = attrs.field(validator=_one_of("running", "ok", "failed"))
    error: str | None = attrs.field(validator=_optional(_text))
    sent: int = attrs.field(validator=_count)
    received: int = attrs.field(validator=_count)
    taken: int = attrs.field(validator=_count)
    results: dict = attrs.field(validator=_mapping(_text, _json))
    waiting: tuple = attrs.field(converter=_tuple, validator=_texts)  # worded for a deadlock
    rejected: dict = attrs.field(validator=_mapping(_text, _count))  # data frames, by reason
    probe: int | None = attrs.field(validator=_optional(_count))  # the wave it answers
    final: bool = attrs.field(validator=attrs.validators.instance_of(bool))  # after Stop


@attrs.frozen
class Log:
    """Event lines (JSON) of a lifeline whose log is not on the supervisor's disk."""

    kind: ClassVar[str] = "log"
    lines: tuple = attrs.field(converter=_tuple, validator=_lines)


@attrs.frozen
class Refused:
    """A frame that is not a message the reader takes; ``reason`` is a tag for counting."""

    reason: str
    detail: str


FROM_LIFELINE = (Hello, State, Log, Beat)
FROM_SUPERVISOR = (Start, Beat, Probe, Stop)
_KINDS = {kind.kind: kind for kind in (*FROM_LIFELINE, *FROM_SUPERVISOR)}


def encode(message) -> bytes:
    """The frame of one control message."""
    fields = attrs.astuple(message, recurse=False)
    return msgpack.packb([message.kind, *fields], use_bin_type=True)


def decode(frame: bytes, takes: tuple[type, ...]):
    """The message in ``frame`` if it is a well-formed one of a kind in ``takes``; else
    :class:`Refused` (never an exception: with ``--insecure`` anybody may send this)."""
    if len(frame) > MAX_CONTROL:
        return Refused("oversized", f"{len(frame)} bytes (at most {MAX_CONTROL})")
    try:
        fields = msgpack.unpackb(frame, raw=False, use_list=True, strict_map_key=True)
    except Exception as error:  # noqa: BLE001 - msgpack raises many unrelated types
        return Refused("undecodable", f"not a msgpack frame ({type(error).__name__})")
    if type(fields) is not list or not fields or type(fields[0]) is not str:
        return Refused("layout", "not an array that starts with a message kind")
    kind = _KINDS.get(fields[0])
    if kind not in takes:
        return Refused("kind", f"no {fields[0]!r:.40} message is taken here")
    try:
        return kind(*fields[1:])
    except _Invalid as error:
        return Refused("layout", f"{kind.kind}: {error}")
    except TypeError:  # too many or too few fields
        return Refused("layout", f"{kind.kind} with {len(fields) - 1} fields")


def send(socket, message, route: bytes | None = None, *, patience: float = 0.0) -> None:
    """Send without waiting: on a ROUTER to ``route``.  A message that cannot leave now is
    dropped: the peer is slow or gone, and the next report or beat says it again.  With
    ``patience``, wait that many seconds at most for room first: a log's lines are said
    once, and a slow supervisor must not lose them (asked only when there is none: no
    poll on the way of a frame that fits)."""
    frames = [encode(message)] if route is None else [route, encode(message)]
    try:
        socket.send_multipart(frames, zmq.NOBLOCK)
    except zmq.Again:
        if patience and socket.poll(int(patience * 1000), zmq.POLLOUT):
            with contextlib.suppress(zmq.ZMQError):
                socket.send_multipart(frames, zmq.NOBLOCK)
    except zmq.ZMQError:
        pass


def routing_id(lifeline: str, token: str | None = None) -> bytes:
    """A lifeline socket's routing id: its name, which the supervisor takes only as a claim
    to check against the key, and a token (random unless given), so that nobody can take
    the id first (a ROUTER refuses a second connection with an id in use) and receive the
    lifeline's orders."""
    return _claim(lifeline) + b"\x00" + (token or secrets.token_hex(4)).encode("ascii")


def _claim(lifeline: str) -> bytes:
    return lifeline.encode("utf-8")[:_CLAIM]


@attrs.frozen
class Heard:
    """A message from a lifeline: who sent it, and where its answers go."""

    lifeline: str
    route: bytes
    message: object


def heard(router, lifelines, signed: bool, enough=None):
    """Every frame waiting on the supervisor's ROUTER now, each :class:`Heard` or
    :class:`Refused`, or those until ``enough()`` (asked before each next frame is taken).
    ``signed``: CURVE is on, and the key that signed a frame (the ZAP ``User-Id``) names
    its sender; a routing id claiming another lifeline is an ``impostor``.  Without keys
    the routing id is all there is."""
    claims = {_claim(name): name for name in lifelines}
    while enough is None or not enough():
        try:
            parts = router.recv_multipart(zmq.NOBLOCK, copy=False)
        except zmq.Again:
            return
        if len(parts) != 2:
            yield Refused("layout", f"{len(parts) - 1} frames in one message")
            continue
        route, frame = parts
        claim = route.bytes.split(b"\x00", 1)[0]
        sender = frame.get("User-Id") if signed else claims.get(claim)
        if sender not in lifelines:
            yield Refused("sender", "from no lifeline of this run")
        elif signed and _claim(sender) != claim:
            yield Refused("impostor", f"signed by {sender!r}, claims to be "
                          f"{claim.decode('utf-8', 'replace')!r}")
        else:
            said = decode(frame.bytes, FROM_LIFELINE)
            yield said if isinstance(said, Refused) else Heard(sender, route.bytes, said)


def quiet(reports) -> tuple | None:
    """Mattern's counting, one wave: every lifeline has reported, none is busy, one at least
    is idle (all ended is no deadlock), and as many messages were received as sent.  The
    counts a probe wave must find again, or None."""
    if any(report is None or report.state == "busy" for report in reports):
        return None
    if all(report.state == "end" for report in reports):
        return None
    if sum(r.sent for r in reports) != sum(r.received for r in reports):
        return None
    return tuple((r.sent, r.received) for r in reports)
