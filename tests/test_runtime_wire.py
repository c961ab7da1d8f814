"""``Inbound.check``'s fast path (types checked in C as a frame decodes) against its exact
checker: for any sequence of frames, valid, broken or random, both take the same frames as
the same messages, refuse the others with the same reason and text, and end in the same
state; and a ZeroMQ message of more than ``MAX_PARTS`` parts is refused whole."""

from __future__ import annotations

import math

import msgpack
from hypothesis import given, settings, strategies as st

from runtime_util import FIELDS, frame
from strategies import msgpack_values
from test_runtime_hostile import _prepared


def _pair():
    from runtime.frames.wire import Inbound
    plan, expects, messages = _prepared()
    made = [Inbound("run", "B", plan.lifelines, expects, plan.monitors.carried,
                    plan.monitors.shape, plan.choreography.variables) for _ in range(2)]
    made[1]._fast = lambda *_: None  # the exact checker alone
    return made, messages


def _outcome(inbound, data: bytes, taken: int, signer):
    from runtime.frames.wire import FrameRejected
    try:
        return inbound.check(data, taken, signer)
    except FrameRejected as rejected:
        return rejected.reason, str(rejected)


def _state(inbound):
    return (dict(inbound.last_seq), dict(inbound.last_clock), dict(inbound.rejected))


_VALUE = st.one_of(msgpack_values(), st.integers(-2**63, 2**64 - 1), st.floats(), st.booleans())
_CHANGES = {"values": st.one_of(msgpack_values(),
                                st.dictionaries(st.sampled_from(["x", "y", "z"]), _VALUE,
                                                max_size=2)),
            "seq": st.one_of(st.integers(-2, 6), msgpack_values()),
            "path": st.one_of(st.lists(st.integers(-1, 3), max_size=2), msgpack_values()),
            "outcome": st.one_of(st.none(), st.booleans(), msgpack_values())}


@settings(max_examples=300)
@given(data=st.data())
def test_the_fast_path_takes_and_refuses_exactly_as_the_exact_checker(data):
    (fast, exact), messages = _pair()
    for _ in range(data.draw(st.integers(1, 8))):
        message = data.draw(st.sampled_from(messages))
        broken = data.draw(st.sets(st.sampled_from(FIELDS), max_size=2))
        changes = {name: data.draw(_CHANGES.get(name, msgpack_values())) for name in broken}
        if "sender" in broken and data.draw(st.booleans()):
            changes["sender"] = data.draw(st.sampled_from(["A", "B", "C", "Z"]))
        frames = [frame("run", message, **changes), frame("run", message),
                  data.draw(st.binary(max_size=40)),
                  msgpack.packb(data.draw(msgpack_values()), use_bin_type=True)]
        sent = data.draw(st.sampled_from(frames))
        taken = data.draw(st.integers(0, 5))
        signer = data.draw(st.sampled_from([None, "A", "C"]))
        assert _outcome(fast, sent, taken, signer) == _outcome(exact, sent, taken, signer)
        assert _state(fast) == _state(exact)


def test_values_the_fast_path_declines_are_still_checked():
    (fast, exact), (first, *_) = _pair()
    for values in ({"x": math.nan}, {"x": 1.5}, {"x": True}, {"x": "1"}, {"x": [1]},
                   {"x": msgpack.ExtType(5, b"?")}, {"x": 2**64 - 1}, {"x": -2**63}):
        sent = frame("run", first, values=values)
        assert _outcome(fast, sent, 0, "A") == _outcome(exact, sent, 0, "A")
    assert fast.rejected == exact.rejected and fast.rejected["values"] == 6


def test_a_message_of_more_than_max_parts_parts_is_refused_whole_and_said(tmp_path):
    """Each part is ≤ 1 MiB (ZMQ_MAXMSGSIZE); their number is bounded too: a lifeline sends
    at most MAX_PARTS frames as one message, and a receiver refuses a longer one whole,
    its valid frames too, then goes on with the peer's next messages."""
    from runtime.frames.wire import MAX_PARTS
    from runtime_util import LiveLifeline
    from test_runtime_hostile import SOURCE, _finish_and_check, _messages
    live = LiveLifeline(tmp_path, SOURCE, "B")
    try:
        first, second, third, from_c = _messages(live)
        a, c = live.peer("A"), live.peer("C")
        a.send_multipart([live.frame(first)] + [b"\xc1"] * MAX_PARTS)
        live.until(lambda s: s.rejected == {"parts": MAX_PARTS + 1})
        assert f"refused a frame: parts: a message of {MAX_PARTS + 1} parts" in live.stderr
        # at the bound, every part is a frame checked on its own
        a.send_multipart([live.frame(first)] + [live.frame(first)] * (MAX_PARTS - 1))
        state = live.until(lambda s: s.received == 1)
        assert state.rejected == {"parts": MAX_PARTS + 1, "replayed": MAX_PARTS - 1}, state
        c.send(live.frame(from_c))
        a.send_multipart([live.frame(second), live.frame(third)])
        _finish_and_check(live, [first, from_c, second, third], {"x": 0, "y": 7})
    finally:
        live.close()


@settings(max_examples=500)
@given(value=msgpack_values(), text=st.text(max_size=300))
def test_frames_are_the_bytes_msgpack_packs(value, text):
    """``wire.encode`` packs with msgspec: byte for byte what msgpack's Packer (which the
    receiver's exact checker and earlier versions use) makes of the same fields."""
    from runtime.frames.wire import _pack
    fields = (1, text, "A", 2**40, "m", 3, (0, 1), {"n": value, text: [value, (value,)]}, text,
              None, b"\x93" * 40)
    assert _pack(fields) == msgpack.Packer(use_bin_type=True).pack(fields)
