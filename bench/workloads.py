"""Seeded workloads for the benchmarks, shared with tests/test_bench_smoke.py.

The traces are ordinary ``cpl.trace.msc.Trace`` values (so they can be written with
``cpl.trace.files.dump_trace`` and re-loaded and validated), and ``steps``
turns one into the flat tuples a tight driver loop consumes, so that the
timed loop does no decoding of its own.

Every generator is deterministic for a given seed: a benchmark measures the
same events every run, and a reader can regenerate them.
"""

from __future__ import annotations

import random
from typing import Callable, Mapping

import cpl
from cpl.monitor import OwnedFormula, compile_guards, Monitor
from cpl.trace import Event, Trace

# -------------------------------------------- the paper's workflow (monitors_mixed.py and others)

PAPER_LIFELINES = ("Orchestrator", "TestRunner", "Security", "Committer")
PAPER_VARS = ("status", "candidate")
CANDIDATES = ("c1", "c2", "c3")
STATUSES = {"TestRunner": ("running", "passed", "failed"),
            "Security": ("running", "cleared", "critical")}

GUARD_TESTS = "@TestRunner(status != failed S status == passed)"
GUARD_FULL = ("@TestRunner.candidate == candidate && @Security.candidate == candidate && "
              "@TestRunner(status != failed S status == passed) && "
              "@Security(status != critical S status == cleared)")
LOCAL_GUARD = "status != failed S status == passed"

# Committer guards that never read TestRunner: adding them must not change the
# size of TestRunner's messages (metadata_size.py).
EXTRA_GUARDS = (
    "candidate == c1",
    "Y candidate != c2",
    "O candidate == c3 && !H candidate == c1",
    "@Orchestrator.candidate == candidate",
    "@Orchestrator(candidate == c1 S candidate == c2)",
)

MIX_PAPER = {"act": 0.30, "send": 0.30, "recv": 0.30, "choice": 0.10}


def paper_updates(lifeline: str, rng: random.Random) -> dict:
    """An act's assignments: testers move their status; everyone sometimes picks a candidate."""
    update = {}
    if lifeline in STATUSES:
        update["status"] = rng.choice(STATUSES[lifeline])
    if lifeline not in STATUSES or rng.random() < 0.2:
        update["candidate"] = rng.choice(CANDIDATES)
    return update


def paper_receive_updates(lifeline: str, rng: random.Random) -> dict:
    """The Committer learns the candidate under review from half of its messages."""
    if lifeline == "Committer" and rng.random() < 0.5:
        return {"candidate": rng.choice(CANDIDATES)}
    return {}


def mixed_trace(n: int, seed: int = 2026) -> Trace:
    """~30% act, 30% send, 30% recv, 10% choice (at the Committer) over the four
    lifelines of the paper, non-FIFO: a receive takes any pending message."""
    return random_trace(n, PAPER_LIFELINES, MIX_PAPER, paper_updates, paper_receive_updates,
                        deciders=("Committer",), variables=PAPER_VARS, seed=seed)


def scaled_trace(lifelines: int, per_lifeline: int, seed: int = 2028) -> Trace:
    """metadata_scale.py: the mixed mix over the paper's four lifelines plus ``lifelines - 4``
    workers that no guard reads (they act, send and receive like the others, so the paper's
    lifelines learn of each other through them too); ``per_lifeline`` events per
    lifeline on average, so a clock entry counts about as high at every size."""
    workers = lifelines - len(PAPER_LIFELINES)
    names = PAPER_LIFELINES + tuple(f"Worker{i:03}" for i in range(workers))
    return random_trace(per_lifeline * lifelines, names, MIX_PAPER, paper_updates,
                        paper_receive_updates, deciders=("Committer",), variables=PAPER_VARS,
                        seed=seed)


# ----------------------------------- receive-heavy, 8 lifelines (monitors_receive.py)

WIDE_LIFELINES = ("Planner", "Coder", "Tester", "Linter", "Security", "Docs", "Reviewer",
                  "Merger")
WIDE_VARS = ("x", "ok", "stage")
MIX_WIDE = {"act": 0.10, "send": 0.45, "recv": 0.45, "choice": 0.0}
# Two deciders, each reading @ of three others (formulas and variables).
WIDE_GUARDS = {
    "Reviewer": "@Tester(ok == true S stage == done) && @Linter.x >= 2 && @Security(!(x > 8))",
    "Merger": "@Coder.stage == review && @Tester(ok == true) && P @Security(x == 0)",
}


def wide_updates(lifeline: str, rng: random.Random) -> dict:
    return {"x": rng.randrange(10), "ok": rng.random() < 0.7,
            "stage": rng.choice(("draft", "review", "done"))}


def receive_heavy_trace(n: int, seed: int = 2027) -> Trace:
    """45% recv, 45% send, 10% act over eight lifelines, non-FIFO."""
    return random_trace(n, WIDE_LIFELINES, MIX_WIDE, wide_updates, lambda name, rng: {},
                        deciders=(), variables=WIDE_VARS, seed=seed)


