"""Hostile frames injected into a live ``cpl lifeline`` process.

The test is B's supervisor (a ROUTER with the supervisor's CURVE keys and a
ZAP handler that names each lifeline by its key) and B's peers A and C (PUSH
sockets to B's inbox with their keys).  Valid frames come from real Runners
of A and C driven here and ``runtime.frames.wire.encode``; hostile ones are those
frames with one field broken, or no frame at all.  What B does is read from
its ``state`` reports (answers to probes: ``received``, ``taken``, the
``rejected`` counts by reason) and from its event log, which must be exactly
the events B's own Runner takes when only the valid frames arrive.
"""

from __future__ import annotations

import functools
import math
import tempfile
import uuid
from collections import Counter
from pathlib import Path

import msgpack
import pytest
from hypothesis import given, strategies as st

from runtime.frames import Keys
from runtime.lifeline.process import REFUSALS_SHOWN
from runtime.frames.wire import MAX_FRAME, VERSION
from strategies import msgpack_values
from runtime_util import FIELDS, LiveLifeline, drive_until_send, frame, reference_events

# B takes A's x three times and C's y once, then decides on @A.x (the newest x in its
# causal past), so the decision depends on exactly which of A's frames got in.
SOURCE = '''
from choreo import Choreography

c = hostile = Choreography("hostile")
A, B, C = c.lifelines("A", "B", "C")
x = c.var("x", int)
y = c.var("y", int)
c.set(A, x=1)
c.send(A, B, x, label="first")
c.set(C, y=7)
c.send(C, B, y, label="from C")
c.set(A, x=2)
c.send(A, B, x, label="second")
c.set(A, x=3)
c.send(A, B, x, label="third")
with c.if_("@A.x == 3", at=B, label="latest?"):
    c.set(B, x=0)
with c.else_():
    c.set(B, x=-1)
c.result(B, x, y)
'''


@pytest.fixture
def live(tmp_path):
    lifeline = LiveLifeline(tmp_path, SOURCE, "B")
    try:
        yield lifeline
    finally:
        lifeline.close()


def _messages(live):
    """A's three messages and C's one, from their own Runners."""
    a, c = live.runner("A"), live.runner("C")
    first, second, third = (drive_until_send(a) for _ in range(3))
    from_c = drive_until_send(c)
    assert [m.msg_id for m in (first, second, third, from_c)] == ["A:1", "A:2", "A:3", "C:1"]
    return first, second, third, from_c


def _deep(depth: int):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


def _packed(*fields) -> bytes:
    return msgpack.packb(list(fields), use_bin_type=True)


def _finish_and_check(live, delivered, results=None) -> dict:
    """B has taken exactly what ``delivered`` causes: its log equals its own Runner's events
    for those messages, and it ended with ``results``."""
    want = reference_events(live.plan, "B", live.seed, delivered)
    # a probe can be answered between B's last event and B marking its end: wait for both
    state = live.until(lambda s: s.taken == len(want)
                       and (results is None or s.state == "end"))
    assert live.events() == want
    if results is not None:
        assert state.state == "end" and state.status == "ok", state
        assert state.results == results
    assert live.alive
    return state


