"""``runtime.frames.control``: the control messages, their one decoder against hostile frames, the
binding of a frame to the key that signed it, and Mattern's counting rule."""

from __future__ import annotations

import math
import time

import attrs
import msgpack
import pytest
import zmq
from hypothesis import given, strategies as st

from runtime.frames import control
from runtime.frames import Keys, KeyRing, authenticator, secure_client, secure_server
from runtime.frames.control import (FROM_LIFELINE, FROM_SUPERVISOR, Beat, Hello, Log, Probe,
                                    Refused, Start, State, Stop, decode, encode)
from strategies import msgpack_values


def _state(**changes) -> State:
    fields = dict(state="idle", status="running", error=None, sent=3, received=2, taken=9,
                  results={"x": [1, {"y": "z"}], "ok": True}, waiting=("A waits for B",),
                  rejected={"replayed": 1}, probe=None, final=False)
    return State(**{**fields, **changes})


MESSAGES = [Hello("tcp://127.0.0.1:5555", "0123456789abcdef"),
            Start({"A": "tcp://127.0.0.1:1", "B": "tcp://127.0.0.2:2"}), Beat(), Probe(7),
            Stop(), _state(), _state(state="end", status="failed", error="B.2 raised", probe=4,
                                final=True), Log(("{\"id\": \"A.1\"}", "{}"))]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: m.kind)
def test_every_message_decodes_to_itself_on_the_side_that_takes_it(message):
    frame = encode(message)
    takes = FROM_LIFELINE if type(message) in FROM_LIFELINE else FROM_SUPERVISOR
    assert decode(frame, takes) == message
    if type(message) is not Beat:  # the one message both sides say
        other = FROM_SUPERVISOR if takes is FROM_LIFELINE else FROM_LIFELINE
        assert decode(frame, other).reason == "kind"


def _fields(message) -> list:
    return [message.kind, *attrs.astuple(message, recurse=False)]


def _packed(*fields) -> bytes:
    return msgpack.packb(list(fields), use_bin_type=True)


def _with(message, **changes) -> bytes:
    """``message``'s frame with fields replaced by values its class would not take."""
    fields = _fields(message)
    names = [field.name for field in attrs.fields(type(message))]
    for name, value in changes.items():
        fields[1 + names.index(name)] = value
    return msgpack.packb(fields, use_bin_type=True)


def _deep(depth: int):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


STATE = _state()
HOSTILE = {
    "undecodable": [b"", b"\xc1", b"\x93\x01\x02", b"\xdd\xff\xff\xff\xff",
                    b"\x9b" + b"\x91" * 5000 + b"\x01", msgpack.packb({1: 2})],
    "layout": [msgpack.packb({"t": "state", "state": "end", "status": "ok"}),  # the old dicts
               msgpack.packb("state"), msgpack.packb([]), _packed(1, 2), _packed(b"state"),
               _packed("hello"), _packed("hello", "tcp://x", "plan", "more"),
               _packed("probe", -1), _packed("probe", 1 << 63), _packed("probe", True),
               _packed("probe", 1.0), _packed("probe", None), _packed("hello", b"tcp://", "p"),
               _packed("start", ["A", "tcp://x"]), _packed("start", {"A": 5}),
               _packed("log", "one line"), _packed("log", ["two\nlines"]), _packed("log", [1]),
               _with(STATE, state="asleep"), _with(STATE, status="done"),
               _with(STATE, sent=True), _with(STATE, sent=-1), _with(STATE, sent="3"),
               _with(STATE, results=[]), _with(STATE, results={"x": _deep(150)}),
               _with(STATE, results={"x": math.nan}), _with(STATE, results={"x": b"raw"}),
               _with(STATE, results={"x": msgpack.ExtType(1, b"")}),
               _with(STATE, waiting="ab"), _with(STATE, waiting=[3]), _with(STATE, error=5),
               _with(STATE, rejected={"x": -1}), _with(STATE, rejected=[]),
               _with(STATE, probe="1"), _with(STATE, final=1)],
    "kind": [_packed("nonsense"), _packed("start", {}), _packed("stop"), _packed("probe", 1),
             _packed("Hello", "tcp://x", "p")],
}


@pytest.mark.parametrize("reason, frame", [(reason, frame) for reason, frames in HOSTILE.items()
                                           for frame in frames])
def test_a_frame_that_is_no_well_formed_message_is_refused_with_a_reason(reason, frame):
    """Every kind taken (a ``kind`` case: the supervisor's kinds), so the reason is the frame's."""
    refused = decode(frame, FROM_LIFELINE if reason == "kind" else FROM_LIFELINE + FROM_SUPERVISOR)
    assert isinstance(refused, Refused), refused
    assert refused.reason == reason, refused


def test_an_oversized_frame_is_refused_before_it_is_read():
    refused = decode(b"\x91" + b"\x00" * control.MAX_CONTROL, FROM_LIFELINE)
    assert refused.reason == "oversized"


