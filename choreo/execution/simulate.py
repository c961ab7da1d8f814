"""``cpl run --sim``: every lifeline in one process, under a seeded adversarial scheduler.

The lifeline engine (:class:`~choreo.execution.runner.Runner`) driven by the loop
every driver shares (:class:`choreo.execution.drive.Driver`) over all lifelines at
once: messages go straight into their receiver's inbox, and each step a
``random.Random(seed)`` picks uniformly among *every* event any lifeline can
take — an action, a send, a choice, or the receive of any message waiting
in an inbox.  So a message may overtake an older one (delivery is not FIFO)
and may stay in transit while its receiver decides: exactly the executions
the guards must be right about.  Actions get ``random.Random(f"{seed}:{A}")``,
so the same seed gives the same run and the same trace.

``schedule`` picks how the scheduler chooses (:data:`SCHEDULES`); the default,
``"random"``, is the uniform choice above.  The others push towards the
interleavings anomalies need, for ``cpl explore``: ``"late"`` takes any
event but a receive while there is one, so messages stay in transit as
long as they can; ``"lifo"`` chooses as ``"random"`` does but, when it
chooses a receive, takes the most recently sent message any lifeline can
receive (newer messages overtake older ones); ``"starve"`` lets one lifeline,
drawn from the seed, move only when no other can.

The run itself is a generator that yields each awaitable an async action
returns; :meth:`Simulator.run` awaits them on an event loop of its own (in a
worker thread when called from inside a running loop, as in a notebook),
:meth:`Simulator.run_async` on the caller's loop.  It ends with one status of
:mod:`choreo.execution.status`; events go to a ``sink`` as they happen (a trace writer
keeps memory constant) and/or into the result's in-memory ``Trace``.
"""

from __future__ import annotations

import random
import signal
import threading
import time
from contextlib import contextmanager
from typing import Callable

import attrs

from cpl.trace import Clocks, Event, Trace
from .actions import Awaiter, DeadlinePassed, Interrupted
from .drive import Driver, complete, complete_async
from .plan import Plan, prepare
from .schedules import RANDOM, SCHEDULES
from .status import (
    DEADLOCK, FAILED, INTERRUPTED, LIMIT, OK, TIMEOUT, RunFailure, deadlocked, run_meta, timed_out,
)


@attrs.frozen
class RunResult:
    status: str  # one of choreo.execution.status.STATUSES
    results: dict = attrs.field(eq=False)  # lifeline -> {variable: value} (unset ones left out)
    expected: dict = attrs.field(eq=False)  # lifeline -> the variable names it reports
    trace: Trace = attrs.field(eq=False, repr=False)  # events only if recorded in memory
    error: str | None = None
    steps: int = 0

    @property
    def ok(self) -> bool:
        return self.status == OK


def simulate(choreography, **options) -> RunResult:
    """Run a valid choreography once; see :meth:`Simulator.run` for the options."""
    return Simulator(choreography).run(**options)


class Simulator:
    """A prepared choreography (:func:`choreo.execution.plan.prepare`), run once per seed."""

    def __init__(self, choreography, projection=None):
        self.plan: Plan = prepare(choreography, projection)

    @classmethod
    def of(cls, plan: Plan) -> "Simulator":
        """A simulator for an already prepared plan."""
        simulator = cls.__new__(cls)
        simulator.plan = plan
        return simulator

    def run(self, *, seed: int = 0, args=(), values: dict | None = None,
            max_steps: int | None = None, timeout: float | None = None,
            record: bool = True, sink: Callable[[Event], None] | None = None,
            schedule: str = RANDOM, before_action: Callable[[], None] | None = None,
            pick: Callable | None = None, rngs: Callable | None = None) -> RunResult:
        """One seeded run to its end; ``args`` are ``"key=value"`` texts, ``values`` typed inputs.

        ``record`` keeps the events in ``result.trace``; ``sink`` gets each event as it
        happens (``record=False`` with a sink: constant memory however long the run).
        ``schedule`` is one of :data:`SCHEDULES` (module docstring).  ``before_action()``
        is called before each action: a sink that batches hands its events on there.

        A systematic exploration (``cpl verify``) replaces the scheduler: ``pick(options)``
        chooses each step instead of ``schedule``, and ``rngs(lifeline)`` gives each
        lifeline's actions their rng instead of ``random.Random(f"{seed}:{lifeline}")``.
        """
        run = _Simulation(self.plan, seed, self.plan.inputs(args, values), record, sink,
                          schedule, before_action, pick, rngs)
        deadline = None if timeout is None else time.monotonic() + timeout
        steps = run.steps(max_steps, deadline, timeout)
        with _stop_between_steps(run), Awaiter() as wait:
            return run.result(*complete(steps, lambda pending: wait(pending, deadline)))

    async def run_async(self, *, seed: int = 0, args=(), values: dict | None = None,
                        max_steps: int | None = None, timeout: float | None = None,
                        record: bool = True,
                        sink: Callable[[Event], None] | None = None,
                        schedule: str = RANDOM) -> RunResult:
        """Like :meth:`run`, awaiting async actions on the running loop."""
        run = _Simulation(self.plan, seed, self.plan.inputs(args, values), record, sink,
                          schedule)
        deadline = None if timeout is None else time.monotonic() + timeout
        return run.result(*await complete_async(run.steps(max_steps, deadline, timeout),
                                                deadline))