def test_frames_that_fail_the_checks_are_counted_by_reason_and_change_nothing(live):
    first, second, third, from_c = _messages(live)
    a, c = live.peer("A"), live.peer("C")
    too_deep = b"\x9b" + b"\x91" * 5000 + b"\x01" + b"\xc0" * 10  # past msgpack's own limit
    # Broken copies of A's second message (A:2: a fresh number while only A:1 is in)
    hostile = {
        "undecodable": [b"", b"\xc1", b"not msgpack at all", b"\xdd\xff\xff\xff\xff",
                        b"\x93\x01\x02", msgpack.packb({1: 2}), too_deep],
        "layout": [_packed(1, 2, 3), msgpack.packb({"t": "hello"}), msgpack.packb("text"),
                   _packed(*range(12)), live.frame(second, path=[-1]),
                   live.frame(second, path="0"), live.frame(second, label=5),
                   live.frame(second, outcome=True)],
        "version": [live.frame(second, version=VERSION + 1), live.frame(second, version="1"),
                    live.frame(second, version=None)],
        "run": [live.frame(second, run=uuid.uuid4().hex), live.frame(second, run=None),
                live.frame(second, run=live.run.encode())],
        "sender": [live.frame(second, sender="Z"), live.frame(second, sender="B"),
                   live.frame(second, sender=0), live.frame(second, sender=None)],
        "replayed": [live.frame(second, seq=1), live.frame(second, seq=0),
                     live.frame(second, seq=-5), live.frame(second, seq="2"),
                     live.frame(second, seq=2.0)],
        "unexpected": [live.frame(second, kind="c"), live.frame(second, ident=999),
                       live.frame(second, ident="1"), live.frame(from_c, sender="A", seq=2),
                       live.frame(second, kind=["m"]), live.frame(second, kind={"m": 1})],
        "values": [live.frame(second, values={"y": 2}), live.frame(second, values={}),
                   live.frame(second, values={"x": 2, "z": 1}), live.frame(second, values=[2]),
                   live.frame(second, values={"x": math.nan}),
                   live.frame(second, values={"x": -math.inf}),
                   live.frame(second, values={"x": b"bytes"}),
                   live.frame(second, values={"x": _deep(150)}),
                   live.frame(second, values={"x": msgpack.ExtType(5, b"?")})],
        "metadata": [live.frame(second, meta="text"), live.frame(second, meta=b"\xc1"),
                     live.frame(second, meta=msgpack.packb([[1], [0], [[]]])),
                     live.frame(second, meta=msgpack.packb([[1, 0, -1], [0, 0, 0],
                                                            [[], [], []]])),
                     live.frame(second, meta=msgpack.packb(
                         [[1, 0, 0], [0, 0, 0], [[], [], []], msgpack.ExtType(9, b"")]))],
    }
    expected = Counter()
    a.send(live.frame(first))  # valid: A:1
    live.until(lambda s: s.received == 1)
    for reason, frames in hostile.items():
        for bad in frames:
            a.send(bad)
            expected[reason] += 1
            live.until(lambda s: s.rejected == dict(expected))
        if reason == "run":
            c.send(live.frame(from_c))  # valid, in between: C:1
            live.until(lambda s: s.received == 2)
    state = live.probe()
    assert (state.received, state.taken) == (2, 2), state
    for message in (second, third):
        a.send(live.frame(message))
    _finish_and_check(live, [first, from_c, second, third], {"x": 0, "y": 7})
    # after its end B still refuses, and counts: a multipart message is two frames
    a.send_multipart([b"\x00", b"\x01"])
    a.send(live.frame(third))
    expected["layout"] += 2
    expected["replayed"] += 1
    state = live.settled(lambda s: s.rejected == dict(expected))
    assert (state.received, state.taken, state.state) == (4, 6, "end"), state
    assert len(live.events()) == 6 and live.alive


def test_replays_and_clocks_that_cannot_be_are_refused(live):
    first, second, third, from_c = _messages(live)
    a, c = live.peer("A"), live.peer("C")
    a.send(live.frame(first))
    live.until(lambda s: s.received == 1)
    a.send(live.frame(first))  # the same frame again
    live.until(lambda s: s.rejected == {"replayed": 1})
    a.send(live.frame(second, seq=1))  # a new frame under a used number
    live.until(lambda s: s.rejected == {"replayed": 2})
    # A's clock going backwards: a fresh number, A's first clock again
    a.send(live.frame(second, meta=first.metadata.encode()))
    live.until(lambda s: s.rejected == {"replayed": 2, "clock": 1})
    # (a clock claiming more of B's events than B took: B is not carried here, no guard
    # reads it, so its frames have no entry for B; see the Inbound test below)
    c.send(live.frame(from_c))
    a.send(live.frame(second))
    a.send(live.frame(third))
    a.send(live.frame(third))  # replayed after it was taken
    state = live.settled(lambda s: s.taken == 6 and s.rejected.get("replayed") == 3)
    assert state.rejected == {"replayed": 3, "clock": 1}
    _finish_and_check(live, [first, from_c, second, third], {"x": 0, "y": 7})


