"""Hostile input to cpl.live: tokens from outside, misuse from inside, and many threads.

A token comes from the network: random bytes or text, cut short, bit-flipped,
oversized, from another system, replayed, forged, with a clock that claims
events its sender cannot have, misaddressed, or not a token at all.  Each is
``TokenRefused`` with a ``reason`` that names it, never another exception, and
leaves the agent exactly as it was: its monitor (clock, views, variable views,
store, slot values), its counters, what it has received, its log.  Misuse of
the API is a named ``LiveError`` (or a ``GuardError`` with its position),
never a ``KeyError`` or ``TypeError``.  Four threads sharing agents lose and
double no event.
"""

from __future__ import annotations

import os
import random
import threading

import attrs
import msgpack
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from cpl import GuardError
from cpl.live import (MAX_TOKEN, MAX_TOKEN_TEXT, LiveError, NotOwner, System, Token,
                      TokenRefused, UndeclaredVariable, UnknownLabel, UnknownLifeline)
from cpl.live.agent import REPLAY_WINDOW
from cpl.live.token import VERSION, sign
from cpl.monitor import Metadata, decisions
from strategies import msgpack_values
from test_live_props import merged

LIFELINES = ["Author", "TestRunner", "Committer"]
VARIABLES = ["status", "candidate"]
GUARDS = {  # Committer's flagship, and a guard that makes Committer carried too
    "merge": ("Committer", "@TestRunner(status != failed S status == passed) && "
                           "@TestRunner.candidate == candidate"),
    "review": ("Author", "@Committer(Y true) && @TestRunner.status == failed")}