@contextmanager
def _stop_between_steps(run: "_Simulation"):
    """Let Ctrl-C (or a SIGTERM that raises KeyboardInterrupt) stop the run between steps.

    A ``KeyboardInterrupt`` raised inside the sink would leave a streamed trace
    one event longer than ``meta.steps`` says.  So, for a run with a sink, the
    first signal only asks the run to stop at its next step; it still interrupts
    at once inside an action (a slow tool call is not an event yet) and a
    second signal always does.  Only the main thread's signals whose handler is
    Python's default ``KeyboardInterrupt`` are taken over (SIGINT, and SIGTERM
    where ``cpl run`` maps it so), and not for runs without a sink: swapping
    handlers costs ~10 µs a run (bench/simulate_runs.py), and an in-memory trace is
    recounted instead (``steps``).  Where they are taken over, the stop is an
    ``Interrupted``, and a ``KeyboardInterrupt`` an action raises itself is its
    failure (``choreo.execution.actions.own``).
    """
    taken = [] if run.sink is None or threading.current_thread() is not threading.main_thread() \
        else [s for s in (signal.SIGINT, signal.SIGTERM)
              if signal.getsignal(s) is signal.default_int_handler]

    def stop(signum, frame):
        if run.driver.acting or run.interrupted:
            raise Interrupted
        run.interrupted = True

    for signum in taken:
        signal.signal(signum, stop)
    try:
        yield
    finally:
        for signum in taken:
            signal.signal(signum, signal.default_int_handler)