def test_a_frame_signed_by_one_lifeline_claiming_another_is_refused_costing_the_other_nothing(live):
    """A holds a key of this run, but not C's: a frame from A's key that says it is from C
    is an impostor — and must not use up C's sequence numbers or clock either."""
    first, second, third, from_c = _messages(live)
    a, c = live.peer("A"), live.peer("C")
    a.send(live.frame(first))
    a.send(live.frame(from_c))  # A's key, "sender": "C": C's real message, C's number 1
    live.until(lambda s: s.received == 1 and sum(s.rejected.values()) == 1)
    a.send(live.frame(from_c, seq=1 << 40, values={"y": 666}))  # and a number far ahead
    live.until(lambda s: sum(s.rejected.values()) == 2)
    c.send(live.frame(from_c))  # C's own frame, C:1: still welcome
    a.send(live.frame(second))
    a.send(live.frame(third))
    state = live.settled(lambda s: s.received + sum(s.rejected.values()) >= 5)
    assert state.rejected == {"impostor": 2}, state
    _finish_and_check(live, [first, from_c, second, third], {"x": 0, "y": 7})


def test_a_flood_of_refused_frames_is_counted_but_said_only_a_few_times(live):
    """A peer holding the run's keys must not be able to flood B's standard error."""
    first, second, third, from_c = _messages(live)
    a = live.peer("A")
    for _ in range(60):
        a.send(b"\xc1")
    a.send(live.frame(second, seq=0))
    live.until(lambda s: s.rejected == {"undecodable": 60, "replayed": 1})
    said = live.stderr.splitlines()
    assert sum("refused a frame" in line for line in said) == REFUSALS_SHOWN + 1, said
    assert sum("further frames refused as 'undecodable'" in line for line in said) == 1, said
    assert live.alive


def test_an_oversized_frame_is_dropped_and_the_sender_can_go_on(live):
    first, second, third, from_c = _messages(live)
    a, c = live.peer("A"), live.peer("C")
    a.send(live.frame(first))
    live.until(lambda s: s.received == 1)
    a.send(live.frame(second, values={"x": "x" * (MAX_FRAME + 10)}))  # more than 1 MiB
    a.send(b"\x00" * (MAX_FRAME + 1))
    state = live.settled(lambda s: True, quiet=0.5)
    assert state.received == 1 and state.taken == 1, state
    assert live.alive
    # ZMQ_MAXMSGSIZE drops the connection that carried it; A's socket reconnects and its
    # next frames arrive (the oversized ones are never seen, so never counted by reason)
    assert set(state.rejected) <= {"oversized"}, state
    c.send(live.frame(from_c))
    a.send(live.frame(second))
    a.send(live.frame(third))
    _finish_and_check(live, [first, from_c, second, third], {"x": 0, "y": 7})


def test_a_peer_without_the_runs_keys_gets_nothing_in(live):
    first, second, third, from_c = _messages(live)
    outsider = live.peer("A", keys=Keys(*Keys.pair(), live.keys[""].public, {}))
    for message in (first, from_c, second, third):  # perfect frames, wrong key
        outsider.send(live.frame(message))
    state = live.settled(lambda s: True, quiet=1.0)
    assert (state.received, state.taken, state.rejected) == (0, 0, {}), state
    assert live.events() == []
    # the same frames from the real keys are taken
    a, c = live.peer("A"), live.peer("C")
    a.send(live.frame(first))
    c.send(live.frame(from_c))
    a.send(live.frame(second))
    a.send(live.frame(third))
    _finish_and_check(live, [first, from_c, second, third], {"x": 0, "y": 7})


def test_metadata_that_decodes_but_does_not_fit_the_monitor_does_not_kill_the_lifeline(live):
    """Metadata whose variable views are shorter than the monitor reads (B reads @A.x:
    A's view holds one value) must be refused, not crash B when it takes the message."""
    first, second, third, from_c = _messages(live)
    a, c = live.peer("A"), live.peer("C")
    a.send(live.frame(first))
    c.send(live.frame(from_c))
    live.until(lambda s: s.taken == 2)
    broken = second.metadata._replace(vars=tuple(() for _ in second.metadata.vars))
    a.send(live.frame(second, meta=broken.encode()))
    state = live.settled(lambda s: s.received == 3 or s.rejected)  # raises if B died
    assert live.alive, f"B died of a frame: {live.stderr}"
    assert (state.received, state.rejected) == (2, {"metadata": 1}), state
    a.send(live.frame(second))
    a.send(live.frame(third))
    _finish_and_check(live, [first, from_c, second, third], {"x": 0, "y": 7})


