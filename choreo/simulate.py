"""``cpl run --sim``: every lifeline in one process, under a seeded adversarial scheduler.

Each step the scheduler (``random.Random(seed)``) lists *every* event that
can happen — an action, a send, a choice, or the receive of any message in
transit whose receiver is waiting for it — and picks one uniformly.  So a
message may overtake an older one (delivery is not FIFO) and may stay in
transit while its receiver decides: exactly the executions the guards must
be right about.  Each lifeline has a CPL monitor that sees every event, and
every message — user data and projection control alike — carries the
sender's metadata.  Actions get ``random.Random(f"{seed}:{lifeline}")``, so
the same seed gives the same run and the same trace.

The result is a complete ``cpl-msc/1`` trace (declared ``vars`` and
``symbols``, every assignment in ``set``, every choice with its canonical
guard, outcome and label), written even when the run fails, with the seed,
inputs and outcome in ``meta``.
"""

from __future__ import annotations

import random
import time

import attrs

from cpl.compile import OwnedFormula as MonitorGuard, compile_guards
from cpl.monitor import Monitor
from cpl.msc import Event, Trace
from .errors import ChoreographyError
from .inputs import initial_stores, parse_args
from .local import LBranch, LLoop, LRecv
from .machine import ActionFailed, Runner
from .validate import validate


@attrs.frozen
class RunResult:
    status: str  # "ok" | "deadlock" | "failed" | "limit"
    results: dict = attrs.field(eq=False)  # lifeline -> {variable: value} (unset ones left out)
    expected: dict = attrs.field(eq=False)  # lifeline -> the variable names it reports
    trace: Trace = attrs.field(eq=False, repr=False)
    error: str | None = None
    steps: int = 0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def simulate(choreography, *, seed: int = 0, args=(), values: dict | None = None,
             max_steps: int | None = None, timeout: float | None = None,
             record: bool = True) -> RunResult:
    """Run a valid choreography; ``args`` are ``"key=value"`` texts, ``values`` typed inputs.

    ``record=False`` keeps no events (the trace is then empty), so long runs
    take constant memory.  Many seeds of one choreography: build a ``Simulator``
    once and call its ``run``.
    """
    return Simulator(choreography).run(seed=seed, args=args, values=values,
                                       max_steps=max_steps, timeout=timeout, record=record)


class Simulator:
    """A choreography validated, projected and its guards compiled — once.

    Compiling the monitors (generating and ``exec``-ing their code) costs
    several whole runs, and nothing in it depends on the seed or the inputs,
    so a sweep over seeds builds one ``Simulator`` and calls ``run`` per seed.
    """

    def __init__(self, choreography, projection=None):
        if projection is None:
            report = validate(choreography)
            if not report.ok:
                raise ChoreographyError.many(report.errors)
            projection = report.projection
        c = self.c = choreography
        self.projection = projection
        self.guards = {d.choice: d.statement.guard.checked.primitive
                       for d in projection.decisions}
        self.program = compile_guards([MonitorGuard(d.owner, self.guards[d.choice])
                                       for d in projection.decisions], c.lifeline_names)
        self.canonical = {d.choice: d.statement.guard.canonical for d in projection.decisions}
        self.symbols = tuple(m for s in c.symbol_sets.values() for m in s.members)

    def run(self, *, seed: int = 0, args=(), values: dict | None = None,
            max_steps: int | None = None, timeout: float | None = None,
            record: bool = True) -> RunResult:
        """One seeded run to completion (or to ``max_steps`` / ``timeout``)."""
        inputs = parse_args(self.c, args, values)
        return _Simulation(self, seed, inputs, record).run(max_steps, timeout)