class _Simulation:
    """One seeded run: the runners, the scheduler's rng, and where events go."""

    def __init__(self, plan: Plan, seed, inputs: dict, record: bool, sink,
                 schedule: str = RANDOM, before_action=None, pick=None, rngs=None):
        if schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {schedule!r}; choose from "
                             f"{', '.join(SCHEDULES)}")
        self.plan, self.seed, self.inputs, self.schedule = plan, seed, inputs, schedule
        self.recording, self.sink = record, sink
        self.stores = plan.stores(inputs)
        recorded = record or sink is not None
        clocks = Clocks(plan.lifelines) if recorded else None  # events are in causal order
        self.runners = [plan.runner(name, self.stores[name], seed, record=recorded,
                                    clocks=clocks)
                        for name in plan.lifelines]
        if rngs is not None:
            for runner in self.runners:
                runner.rng = rngs(runner.name)
        self.scheduler = random.Random(seed)
        self.interrupted = False  # for _stop_between_steps
        self.events: list[Event] = []
        self.failed: dict | None = None  # meta.failed: the lifeline whose failure ended the run
        sent = None
        if pick is None:
            pick, sent = self._picker(self.scheduler.random)
        self.driver = Driver(self.runners, pick, self._emitter(), sent=sent,
                             before_action=before_action)

    def steps(self, max_steps: int | None, deadline: float | None, timeout):
        """The run, as a generator: yields each awaitable an action returns, takes its value."""
        status, error = OK, None

        def until(steps: int) -> bool:
            """Between two steps: a deferred Ctrl-C, --max-steps, --timeout."""
            if self.interrupted:
                raise KeyboardInterrupt
            if max_steps is not None and steps >= max_steps:
                return True
            if deadline is not None and steps % 256 == 0 and time.monotonic() > deadline:
                raise DeadlinePassed
            return False
        # Nothing to check (no limit, and no sink: _stop_between_steps defers no signal):
        # no call between steps (bench/simulate_runs.py).
        checked = max_steps is not None or deadline is not None or self.sink is not None
        try:
            if (yield from self.driver.run(until if checked else None)):
                status, error = LIMIT, f"stopped after {self.driver.steps} steps (--max-steps)"
        except RunFailure as failure:
            status, error = FAILED, failure.render()
            self.failed = failure.failed
        except DeadlinePassed:
            status, error = TIMEOUT, timed_out(timeout)
        except KeyboardInterrupt:
            status, error = INTERRUPTED, INTERRUPTED
        steps = self.driver.steps
        if status == INTERRUPTED and self.sink is None and self.recording:
            steps = len(self.events)  # the append is atomic; counting after it is not
        if status == OK and any(not r.done for r in self.runners):
            status = DEADLOCK
            error = deadlocked(wait for r in self.runners for wait in r.waiting())
        return status, error, steps

    def _picker(self, draw) -> tuple:
        """How the schedule chooses: (options -> the option to take, the hook told of each
        message sent, or None)."""
        # Uniform among the options: random() has 53 bits, so the bias of int(r * n) is
        # below n / 2**53; randrange costs two more Python calls per step (bench/simulate_runs.py).
        if self.schedule == RANDOM:
            return (lambda options: options[int(draw() * len(options))]), None
        if self.schedule == "late":
            def late(options):
                # Any event but a receive first: a message stays in transit while its
                # receiver (and everyone else) can do anything else.
                others = [o for o in options if o[2] is None]
                pool = others or options
                return pool[int(draw() * len(pool))]
            return late, None
        if self.schedule == "lifo":
            born: dict = {}  # id(message) -> the step it was sent at

            def lifo(options):
                option = options[int(draw() * len(options))]
                if option[2] is None:
                    return option
                # A receive: of the messages that can be received now, the newest.
                return max((o for o in options if o[2] is not None),
                           key=lambda o: born[id(o[2])])
            return lifo, lambda message, steps: born.__setitem__(id(message), steps)
        victim = self.runners[int(draw() * len(self.runners))]  # "starve"

        def starve(options):
            others = [o for o in options if o[0] is not victim]
            pool = others or options
            return pool[int(draw() * len(pool))]
        return starve, None

    def _emitter(self):
        """Where each event goes: the in-memory trace, the sink, both, or nowhere."""
        keep, sink = self.events.append if self.recording else None, self.sink
        if keep is not None and sink is not None:
            return lambda event: (keep(event), sink(event))
        return keep or sink or (lambda event: None)  # recording nothing: event is None

    def meta(self, status: str, error: str | None, steps: int) -> dict:
        """How the run ended, for the trace's ``meta``."""
        meta = simulated_meta(self.plan, self.seed, self.inputs, status, error, steps,
                              self.recording or self.sink is not None, self.schedule)
        if status == FAILED and self.failed is not None:  # which lifeline: the picture marks it
            meta["failed"] = self.failed
        return meta

    def result(self, status: str, error: str | None, steps: int) -> RunResult:
        c = self.plan.choreography
        expected = {r.name: c.reported_names(r.name, r.store) for r in self.runners}
        results = {r.name: c.reported(r.name, r.store) for r in self.runners}
        header = self.plan.header(self.inputs)
        trace = Trace(header["lifelines"], header["init"], tuple(self.events), header["vars"],
                      header["symbols"], self.meta(status, error, steps),
                      predicates=header["predicates"])
        return RunResult(status, results, expected, trace, error and error.partition("\n")[0],
                         steps)  # the line meta.error holds; its traceback is meta's


def simulated_meta(plan: Plan, seed, inputs: dict, status: str, error: str | None, steps: int,
                   recorded: bool, schedule: str = RANDOM) -> dict:
    """A simulated run's ``meta``: also for a run whose simulator was stopped from outside
    (``cpl run --sim --timeout`` kills one held by an action that never returns)."""
    facts = {"steps": steps, "recorded": recorded}
    if schedule != RANDOM:  # the default leaves the meta as it always was
        facts["schedule"] = schedule
    return run_meta(plan.name, seed, inputs, status, error, **facts)