def test_values_of_the_wrong_type_are_refused(live):
    """x is declared int: a frame that assigns it a text (or a list, or a bool) must not
    reach B's store, where the decision @A.x == 3 would read it."""
    first, second, third, from_c = _messages(live)
    a = live.peer("A")
    a.send(live.frame(first, values={"x": "one"}))
    a.send(live.frame(second, values={"x": [1]}))
    a.send(live.frame(third, values={"x": True}))
    state = live.settled(lambda s: s.received + sum(s.rejected.values()) == 3)
    assert state.received == 0 and state.rejected == {"values": 3}, state
    assert live.events() == []


def test_a_second_frame_for_a_message_already_waiting_is_counted(live):
    """A fresh sequence number for a message key B already holds is refused by the Runner
    (``deliver``): it must be counted like every refused frame, and not as received."""
    first, second, third, from_c = _messages(live)
    a = live.peer("A")
    a.send(live.frame(second))  # B wants A:1 first: A:2 waits in the inbox
    live.until(lambda s: s.received == 1)
    a.send(live.frame(second, seq=3, meta=third.metadata.encode()))  # same key, newer clock
    a.send(live.frame(third, run="another run"))  # after it on the same connection
    state = live.settled(lambda s: s.rejected.get("run") == 1)
    assert state.received == 1 and sum(state.rejected.values()) == 2, state


# ------------------------------------------------------------------ the checks on their own

@functools.lru_cache(maxsize=1)
def _prepared():
    """The choreography above, prepared once; A's three messages and C's one."""
    from choreo import load_one
    from choreo.analysis.local import expected_messages
    from choreo.execution.plan import prepare

    path = Path(tempfile.mkdtemp(prefix="cpl-hostile-")) / "hostile.py"
    path.write_text(SOURCE)
    plan = prepare(load_one(str(path), None))
    stores = plan.stores(plan.inputs())
    a, c = (plan.runner(name, dict(stores[name]), 0) for name in ("A", "C"))
    messages = [drive_until_send(a) for _ in range(3)] + [drive_until_send(c)]
    return plan, expected_messages(plan.projection.program("B")), messages


def _inbound(tmp_path=None):
    """A fresh ``Inbound`` of B for the choreography above, and A's and C's messages."""
    from runtime.frames.wire import Inbound
    plan, expects, messages = _prepared()
    return Inbound("run", "B", plan.lifelines, expects, plan.monitors.carried,
                   plan.monitors.shape), messages


def test_a_clock_claiming_more_of_my_events_than_i_took_is_refused_when_i_am_carried():
    from cpl.monitor import Metadata
    from runtime.frames.wire import FrameRejected, Inbound
    plan, expects, messages = _prepared()
    inbound = Inbound("run", "B", plan.lifelines, expects, ("A", "B"))  # as if a guard read B
    first = messages[0]
    claim = Metadata((first.metadata.vc[0], 5), (0, 0), ((), ())).encode()
    with pytest.raises(FrameRejected, match="claims 5 events of B, which has taken 1"):
        inbound.check(_encoded(first, meta=claim), taken=1)
    honest = Metadata((first.metadata.vc[0], 1), (0, 0), ((), ())).encode()
    assert inbound.check(_encoded(first, meta=honest), taken=1).sender == "A"
    assert inbound.rejected == {"clock": 1}


def _encoded(message, **changes) -> bytes:
    return frame("run", message, **changes)  # the run of the Inbound above


def test_a_key_that_cannot_be_hashed_is_refused_not_raised(tmp_path):
    from runtime.frames.wire import FrameRejected
    inbound, (first, *_) = _inbound(tmp_path)
    for kind in (["m"], {"m": 1}):
        with pytest.raises(FrameRejected):
            inbound.check(_encoded(first, kind=kind), 0)
    assert inbound.rejected == {"unexpected": 2}
    assert inbound.check(_encoded(first), 0).sender == "A"