class _Simulation:
    def __init__(self, simulator: Simulator, seed: int, inputs: dict, record: bool = True):
        c = self.c = simulator.c
        self.seed, self.inputs, self.recording = seed, inputs, record
        self.stores = initial_stores(c, inputs)
        self.canonical, self.symbols = simulator.canonical, simulator.symbols
        program, guards = simulator.program, simulator.guards
        self.runners = [
            Runner(simulator.projection.program(name), Monitor(program, name, self.stores[name]),
                   random.Random(f"{seed}:{name}"), c.variables, guards)
            for name in c.lifeline_names]
        self.scheduler = random.Random(seed)
        self.transit = {name: {} for name in c.lifeline_names}  # receiver -> {key: Message}
        self.events: list[Event] = []
        self.counts = {name: 0 for name in c.lifeline_names}
        self.messages = 0

    def run(self, max_steps: int | None, timeout: float | None) -> RunResult:
        status, error, steps = "ok", None, 0
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                enabled = self.enabled()
                if not enabled:
                    break
                if max_steps is not None and steps >= max_steps:
                    status, error = "limit", f"stopped after {steps} steps (--max-steps)"
                    break
                if deadline is not None and steps % 256 == 0 and time.monotonic() > deadline:
                    status, error = "limit", f"stopped after {timeout:g} s (--timeout)"
                    break
                self.step(*enabled[self.scheduler.randrange(len(enabled))])
                steps += 1
        except ActionFailed as failure:
            status, error = "failed", failure.render()
        if status == "ok" and any(not r.done for r in self.runners):
            status, error = "deadlock", self.deadlock()
        for runner in self.runners:
            runner.close()
        return self.result(status, error, steps)

    def enabled(self) -> list:
        found = []
        transit = self.transit
        for runner in self.runners:
            inbox = transit[runner.name]
            for thread in runner.threads:
                want = thread.want
                if want is None:
                    continue
                if want[0] == "recv":
                    for key in want[1]:
                        message = inbox.get(key)
                        if message is not None:
                            found.append((runner, thread, message))
                else:
                    found.append((runner, thread, None))
        return found

    def step(self, runner: Runner, thread, message) -> None:
        kind, what = thread.want
        name = runner.name
        if kind == "recv":
            del self.transit[name][message.key]
            updates = runner.receive(thread, message)
            self.record(name, "recv", msg=message.msg_id, set=updates, label=message.label)
        elif kind == "act":
            updates = runner.act(thread)
            self.record(name, "act", set=updates, label=what.label)
        elif kind == "choice":
            outcome = runner.choice(thread)
            self.record(name, "choice", label=what.label, guard=self.canonical[what.choice],
                        outcome=outcome)
        else:  # send, tell
            self.messages += 1
            msg_id = f"m{self.messages}"
            message = runner.send(thread, msg_id) if kind == "send" else runner.tell(thread, msg_id)
            self.transit[message.receiver][message.key] = message
            payload = dict(message.values) if kind == "send" else {"outcome": message.outcome}
            self.record(name, "send", to=message.receiver, msg=message.msg_id,
                        label=message.label, payload=payload)

    def record(self, lifeline: str, kind: str, **fields) -> None:
        self.counts[lifeline] += 1
        if self.recording:
            self.events.append(Event(f"{lifeline}.{self.counts[lifeline]}", lifeline, kind,
                                     **fields))

    def deadlock(self) -> str:
        waits = []
        for runner in self.runners:
            for thread in runner.threads:
                if thread.want is not None:
                    top = thread.frames[-1]
                    waits.append(f"{runner.name} {_waiting(top.block[top.pc])}")
        return "deadlock: no event can happen; " + "; ".join(waits)

    def result(self, status: str, error: str | None, steps: int) -> RunResult:
        c = self.c
        expected = {n: c.results.get(n) or tuple(r.store) for n, r in
                    zip(c.lifeline_names, self.runners)}
        results = {n: {x: r.store[x] for x in expected[n] if x in r.store}
                   for n, r in zip(c.lifeline_names, self.runners)}
        meta = {"choreography": c.name, "seed": self.seed, "inputs": dict(self.inputs),
                "status": status, "steps": steps, "recorded": self.recording}
        if error:
            meta["error"] = error
        trace = Trace(tuple(c.lifeline_names), self.stores, tuple(self.events),
                      tuple(c.variables), self.symbols, meta)
        return RunResult(status, results, expected, trace, error, steps)


def _waiting(s) -> str:
    where = f" ({s.where})" if s.where else ""
    if isinstance(s, LRecv):
        return f"waits for {s.label!r} from {s.frm}{where}"
    if isinstance(s, (LBranch, LLoop)):
        if getattr(s, "via", "") == "message":
            return f"waits for {s.then[0].label!r} or {s.else_[0].label!r}{where}"
        return f"waits for the outcome of {s.label!r} from {s.owner}{where}"
    return f"is stuck at {s!r}"
