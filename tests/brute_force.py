"""The oracle for ``cpl verify``: every run of a choreography, by brute force.

Independent of verify's reduction: a depth-first search over *scripts*, the
sequence of choices one run makes.  A run is replayed from scratch through
``Simulator.run(pick=..., rngs=...)``; each time the driver offers more than one
option (any lifeline's event, any receivable message) and each time an action's
rng draws among ``n > 1`` outcomes (``_randbelow``: ``choice``, ``randint``,
``randrange``, ``shuffle``, ``sample``; and ``coin(rng, p)`` as two), the run
takes the script's next choice, or the first alternative past the script's end,
and notes how many there were.  The next script is the last choice that has an
alternative left, advanced.  So every global interleaving and every enumerable
outcome is run exactly once; ``random()``, ``getrandbits`` and an LLM action's free
text are not enumerable and stop the search (:class:`NotEnumerable`).

``memo=True`` is for examples too big for that: a run is cut at a step where the
MSC of its events so far was reached before.  Sound because a lifeline's state
is a function of its own events (values set, outcomes, messages taken) and the
messages in transit are the sends among them: same causal prefix, same state,
so the same continuations; and the first visit of a prefix, being depth first,
explores all of them.  Only steps past a run's replayed script are looked up: those
before it are the prefixes of the run it was derived from.  ``runs`` counts only the
runs not cut.  (A lifeline's state follows from its events when its statements have
distinct labels, as the choreographies here do.)

``normal=True`` goes further, for the largest examples: memo still replays a run
for every *edge* into a prefix it has seen.  Every causal prefix ``P`` but the empty
one has one *canonical parent*: ``P`` without its maximal event on the last lifeline
(in the plan's order) that has one — a maximal event of a lifeline is its last event,
unless that is a send received in ``P``.  The search takes an option only if the event
it fires is that event of the prefix it makes, so each prefix is reached from its
canonical parent alone: a tree, one run per leaf (the lexicographic normal form of
Mazurkiewicz traces, nothing of verify's sleep sets and deferrals).  Every reachable
prefix is reached: its canonical parent is a reachable prefix (``P`` minus a maximal
event is a downset, run in any order), after which the event is enabled again.  A run
whose every option is not canonical is cut; ``runs`` counts the runs not cut.
"""

from __future__ import annotations

import random

import attrs

from choreo.execution import Simulator
from cpl.trace import Trace, msc_key


class NotEnumerable(Exception):
    """An action drew a float or raw bits: no finite set of outcomes to run."""


class _Cut(Exception):
    """This run reached a causal prefix already explored (``memo``)."""


class _Script:
    """One run's choices: ``prefix`` replayed, then the first alternative of each."""

    def __init__(self, prefix: list[int]):
        self.prefix, self.taken, self.arity = prefix, [], []
        self.drew_float = False

    def choose(self, n: int) -> int:
        at = len(self.taken)
        choice = self.prefix[at] if at < len(self.prefix) else 0
        assert choice < n, f"a replay offered {n} alternatives where it had more: nondeterminism"
        self.taken.append(choice)
        self.arity.append(n)
        return choice

    def next_prefix(self) -> list[int] | None:
        """The next script in depth-first order, or None when every one was run."""
        taken, arity = list(self.taken), self.arity
        while taken and taken[-1] == arity[len(taken) - 1] - 1:
            taken.pop()
        if not taken:
            return None
        taken[-1] += 1
        return taken


class EnumeratedRng(random.Random):
    """An action's rng whose every draw is a branch of the search."""

    enumerates = True  # an LLM action with choices draws its reply with choice()

    def __init__(self, script: _Script):
        super().__init__(0)
        self.script = script

    def _randbelow(self, n: int) -> int:
        return self.script.choose(n) if n > 1 else 0

    def coin(self, p: float) -> bool:
        """``choreo.execution.coin``'s hook: both sides, when both can happen."""
        if p <= 0 or p >= 1:
            return p >= 1
        return self.script.choose(2) == 1

    def random(self) -> float:
        self.script.drew_float = True
        raise NotEnumerable("random() has no finite domain")

    def getrandbits(self, k: int) -> int:
        self.script.drew_float = True
        raise NotEnumerable("getrandbits() has no finite domain")

    def unenumerable_bits(self, why: str, k: int) -> int:
        """An LLM action asked for free text: no finite set of replies."""
        self.script.drew_float = True
        raise NotEnumerable(why)


@attrs.frozen
class Runs:
    """What the search found: the MSCs (``msc_key``) of its complete runs, how many runs
    ended, by status, and (``memo``) how many were cut at a prefix already explored."""

    keys: frozenset
    runs: int
    statuses: dict
    cut: int = 0


def every_run(choreography, *, args=(), values=None, memo: bool = False, normal: bool = False,
              max_steps: int = 10_000, max_runs: int | None = None) -> Runs:
    """Every run of ``choreography`` (a Choreography or a Simulator); see the module.
    ``max_runs``: give up (``AssertionError``) past that many, so a test says it is too big."""
    simulator = choreography if isinstance(choreography, Simulator) else Simulator(choreography)
    lifelines = simulator.plan.lifelines
    order = {name: at for at, name in enumerate(lifelines)}
    keys: set = set()
    seen: set = set()  # memo: the prefixes reached
    statuses: dict[str, int] = {}
    runs = cut = 0
    prefix: list[int] | None = []
    while prefix is not None:
        script = _Script(prefix)
        events: list = []
        tops = _Tops(order) if normal else None

        def pick(options, script=script, events=events, tops=tops):
            if memo and len(script.taken) >= len(script.prefix):  # past the replayed part
                reached = msc_key(Trace(lifelines, {}, events))
                if reached in seen:
                    raise _Cut
                seen.add(reached)
            if tops is not None:
                options = [option for option in options if tops.canonical(option)]
                if not options:
                    raise _Cut
            return options[script.choose(len(options))] if len(options) > 1 else options[0]

        sink = events.append if tops is None else tops.fired(events.append)

        try:
            result = simulator.run(args=args, values=values, max_steps=max_steps,
                                   sink=sink, pick=pick,
                                   rngs=lambda name, script=script: EnumeratedRng(script))
        except _Cut:
            cut += 1
        else:
            if script.drew_float:  # the action failed with it: the run says which
                raise NotEnumerable(f"not enumerable: {result.error}")
            runs += 1
            statuses[result.status] = statuses.get(result.status, 0) + 1
            keys.add(msc_key(result.trace))
            if max_runs is not None and runs > max_runs:
                raise AssertionError(f"more than {max_runs} runs: too big to enumerate")
        prefix = script.next_prefix()
    return Runs(frozenset(keys), runs, statuses, cut)


class _Tops:
    """The last event of each lifeline in a run's prefix, and the messages received: what
    says which event is the canonical parent's (``normal``)."""

    def __init__(self, order: dict):
        self.order = order
        self.last: dict = {}  # lifeline -> msg id of its last event if a send, else None
        self.received: set = set()

    def fired(self, keep):
        def sink(event):
            keep(event)
            self.last[event.lifeline] = event.msg if event.kind == "send" else None
            if event.kind == "recv":
                self.received.add(event.msg)
        return sink

    def canonical(self, option) -> bool:
        """The event ``option`` fires is the maximal event, on the last lifeline having
        one, of the prefix it makes."""
        runner, _, message = option
        mine = self.order[runner.name]
        taking = None if message is None else message.msg_id
        for lifeline, sent in self.last.items():
            if self.order[lifeline] > mine and not (
                    sent is not None and (sent in self.received or sent == taking)):
                return False
        return True
