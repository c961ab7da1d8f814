"""Random MSCs for property tests: 2–6 lifelines, up to ~60 events, non-FIFO
delivery (any pending message may be received next), messages left in
transit, act/recv updates of a few variables (some never set), and random
re-linearisations of the same MSC.

``mscs_with_unread`` adds up to 20 lifelines that the formulas never name
(``U0``…): they act and exchange messages like the others, and every such MSC
relays at least once from a read lifeline through one or two unread ones to a
read lifeline — the path on which a monitor that is not carried must forward
the entries of those that are."""

from __future__ import annotations

import random

from hypothesis import strategies as st

from cpl.trace import Event, Trace

LIFELINE_POOL = ("A", "B", "C", "D", "E", "F")
VARIABLES = ("x", "y", "z")  # z is set rarely, so "unset" is common
SYMBOLS = ("a", "b")
VALUES = (0, 1, 2, 1.0, -1, "a", "b", True, False, None)


@st.composite
def updates(draw, allow_z: bool):
    names = draw(st.lists(st.sampled_from(VARIABLES if allow_z else VARIABLES[:2]),
                          unique=True, max_size=2))
    return {name: draw(st.sampled_from(VALUES)) for name in names}


@st.composite
def mscs(draw, min_lifelines: int = 2, max_lifelines: int = 6, max_events: int = 60):
    count = draw(st.integers(min_lifelines, max_lifelines))
    return draw(_random_msc(LIFELINE_POOL[:count], max_events))


@st.composite
def mscs_with_unread(draw, max_unread: int = 20, max_events: int = 60):
    """(trace, read lifelines): 2–6 read lifelines, 1–``max_unread`` unread ones, and at
    least one relay read → unread (→ unread) → read, at a random place."""
    read = LIFELINE_POOL[:draw(st.integers(2, len(LIFELINE_POOL)))]
    unread = tuple(f"U{i}" for i in range(draw(st.integers(1, max_unread))))
    relays = draw(st.lists(st.tuples(st.sampled_from(read),
                                     st.lists(st.sampled_from(unread), min_size=1, max_size=2,
                                              unique=True),
                                     st.sampled_from(read), st.just(0)),
                           min_size=1, max_size=3))
    return draw(_random_msc(read + unread, max_events, relays)), read


@st.composite
def _random_msc(draw, lifelines: tuple, max_events: int, relays=()):
    count = len(lifelines)
    init = draw(st.dictionaries(st.sampled_from(lifelines), updates(allow_z=False), max_size=2))
    # An explicit size: left to itself Hypothesis favours very short lists.
    size = draw(st.integers(0, max_events))
    steps = draw(st.lists(st.tuples(st.integers(0, count - 1), st.sampled_from("asssrrrc"),
                                    st.integers(0, 10 ** 6), st.integers(0, 9)),
                          min_size=size, max_size=size))
    for relay in relays:  # a relay is one step, anywhere: its messages are its own
        steps.insert(draw(st.integers(0, len(steps))), relay)
    events, pending = [], {name: [] for name in lifelines}
    for number, (who, kind, pick, z_chance) in enumerate(steps):
        if isinstance(kind, list):  # a relay: who acts and sends, through kind, to pick
            events.append(Event(f"e{number}a", who, "act", set=draw(updates(allow_z=True))))
            path = [who, *kind, pick]
            for hop, (sender, receiver) in enumerate(zip(path, path[1:])):
                msg = f"m{number}r{hop}"
                events.append(Event(f"e{number}r{hop}s", sender, "send", to=receiver, msg=msg))
                events.append(Event(f"e{number}r{hop}r", receiver, "recv", msg=msg,
                                    set=draw(updates(allow_z=False))))
            continue
        waiting = [name for name in lifelines if pending[name]]
        if kind == "r" and waiting:
            who = lifelines.index(waiting[who % len(waiting)])  # a receive happens where it can
        name = lifelines[who]
        event_id = f"e{number}"
        if kind == "r" and pending[name]:
            msg = pending[name].pop(pick % len(pending[name]))  # any pending: non-FIFO
            events.append(Event(event_id, name, "recv", msg=msg,
                                set=draw(updates(allow_z=z_chance == 0))))
        elif kind == "s":
            to = lifelines[(who + 1 + pick % (count - 1)) % count]
            msg = f"m{number}"
            pending[to].append(msg)  # never received if no later "r" picks it: in transit
            events.append(Event(event_id, name, "send", to=to, msg=msg))
        elif kind == "c":
            events.append(Event(event_id, name, "choice"))
        else:
            events.append(Event(event_id, name, "act", set=draw(updates(allow_z=z_chance == 0))))
    return Trace(lifelines, init, events)


def relinearise(trace: Trace, seed: int) -> Trace:
    """Another linear extension of the same MSC: a random topological order."""
    rng = random.Random(seed)
    done: set[int] = set()
    remaining = list(range(len(trace.events)))
    order = []
    while remaining:
        ready = [i for i in remaining if all(p in done for p in trace.predecessors(i))]
        chosen = rng.choice(ready)
        remaining.remove(chosen)
        done.add(chosen)
        order.append(trace.events[chosen])
    return Trace(trace.lifelines, trace.init, order, trace.vars, trace.symbols)