def test_an_impostor_is_refused_before_it_uses_up_anything_of_the_lifeline_it_claims(tmp_path):
    from runtime.frames.wire import FrameRejected
    inbound, (first, second, third, from_c) = _inbound(tmp_path)
    with pytest.raises(FrameRejected, match="impostor"):
        inbound.check(_encoded(from_c, seq=1 << 40), 0, signer="A")
    with pytest.raises(FrameRejected, match="impostor"):
        inbound.check(_encoded(from_c), 0, signer="A")
    assert inbound.rejected == {"impostor": 2}
    assert inbound.check(_encoded(from_c), 0, signer="C").msg_id == "C:1"
    assert inbound.check(_encoded(first), 0, signer="A").msg_id == "A:1"
    assert inbound.check(_encoded(second), 0).msg_id == "A:2"  # no signer: --insecure


@given(data=st.data())
def test_any_frame_is_taken_or_refused_by_reason_never_raises_anything_else(data):
    from runtime.frames.wire import FrameRejected
    inbound, messages = _inbound()
    message = data.draw(st.sampled_from(messages))
    broken = data.draw(st.sets(st.sampled_from(FIELDS), max_size=3))
    changes = {name: data.draw(msgpack_values()) for name in broken}
    frame = data.draw(st.one_of(st.just(_encoded(message, **changes)), st.binary(max_size=64),
                                st.builds(lambda v: msgpack.packb(v, use_bin_type=True),
                                          msgpack_values())))
    before = sum(inbound.rejected.values())
    try:
        inbound.check(frame, data.draw(st.integers(0, 5)), signer=data.draw(
            st.sampled_from([None, "A", "C"])))
    except FrameRejected:
        assert sum(inbound.rejected.values()) == before + 1
    else:
        assert sum(inbound.rejected.values()) == before


def test_insecure_lifeline_takes_plain_frames_and_still_checks_them(tmp_path):
    """--insecure: no CURVE, no names from keys — but every other check still holds."""
    live = LiveLifeline(tmp_path, SOURCE, "B", secure=False)
    try:
        first, second, third, from_c = _messages(live)
        a, c = live.peer("A"), live.peer("C")
        a.send(live.frame(first))
        a.send(live.frame(first))
        a.send(live.frame(second, run="another run"))
        c.send(live.frame(from_c))
        a.send(live.frame(second))
        a.send(live.frame(third))
        state = live.settled(lambda s: s.taken == 6 and sum(s.rejected.values()) == 2)
        assert state.rejected == {"replayed": 1, "run": 1}
        _finish_and_check(live, [first, from_c, second, third], {"x": 0, "y": 7})
    finally:
        live.close()


def test_the_sender_refuses_a_frame_no_receiver_would_take():
    """ZMQ_MAXMSGSIZE drops a frame over MAX_FRAME at the receiver without a word: the
    sender must know first."""
    from runtime.frames.wire import FrameTooLarge, encode
    _, _, (first, *_) = _prepared()
    fits = first._replace(values={"x": "x" * (MAX_FRAME - 1000)})
    assert len(encode("run", fits, 1)) <= MAX_FRAME
    with pytest.raises(FrameTooLarge, match="first.*to B.*1 MiB"):
        encode("run", first._replace(values={"x": "x" * MAX_FRAME}), 1)


def test_variable_views_in_the_metadata_are_checked_like_values(tmp_path):
    """B's guard reads @A.x from the metadata's variable views, not from the values: a NaN
    or a value nested past the limit there must be refused like one in the values."""
    from runtime.frames.wire import FrameRejected
    inbound, (first, second, *_) = _inbound()
    for bad in (math.nan, math.inf, _deep(150), b"bytes"):
        meta = first.metadata._replace(vars=((bad,), *first.metadata.vars[1:]))
        with pytest.raises(FrameRejected, match="metadata: a variable view"):
            inbound.check(_encoded(first, meta=meta.encode()), 0)
    assert inbound.rejected == {"metadata": 4}
    assert inbound.check(_encoded(first), 0).msg_id == "A:1"  # UNSET views pass
    assert any(v is not None for view in first.metadata.vars for v in view)