SECRET = b"0123456789abcdef-secret"
REASONS = {"malformed", "oversized", "foreign", "misaddressed", "replayed", "forged", "clock"}
SETTINGS = settings(max_examples=80, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


def flagship(secret=None, **changes) -> System:
    parts = {"lifelines": LIFELINES, "guards": GUARDS, "variables": VARIABLES, **changes}
    return System(parts["lifelines"], parts["guards"], parts["variables"],
                  init={"Committer": {"candidate": "abc"}}, secret=secret)


class World:
    """A system, its three agents (logging to ``folder``), and a few tokens in flight."""

    def __init__(self, folder, secret=None):
        self.system = flagship(secret)
        self.agents = {name: self.system.agent(name, log=os.path.join(folder, f"{name}.jsonl"))
                       for name in LIFELINES}
        runner, committer = self.agents["TestRunner"], self.agents["Committer"]
        runner.act(status="passed", candidate="abc")
        committer.receive(runner.send("Committer", "report"))
        committer.decide("merge")
        self.agents["Author"].receive(committer.send("Author"))
        runner.act(status="failed")
        self.token = runner.send("Committer", "report")  # in flight, not received
        self.later = runner.send("Committer")

    @property
    def committer(self):
        return self.agents["Committer"]


@pytest.fixture(params=[None, SECRET], ids=["unsigned", "signed"])
def world(request, tmp_path):
    return World(str(tmp_path), request.param)


def state(agent) -> str:
    """Everything a token could change, printed: the monitor's closure (clock, views,
    variable views, store, slot values), each owned guard's value, the counters, the
    frontier, the replay memory and the log's size."""
    monitor = agent.monitor
    closure = {name: cell.cell_contents for name, cell in
               zip(monitor.receive.__code__.co_freevars, monitor.receive.__closure__)
               if not callable(cell.cell_contents)}
    owned = {label: agent.holds(label) for label in agent.system.labels
             if agent.system.owner(label) == agent.lifeline}
    received = {sender: (floor, sorted(above)) for sender, (floor, above)
                in agent._received.items()}
    return repr((sorted(closure.items()), monitor.views, monitor.varviews,
                 sorted(monitor.store.items()), monitor.values, owned, agent.taken,
                 agent.sent, agent.last, agent.seen, received,
                 os.path.getsize(agent._log.path)))


def refused(agent, token, *reasons) -> TokenRefused:
    """``token`` is refused at ``agent`` (for one of ``reasons``), which is left as it was."""
    before = state(agent)
    with pytest.raises(TokenRefused) as caught:
        agent.receive(token, status="passed")
    assert caught.value.reason in (reasons or REASONS), str(caught.value)
    assert str(caught.value).startswith(f"token refused ({caught.value.reason}): ")
    assert state(agent) == before
    return caught.value


def built(system, sender, receiver, seq, metadata, label="", secret=None, signature=None):
    """A token made by hand, signed with ``secret`` (the system's when not given)."""
    fields = [VERSION, system.signature, sender, receiver, seq, label, metadata.encode()]
    if signature is None:
        signature = sign(fields, secret if secret is not None else system.secret)
    return Token(system.signature, sender, receiver, seq, label, metadata, signature)


def forms(token):
    return [token, token.text, token.encode()]


# ------------------------------------------------------------------ fuzzed

@SETTINGS
@given(data=st.binary(max_size=300))
def test_random_bytes_are_refused(world, data):
    refused(world.committer, data)


@SETTINGS
@given(text=st.text(max_size=300) | st.text(max_size=300).map(lambda t: "cpl1." + t))
def test_random_text_is_refused(world, text):
    refused(world.committer, text)


def test_every_truncation_is_refused(world):
    token = world.token
    for cut in range(len(token.text)):
        refused(world.committer, token.text[:cut], "malformed")
    for cut in range(len(token.encode())):
        refused(world.committer, token.encode()[:cut], "malformed")
    world.committer.receive(token.text)  # whole, it is taken


@SETTINGS
@given(bit=st.integers(0, 10_000))
def test_a_flipped_bit_is_refused_or_still_a_token(world, bit):
    data = bytearray(world.token.encode())
    data[bit // 8 % len(data)] ^= 1 << bit % 8
    before = state(world.committer)
    try:
        world.committer.receive(bytes(data))
    except TokenRefused as refusal:
        assert refusal.reason in REASONS
        assert state(world.committer) == before
    else:  # a changed label, value or clock that still makes sense: only when unsigned
        assert world.system.secret is None


def test_oversized_tokens_are_refused(world):
    refused(world.committer, "cpl1." + "A" * MAX_TOKEN_TEXT, "oversized")
    refused(world.committer, b"\x98" + b"\0" * MAX_TOKEN, "oversized")
    big = attrs.evolve(world.token, label="x" * MAX_TOKEN)
    refused(world.committer, big.encode(), "oversized")
    refused(world.committer, big.text, "oversized")
    assert len(world.token.text) <= MAX_TOKEN_TEXT


@pytest.mark.parametrize("other", [
    {"lifelines": LIFELINES + ["Reviewer"]},
    {"lifelines": ["TestRunner", "Author", "Committer"]},
    {"variables": VARIABLES + ["extra"]},
    {"guards": {**GUARDS, "merge": ("Committer", "@TestRunner(status == passed)")}},
    {"guards": {"merge": GUARDS["merge"]}}])
def test_a_token_of_another_system_is_refused(world, other):
    stranger = flagship(world.system.secret, **other)
    token = stranger.agent("TestRunner").send("Committer")
    for form in forms(token):
        refused(world.committer, form, "foreign")


def test_replays_are_refused_in_every_form(world):
    committer, runner = world.committer, world.agents["TestRunner"]
    tokens = [world.token, world.later] + [runner.send("Committer") for _ in range(5)]
    random.Random(7).shuffle(tokens)
    for token in tokens:  # out of order, each in another form
        committer.receive(random.Random(token.seq).choice(forms(token)))
    for token in tokens:
        for form in forms(token):
            refused(committer, form, "replayed")


def test_a_replay_older_than_the_window_is_refused(world):
    committer, runner = world.committer, world.agents["TestRunner"]
    skipped = world.token  # never received while the window fills past it
    committer.receive(world.later)
    for _ in range(REPLAY_WINDOW + 1):
        committer.receive(runner.send("Committer"))
    error = refused(committer, skipped, "replayed")
    assert f"{REPLAY_WINDOW:,} later ones" in str(error)


def test_forged_tokens_are_refused(tmp_path):
    world = World(str(tmp_path), SECRET)
    token, system = world.token, world.system
    other = built(system, "TestRunner", "Committer", token.seq, token.metadata,
                  secret=b"another-secret-of-16+")
    unsigned = flagship(None).agent("TestRunner").send("Committer")  # same system, no secret
    fields = msgpack.unpackb(token.encode())
    changed = fields[:5] + ["a new label"] + fields[6:]
    for form in forms(other) + [unsigned.text, unsigned.encode()]:
        refused(world.committer, form, "forged")
    refused(world.committer, msgpack.packb(changed[:-1] + [b""]), "forged")  # signature dropped
    refused(world.committer, msgpack.packb(changed), "forged")  # signature kept
    refused(world.committer, attrs.evolve(token, label="a new label"), "forged")
    world.committer.receive(token)


def test_clocks_that_claim_impossible_events_are_refused(world):
    system, committer = world.system, world.committer
    me, runner = system.carried["Committer"], system.carried["TestRunner"]
    metadata = world.token.metadata
    ahead = list(metadata.vc)
    ahead[me] = committer.taken + 1  # more Committer events than Committer took
    behind = list(metadata.vc)
    behind[runner] = world.token.seq - 1  # fewer TestRunner events than its sends
    for vc in (ahead, behind):
        token = built(system, "TestRunner", "Committer", world.token.seq,
                      metadata._replace(vc=tuple(vc)))
        for form in forms(token):
            refused(committer, form, "clock")
    committer.receive(world.token)


def test_misaddressed_and_self_sent_tokens_are_refused(world):
    for form in forms(world.token):
        refused(world.agents["Author"], form, "misaddressed")
    mine = built(world.system, "Committer", "Committer", 1, world.token.metadata)
    for form in forms(mine):
        refused(world.committer, form, "malformed")


@pytest.mark.parametrize("thing", [5, 1.5, None, [1, 2], {"a": 1}, object(), ("cpl1.",),
                                   True, bytearray(b"\x93\x01"), memoryview(b"")])
def test_what_is_no_token_is_refused(world, thing):
    refused(world.committer, thing, "malformed")


_shapes = st.one_of(msgpack_values(), st.lists(st.integers(-2, 2 ** 70), max_size=3),
                    st.lists(st.lists(msgpack_values(), max_size=3), max_size=3),
                    st.lists(st.tuples(msgpack_values()), max_size=3))


@settings(SETTINGS, max_examples=40)
@given(vc=_shapes, views=_shapes, variables=_shapes, system=st.binary(max_size=9) | _shapes,
       label=msgpack_values(), signature=msgpack_values())
def test_hand_built_tokens_are_refused_whole(world, vc, views, variables, system, label,
                                             signature):
    as_tuple = lambda v: tuple(v) if isinstance(v, list) else v  # noqa: E731
    metadata = Metadata(as_tuple(vc), as_tuple(views), as_tuple(variables))
    for token in (Token(system, "TestRunner", "Committer", world.token.seq, label, metadata,
                        signature),
                  attrs.evolve(world.token, metadata=metadata),
                  attrs.evolve(world.token, system=system, label=label, signature=signature)):
        if token == world.token:
            continue
        before = state(world.committer)
        try:
            world.committer.receive(token)
        except TokenRefused as refusal:
            assert refusal.reason in REASONS
            assert state(world.committer) == before
        else:
            assert world.system.secret is None and token.metadata == world.token.metadata
            return


@pytest.mark.parametrize("change", [
    lambda m: m._replace(views=()),  # the monitor took the clock, then read past the views
    lambda m: m._replace(vars=((),) * len(m.vars)),  # was taken: views of no variable
    lambda m: m._replace(vc=("1",) * len(m.vc)),
    lambda m: m._replace(vc=(2 ** 70,) * len(m.vc)),  # was taken, then no send could encode
    lambda m: m._replace(views=(2 ** 80,) * len(m.views)),  # signed: did not encode
    lambda m: m._replace(vars=tuple((float("nan"),) * len(v) for v in m.vars)),
    lambda m: "not metadata"])
def test_a_token_built_with_bad_metadata_is_refused_whole(world, change):
    refused(world.committer, attrs.evolve(world.token, metadata=change(world.token.metadata)),
            "malformed", "forged")


@pytest.mark.parametrize("field", ["system", "label", "signature", "seq"])
def test_a_token_built_with_a_field_of_the_wrong_type_is_refused(world, field):
    refused(world.committer, attrs.evolve(world.token, **{field: ["wrong"]}), "malformed")


def test_a_token_built_with_a_seq_no_message_can_have_is_refused(world):
    refused(world.committer, attrs.evolve(world.token, seq=2 ** 70), "malformed")


@st.composite
def hostile(draw, world):
    """Any hostile token, of any kind, in any form."""
    token = world.token
    kind = draw(st.sampled_from(["bytes", "text", "cut", "flip", "foreign", "replay",
                                 "clock", "misaddressed", "type"]))
    if kind == "bytes":
        return draw(st.binary(max_size=100))
    if kind == "text":
        return draw(st.text(max_size=100))
    if kind == "cut":
        whole = draw(st.sampled_from(forms(token)[1:]))
        return whole[:draw(st.integers(0, len(whole) - 1))]
    if kind == "flip" and world.system.secret is not None:  # unsigned, a flip may be a token
        data = bytearray(token.encode())
        data[draw(st.integers(0, len(data) - 1))] ^= 1 << draw(st.integers(0, 7))
        return bytes(data)
    if kind == "foreign":
        stranger = flagship(world.system.secret, variables=VARIABLES + ["extra"])
        return draw(st.sampled_from(forms(stranger.agent("TestRunner").send("Committer"))))
    if kind == "replay":
        first = world.agents["TestRunner"].send("Committer")
        world.committer.receive(first)
        return draw(st.sampled_from(forms(first)))
    if kind == "clock":
        vc = list(token.metadata.vc)
        vc[world.system.carried["Committer"]] = world.committer.taken + draw(st.integers(1, 9))
        return draw(st.sampled_from(forms(built(world.system, "TestRunner", "Committer",
                                                token.seq, token.metadata._replace(vc=tuple(vc))))))
    if kind == "misaddressed":
        return draw(st.sampled_from(forms(world.agents["TestRunner"].send("Author"))))
    return draw(msgpack_values())


@settings(SETTINGS, max_examples=60)
@given(data=st.data())
def test_a_refused_token_leaves_the_agent_as_it_was(tmp_path_factory, data):
    world = World(str(tmp_path_factory.mktemp("w")), data.draw(st.sampled_from([None, SECRET])))
    for _ in range(data.draw(st.integers(0, 4))):  # some more history first
        world.committer.act(candidate=data.draw(st.sampled_from(["abc", "def"])))
    refused(world.committer, data.draw(hostile(world)))
    world.committer.receive(world.token)  # and it goes on


# ------------------------------------------------------------------ misuse

def test_misuse_is_a_named_error_that_says_the_fix(world):
    committer, author = world.committer, world.agents["Author"]
    taken = committer.taken
    with pytest.raises(UnknownLabel, match="did you mean 'merge'"):
        committer.decide("marge")
    with pytest.raises(UnknownLabel):
        committer.holds(["merge"])
    with pytest.raises(NotOwner, match=r"system.agent\('Committer'\)"):
        author.decide("merge")
    with pytest.raises(UnknownLifeline, match="did you mean 'Author'"):
        committer.send("Autor")
    with pytest.raises(UnknownLifeline):
        world.system.agent("Nobody")
    with pytest.raises(UnknownLifeline):
        world.system.agent(["Author"])
    with pytest.raises(UnknownLifeline):
        committer.send(["Author"])
    with pytest.raises(LiveError, match="cannot send to itself"):
        committer.send("Committer")
    with pytest.raises(UndeclaredVariable, match="did you mean 'status'"):
        committer.act(statuss="passed")
    with pytest.raises(UndeclaredVariable):
        committer.receive(world.token, canddate="x")
    for value, said in [(float("nan"), "nan"), ("\ud800", "lone surrogate"),
                        (2 ** 70, "64 bits"), (object(), "object value"), ({1: 2}, "key 1")]:
        with pytest.raises(LiveError, match=said):
            committer.act(candidate=value)
    with pytest.raises(LiveError, match="label"):
        committer.act(5)
    assert committer.taken == taken  # none of it was an event


@pytest.mark.parametrize("arguments, error, said", [
    ((LIFELINES, {"merge": ("Committer", "@TestRunner(status ==")}, VARIABLES), GuardError,
     "guard 'merge':1:"),
    ((LIFELINES, {"merge": ("Committer", "@Nobody(status)")}, VARIABLES), GuardError,
     "unknown lifeline 'Nobody'"),
    ((["A", "B", "A"], {}, VARIABLES), LiveError, "'A' is named twice"),
    ((LIFELINES, {"merge": ("Comitter", "true")}, VARIABLES), UnknownLifeline,
     "did you mean 'Committer'"),
    ((LIFELINES, {"merge": (["Committer"], "true")}, VARIABLES), LiveError,
     "must be \\(owner, guard text\\)"),
    ((LIFELINES, {}, VARIABLES, {"Nobody": {}}), UnknownLifeline, "'Nobody'"),
    ((LIFELINES, {}, VARIABLES, {5: {}}), UnknownLifeline, "5"),
    ((LIFELINES, {}, VARIABLES, {"Author": {"statuss": 1}}), UndeclaredVariable,
     "did you mean 'status'"),
    ((LIFELINES, {}, VARIABLES, {"Author": {"status": float("inf")}}), LiveError, "inf"),
    (("Author", {}, VARIABLES), LiveError, "list of names"),
    ((LIFELINES, [], VARIABLES), LiveError, "guards must map"),
    ((LIFELINES, {}, None), LiveError, "list of names"),
    ((LIFELINES, {}, [5]), LiveError, "printable name"),
    (([], {}, VARIABLES), LiveError, "at least one lifeline")])
def test_bad_system_arguments_are_named_errors(arguments, error, said):
    lifelines, guards, variables, *init = arguments
    with pytest.raises(error, match=said):
        System(lifelines, guards, variables, init=init[0] if init else None)


def test_a_short_secret_is_refused():
    with pytest.raises(LiveError, match="at least 16"):
        flagship(b"short")


# ------------------------------------------------------------------ threads

def test_four_threads_sharing_agents_lose_and_double_no_event(tmp_path):
    lifelines = ["A", "B", "C", "D"]
    system = System(lifelines, {"a": ("A", "@B(x > 0 S y == 1) || @C.x == x"),
                                "d": ("D", "P (x == 3)")}, ["x", "y"])
    agents = {name: system.agent(name, log=str(tmp_path / "logs") + os.sep)
              for name in lifelines}
    inbox, inbox_lock, decided, made = [], threading.Lock(), [], [0] * 4

    def work(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(500):
            made[seed] += 1  # but for a receive with nothing to receive
            who = agents[rng.choice(lifelines)]
            move = rng.random()
            if move < 0.3:
                who.act(x=rng.randrange(4), y=rng.randrange(2))
            elif move < 0.6:
                token = who.send(rng.choice([n for n in lifelines if n != who.lifeline]))
                with inbox_lock:
                    inbox.append(token)
            elif move < 0.9:
                with inbox_lock:
                    token = inbox.pop(rng.randrange(len(inbox))) if inbox else None
                if token is None:
                    made[seed] -= 1
                else:
                    agents[token.receiver].receive(rng.choice(forms(token)), x=rng.randrange(4))
            else:
                label = rng.choice(["a", "d"])
                decided.append(agents[system.owner(label)].decide(label))

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for agent in agents.values():
        agent.close()
    trace = merged(str(tmp_path / "logs"), str(tmp_path / "trace.jsonl"))
    assert len(trace.events) == sum(a.taken for a in agents.values()) == sum(made)
    for name, agent in agents.items():
        assert [e.id for e in trace.events if e.lifeline == name] == \
            [f"{name}.{k}" for k in range(1, agent.taken + 1)]
        assert agent.sent == sum(1 for e in trace.events if e.lifeline == name
                                 and e.kind == "send")
    assert {e.msg for e in trace.in_transit()} == {t.msg for t in inbox}
    checked = list(decisions(trace))
    assert len(checked) == len(decided)
    assert [outcome for _, outcome, _ in checked] and \
        all(recorded == computed for _, recorded, computed in checked)