# ------------------------------------------------------------------ the generator


def random_trace(n: int, lifelines: tuple[str, ...], mix: Mapping[str, float],
                 act_updates: Callable, receive_updates: Callable, *, deciders: tuple,
                 variables: tuple, seed: int) -> Trace:
    """``n`` events drawn by ``mix``.  A receive goes to a lifeline that has a pending
    message and takes a uniformly chosen one of them (non-FIFO); when nothing is
    pending it becomes a send.  Messages still pending at the end stay in transit."""
    rng = random.Random(seed)
    kinds, weights = list(mix), list(mix.values())
    pending: dict[str, list[str]] = {name: [] for name in lifelines}
    waiting: list[str] = []  # lifelines with a pending message (one entry per message)
    events: list[Event] = []
    sent = 0
    for number in range(n):
        kind = rng.choices(kinds, weights)[0]
        event_id = f"e{number}"
        if kind == "recv" and waiting:
            name = waiting.pop(rng.randrange(len(waiting)))
            inbox = pending[name]
            msg = inbox.pop(rng.randrange(len(inbox)))
            events.append(Event(event_id, name, "recv", msg=msg, set=receive_updates(name, rng)))
        elif kind == "choice" and deciders:
            events.append(Event(event_id, rng.choice(deciders), "choice"))
        elif kind == "act":
            name = rng.choice(lifelines)
            events.append(Event(event_id, name, "act", set=act_updates(name, rng)))
        else:  # a send (also a receive or choice that cannot happen)
            name = rng.choice(lifelines)
            to = rng.choice([other for other in lifelines if other != name])
            msg = f"m{sent}"
            sent += 1
            pending[to].append(msg)
            waiting.append(to)
            events.append(Event(event_id, name, "send", to=to, msg=msg))
    return Trace(lifelines, {}, events, variables)


def kind_counts(trace: Trace) -> dict[str, int]:
    counts = dict.fromkeys(("act", "send", "recv", "choice"), 0)
    for event in trace.events:
        counts[event.kind] += 1
    return counts


# ------------------------------------------------------------------ compiling and driving

ACT, SEND, RECV, CHOICE = 0, 1, 2, 3
_CODES = {"act": ACT, "send": SEND, "recv": RECV, "choice": CHOICE}


def compile_program(guards: Mapping[str, str] | list[tuple[str, str]], lifelines, variables,
                    prune: bool = True):
    """``{owner: guard text}`` (or pairs, for several guards per owner) → (Program, primitives)."""
    schema = cpl.Schema(lifelines=tuple(lifelines), variables=frozenset(variables))
    pairs = list(guards.items()) if isinstance(guards, Mapping) else list(guards)
    checked = [(owner, cpl.check(text, schema).primitive) for owner, text in pairs]
    owned = [OwnedFormula(owner, f) for owner, f in checked]
    program = compile_guards(owned, lifelines, prune=prune)
    return program, [f for _, f in checked]


def steps(trace: Trace, handlers: Mapping[str, tuple]) -> tuple[list[tuple], int]:
    """Flatten the trace into ``(code, function, message slot, updates)`` tuples.

    ``handlers[lifeline]`` is ``(act, send, receive, choice)``, looked up once per
    lifeline; message ids become list slots.  Returns the steps and the slot count.
    """
    slots: dict[str, int] = {}
    out = []
    for event in trace.events:
        code = _CODES[event.kind]
        function = handlers[event.lifeline][code]
        slot = slots.setdefault(event.msg, len(slots)) if event.msg is not None else 0
        out.append((code, function, slot, dict(event.set) if event.set else None))
    return out, max(len(slots), 1)


def monitor_handlers(program, lifelines) -> tuple[dict, dict]:
    """Fresh monitors and their bound event steps, one lookup per lifeline."""
    monitors = {name: Monitor(program, name) for name in lifelines}
    return monitors, {name: (m.act, m.send, m.receive, m.choice) for name, m in monitors.items()}


_NOTHING = ((), (), ())


def _act(updates=None):
    pass


def _send():
    return _NOTHING


def _receive(message, updates=None):
    pass


def _choice():
    pass


def noop_handlers(lifelines) -> dict:
    """Do-nothing steps with the monitor's signatures: the driver loop's own cost."""
    return {name: (_act, _send, _receive, _choice) for name in lifelines}


def drive(step_list: list[tuple], messages: int) -> None:
    """The timed loop: one call per event; a send's metadata waits in its slot until
    its receive takes it (as a transport would hold it), unreceived ones stay."""
    box = [None] * messages
    for code, function, slot, updates in step_list:
        if code == ACT:
            function(updates)
        elif code == SEND:
            box[slot] = function()
        elif code == RECV:
            function(box[slot], updates)
            box[slot] = None
        else:
            function()