@given(data=st.data())
def test_any_frame_decodes_to_a_valid_message_or_is_refused_never_raises(data):
    message = data.draw(st.sampled_from(MESSAGES))
    fields = _fields(message)
    for index in data.draw(st.sets(st.integers(0, len(fields)), max_size=3)):
        value = data.draw(msgpack_values())
        if index < len(fields):
            fields[index] = value
        else:
            fields.append(value)
    packed = st.builds(lambda v: msgpack.packb(v, use_bin_type=True), msgpack_values())
    frame = data.draw(st.one_of(st.just(msgpack.packb(fields, use_bin_type=True)),
                                st.binary(max_size=64), packed))
    takes = data.draw(st.sampled_from([FROM_LIFELINE, FROM_SUPERVISOR]))
    said = decode(frame, takes)
    if isinstance(said, Refused):
        assert said.reason in {"undecodable", "layout", "kind"} and said.detail
    else:
        assert type(said) in takes
        assert decode(encode(said), takes) == said  # a valid message, as its class checks it


def test_quiet_is_every_lifeline_idle_or_ended_with_as_many_received_as_sent():
    idle = _state(sent=1, received=1)
    ended = _state(state="end", sent=2, received=2)
    assert control.quiet([idle, ended]) == ((1, 1), (2, 2))
    assert control.quiet([idle, None]) is None  # one has not reported yet
    assert control.quiet([idle, _state(state="busy", sent=2, received=2)]) is None
    assert control.quiet([ended, ended]) is None  # all ended: the run is over, not stuck
    assert control.quiet([idle, _state(sent=3, received=2)]) is None  # a message in flight


# ------------------------------------------------------------------ bound to the key

@pytest.fixture
def router():
    """A supervisor's ROUTER with CURVE and ZAP naming lifelines A and B by their keys;
    ``dealer(keys_of, claim)`` connects a DEALER with ``keys_of``'s keys claiming ``claim``."""
    context = zmq.Context()
    pairs = {name: Keys.pair() for name in ("A", "B", "")}
    public = {name: pair[0] for name, pair in pairs.items() if name}
    keys = {name: Keys(*pairs[name], pairs[""][0], public) for name in pairs}
    auth = authenticator(context, KeyRing(public))
    sockets = []
    server = context.socket(zmq.ROUTER)
    sockets.append(server)
    secure_server(server, keys[""])
    address = f"tcp://127.0.0.1:{server.bind_to_random_port('tcp://127.0.0.1')}"

    def dealer(keys_of: str | None, claim: bytes):
        made = context.socket(zmq.DEALER)
        sockets.append(made)
        made.identity = claim
        secure_client(made, keys[keys_of] if keys_of else None, pairs[""][0])
        made.connect(address)
        return made
    try:
        yield server, dealer
    finally:
        for made in sockets:
            made.close(0)
        auth.stop()
        context.term()


def _all_heard(server, count: int, signed: bool = True) -> list:
    heard, deadline = [], time.monotonic() + 10
    while len(heard) < count and time.monotonic() < deadline:
        if server.poll(50):
            heard.extend(control.heard(server, ("A", "B"), signed))
    assert len(heard) == count, heard
    return heard


def test_the_sender_is_the_key_that_signed_the_frame_never_the_routing_id(router):
    server, dealer = router
    a = dealer("A", control.routing_id("A", "t1"))
    forger = dealer("A", control.routing_id("B", "t2"))  # A's key, claiming to be B
    control.send(forger, _state(state="end", status="ok"))
    (refused,) = _all_heard(server, 1)
    assert refused == Refused("impostor", "signed by 'A', claims to be 'B'")
    control.send(a, Beat())
    (heard,) = _all_heard(server, 1)
    assert (heard.lifeline, heard.route, heard.message) == ("A", b"A\x00t1", Beat())
    control.send(dealer("A", b"Z\x00t3"), Beat())  # a claim that names no lifeline
    assert _all_heard(server, 1)[0] == Refused("impostor", "signed by 'A', claims to be 'Z'")
    control.send(dealer("B", b"B\x00t4"), Probe(1))  # B's key, but a supervisor's message
    assert _all_heard(server, 1)[0].reason == "kind"
    a.send_multipart([encode(Beat()), encode(Beat())])
    assert _all_heard(server, 1)[0].reason == "layout"


def test_without_keys_the_routing_id_is_all_there_is():
    context = zmq.Context()
    server, client = context.socket(zmq.ROUTER), context.socket(zmq.DEALER)
    try:
        address = f"tcp://127.0.0.1:{server.bind_to_random_port('tcp://127.0.0.1')}"
        client.identity = b"Z\x00t"
        client.connect(address)
        control.send(client, Beat())
        (refused,) = _all_heard(server, 1, signed=False)
        assert refused.reason == "sender"
        client.identity = b"B\x00t"  # a socket's id is set before it connects: a new one
        forger = context.socket(zmq.DEALER)
        forger.identity = b"B\x00u"
        forger.connect(address)
        control.send(forger, Probe(3))
        control.send(forger, Beat())
        refused, heard = _all_heard(server, 2, signed=False)
        assert refused.reason == "kind" and (heard.lifeline, heard.message) == ("B", Beat())
        forger.close(0)
    finally:
        server.close(0)
        client.close(0)
        context.term()
