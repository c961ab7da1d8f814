"""``cpl explore``: many seeded simulations of one choreography, tabulated.

Run ``k`` is the simulator's run with seed ``seed + k`` under the schedule
:func:`schedule_of` gives that seed: by default the four of
:data:`choreo.execution.schedules.SCHEDULES` in turn, so an anomaly that needs a
particular interleaving shows up in many runs, not one in a thousand.  Each
run's trace is recorded in memory, handed to the detectors, counted and dropped.

An :class:`Exploration` counts runs by status, decisions by label and
outcome, the runs in which each detector fired, and *work* (events, messages,
decisions, and the numeric results named in ``counters``, summed), so that
"prevented the anomaly by doing nothing" shows as zeros.  Every run is a
function of its seed and merging is a sum: totals do not depend on workers.

Runs share one :class:`~choreo.execution.plan.Plan`, prepared once per process.  With
``workers > 1`` seeds go in chunks to a pool of processes (:mod:`choreo.exploration.pool`):
forked ones inherit the plan; spawned ones (where fork is unavailable, or
threads are running) load the choreography again from its file, which needs
``source`` (:func:`explore_file` passes it).  A run that fails, deadlocks, hits the
step limit or raises inside the simulator or a detector (``error``) is
counted with its status and first seed; it never stops the exploration.
Ctrl-C does: the pool is terminated and ``KeyboardInterrupt`` propagates.
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from typing import Callable, Iterable, Iterator, Mapping

import attrs

from choreo.execution import Plan, prepare, MIXED, SCHEDULES, Simulator, INTERRUPTED, OK
from .counts import add_counts, add_decisions, count_events
from .pool import WorkerDied, available_cores, in_pool, picklable
from .user_detectors import DetectorFailed, UserDetectors

ERROR = "error"  # a run in which the simulator or a detector raised: a bug, counted
COUNTERS = ("commits", "aborts", "retries")  # result variables summed as work done
PARALLEL_FROM = 200  # runs from which workers=None uses every available core
DEFAULT_MAX_STEPS = 1_000_000  # per run: a run that never ends is counted as "limit"

# A detector maps a trace to a truthy value when it fires (e.g. the list of its
# findings); ``detectors`` is either {name: detector}, or one function returning
# {name: findings} for every detector it runs (``cpl.anomalies.detect``), or a tuple
# of these (the catalog's, then the user's ``--detect``: choreo.exploration.user_detectors).
Detector = Callable[[object], object]
DetectorSet = Mapping[str, Detector] | Callable[[object], Mapping[str, object]]
Detectors = DetectorSet | tuple[DetectorSet, ...] | None


def schedule_of(seed: int, schedule: str = MIXED) -> str:
    """The schedule of the run with ``seed``: ``schedule`` itself unless it is "mixed"."""
    return SCHEDULES[seed % len(SCHEDULES)] if schedule == MIXED else schedule


@attrs.frozen
class Exploration:
    """What ``runs`` seeded simulations did; every count is a number of runs unless said."""

    runs: int
    statuses: dict  # status -> runs that ended with it ("ok", "failed", …, "error")
    decisions: dict  # decision label -> {"true": events, "false": events}
    anomalies: dict  # detector name -> runs in which it fired
    work: dict  # "events", "messages", "decisions", then each counter found -> its sum
    first: dict  # {"statuses": {status: [seed, schedule, error]}, "anomalies": {name:
    #               [seed, schedule, None]}}: the lowest seed of each non-ok status, each anomaly
    seconds: dict  # "simulate", "detect": CPU seconds summed over workers; "wall"
    workers: int = 1
    seed: int = 0
    schedule: str = MIXED

    @property
    def failed(self) -> int:
        """Runs that did not end ``ok``."""
        return self.runs - self.statuses.get(OK, 0)

    def to_json(self) -> dict:
        """The contract's keys (cli.md), then the extra ones."""
        return {"runs": self.runs, "failed": self.failed, "decisions": self.decisions,
                "anomalies": self.anomalies, "statuses": self.statuses, "work": self.work,
                "first": self.first, "seconds": self.seconds, "seed": self.seed,
                "schedule": self.schedule, "workers": self.workers}


@attrs.frozen
class Source:
    """Where a spawned worker finds the choreography: its file and ``--name``."""

    path: str
    name: str | None = None

    def plan(self) -> Plan:
        from choreo.authoring import load_one
        return prepare(load_one(self.path, self.name))


@attrs.frozen
class _Job:
    """Everything a worker needs but the seeds; ``plan`` is None in a spawned worker's copy."""

    plan: Plan | None
    source: Source | None
    values: dict
    detectors: Detectors
    schedule: str
    max_steps: int | None
    counters: tuple


class _Tally:
    """Counts of some runs; two tallies add up to the tally of both (order is irrelevant)."""

    def __init__(self):
        self.runs = 0
        self.statuses: dict[str, int] = {}
        self.decisions: dict[str, list[int]] = {}
        self.anomalies: dict[str, int] = {}
        self.work: dict[str, float] = {"events": 0, "messages": 0, "decisions": 0}
        self.first: dict[str, dict[str, list]] = {"statuses": {}, "anomalies": {}}
        self.simulate = self.detect = 0.0

    def note(self, what: str, key: str, seed: int, schedule: str,
             error: str | None = None) -> None:
        """The lowest seed so far at which ``key`` (a status or an anomaly) happened."""
        known = self.first[what].get(key)
        if known is None or seed < known[0]:
            self.first[what][key] = [seed, schedule, error]

    def merge(self, other: "_Tally") -> None:
        self.runs += other.runs
        add_counts(((self.statuses, other.statuses), (self.anomalies, other.anomalies),
                    (self.work, other.work)))
        add_decisions(self.decisions, other.decisions)
        for what, found in other.first.items():
            for key, (seed, schedule, error) in found.items():
                self.note(what, key, seed, schedule, error)
        self.simulate += other.simulate
        self.detect += other.detect


def _run_seeds(job: _Job, simulator: Simulator, seeds: Iterable[int]) -> _Tally:
    """The tally of one run per seed, in this process."""
    tally = _Tally()
    clock = time.process_time
    detectors, counters = job.detectors, job.counters
    for seed in seeds:
        schedule = schedule_of(seed, job.schedule)
        tally.runs += 1
        start = clock()
        try:
            result = simulator.run(seed=seed, values=job.values, max_steps=job.max_steps,
                                   schedule=schedule)
        except KeyboardInterrupt:
            raise
        except Exception as error:  # noqa: BLE001 - a bug of ours: counted, not fatal
            tally.simulate += clock() - start
            _count_status(tally, ERROR, seed, schedule, f"{type(error).__name__}: {error}")
            continue
        middle = clock()
        tally.simulate += middle - start
        if result.status == INTERRUPTED:  # Ctrl-C landed inside the run
            raise KeyboardInterrupt
        status, error = result.status, result.error
        events = result.trace.events
        children = [0.0]  # CPU seconds of the user's detectors, in their own processes
        try:
            fired = detect_on(detectors, result.trace, f"the run of seed {seed}", children)
        except Exception as failure:  # noqa: BLE001 - a detector's bug: counted, not fatal
            status, error, fired = ERROR, str(failure), {}
        tally.detect += clock() - middle + children[0]
        _count_status(tally, status, seed, schedule, error)
        for name, hit in fired.items():
            if hit:
                tally.anomalies[name] = tally.anomalies.get(name, 0) + 1
                tally.note("anomalies", name, seed, schedule)
            else:
                tally.anomalies.setdefault(name, 0)
        work = tally.work
        count_events(events, work, tally.decisions)
        for values in result.results.values():
            for name in counters:
                value = values.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    work[name] = work.get(name, 0) + value
    return tally


def _count_status(tally: _Tally, status: str, seed: int, schedule: str, error) -> None:
    tally.statuses[status] = tally.statuses.get(status, 0) + 1
    if status != OK:
        tally.note("statuses", status, seed, schedule, error)


def fired(findings) -> bool:
    """Whether a detector's findings say it fired: a generator (``yield event``) fired when
    it yields anything, which ``bool`` of the generator itself would not tell."""
    if isinstance(findings, Iterator):
        return any(True for _ in findings)
    return bool(findings)


def detect_on(detectors: Detectors, trace, where: str = "the trace", cpu=None) -> dict:
    """{name: fired?} for one trace (``where`` names it); the CPU seconds of the user's
    detectors, which run in a child process, are added to ``cpu[0]``."""
    if detectors is None:
        return {}
    if isinstance(detectors, tuple):
        found = {}
        for some in detectors:
            found.update(detect_on(some, trace, where, cpu))
        return found
    if isinstance(detectors, UserDetectors):
        results, spent = detectors.run(trace, where)
        if cpu is not None:
            cpu[0] += spent
        for result in results.values():
            if isinstance(result, DetectorFailed):
                raise result
        return {name: bool(result) for name, result in results.items()}
    if isinstance(detectors, Mapping):
        found = {}
        for name, detector in detectors.items():
            try:
                found[name] = fired(detector(trace))
            except DetectorFailed:  # a user's detector: its message names it already
                raise
            except Exception as error:  # noqa: BLE001 - named, then counted by the caller
                raise RuntimeError(f"detector {name!r} raised {type(error).__name__}: "
                                   f"{error}") from None
        return found
    try:
        return {str(name): bool(value) for name, value in detectors(trace).items()}
    except Exception as error:  # noqa: BLE001
        raise RuntimeError(f"the detectors raised {type(error).__name__}: {error}") from None


# ---------------------------------------------------------------- worker processes

_WORKER: tuple[_Job, Simulator] | None = None  # this worker's job and simulator


def _start_worker(job: _Job) -> None:
    """A pool worker's initializer: Ctrl-C is the parent's to handle; the plan once."""
    global _WORKER
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    plan = job.plan if job.plan is not None else job.source.plan()
    _WORKER = (job, Simulator.of(plan))


def _work(seeds: range) -> _Tally:
    if _WORKER is None:  # cannot happen: the initializer raised, and the pool is broken
        raise WorkerDied("the worker did not start")
    job, simulator = _WORKER
    return _run_seeds(job, simulator, seeds)


def _context(source: Source | None, start_method: str | None = None):
    """fork where it is safe (no other thread to copy half-way), else spawn (needs source)."""
    if start_method is not None:
        if start_method != "fork" and source is None:
            raise ValueError(f"workers started by {start_method} load the choreography "
                             f"from its file: give source= (or use explore_file)")
        return multiprocessing.get_context(start_method)
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if source is not None:
        return multiprocessing.get_context("spawn")
    return None


def explore(plan: Plan, runs: int, *, seed: int = 0, values: dict | None = None,
            args=(), detectors: Detectors = None, schedule: str = MIXED,
            max_steps: int | None = DEFAULT_MAX_STEPS, counters: Iterable[str] = COUNTERS,
            workers: int | None = None, source: Source | None = None,
            progress: Callable[[int, int], None] | None = None,
            start_method: str | None = None) -> Exploration:
    """``runs`` simulations of ``plan`` with seeds ``seed`` … ``seed + runs - 1``.

    ``values``/``args`` are the inputs as for :meth:`Simulator.run` (checked once, here);
    ``schedule`` is "mixed" or one of :data:`choreo.execution.schedules.SCHEDULES` for every run;
    ``workers`` processes (None: every available core from :data:`PARALLEL_FROM` runs,
    else 1); ``progress(done, runs)`` is called as runs complete, in this process.
    ``start_method`` ("fork", "spawn", "forkserver") overrides how workers start: by
    default fork where safe, else spawn, which needs ``source`` (else one process).
    """
    if runs < 1:
        raise ValueError(f"runs must be at least 1, not {runs}")
    if schedule != MIXED and schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; choose from {MIXED}, "
                         f"{', '.join(SCHEDULES)}")
    job = _Job(plan, source, plan.inputs(args, values), detectors, schedule, max_steps,
               tuple(counters))
    if workers is None:
        workers = available_cores() if runs >= PARALLEL_FROM else 1
    workers = max(1, min(workers, runs))
    context = _context(source, start_method) if workers > 1 else None
    shipped = job  # what the workers get: a spawned one loads the plan from the file
    if context is not None and context.get_start_method() != "fork":
        shipped = attrs.evolve(job, plan=None)
        if not picklable(shipped):  # e.g. a lambda among the detectors: no worker gets it
            context = None
    if context is None:
        workers = 1
    started = time.perf_counter()
    tally = _Tally()
    chunks = _chunks(seed, runs, workers)
    if workers == 1:
        simulator = Simulator.of(plan)
        for chunk in chunks:
            tally.merge(_run_seeds(job, simulator, chunk))
            if progress is not None:
                progress(tally.runs, runs)
    else:
        def take(tallies: list) -> None:
            for done in tallies:
                tally.merge(done)
            if progress is not None:
                progress(tally.runs, runs)
        in_pool(chunks, workers, context, _start_worker, (shipped,), _work, take)
    return _exploration(tally, workers, seed, schedule, job.counters,
                        time.perf_counter() - started)


def explore_file(path: str, runs: int, *, name: str | None = None, **options) -> Exploration:
    """:func:`explore` of the choreography ``name`` in the file ``path`` (workers may spawn)."""
    source = Source(path, name)
    return explore(source.plan(), runs, source=source, **options)


def _chunks(seed: int, runs: int, workers: int) -> Iterator[range]:
    """Seeds in chunks: small enough for a lively progress display and for both workers to
    finish together, big enough that handing one over costs nothing."""
    size = max(1, min(250, runs // (8 * workers) or 1)) if workers > 1 else \
        max(1, min(100, runs // 20 or 1))
    return (range(start, min(start + size, seed + runs))
            for start in range(seed, seed + runs, size))


def _exploration(tally: _Tally, workers: int, seed: int, schedule: str, counters: tuple,
                 wall: float) -> Exploration:
    decisions = {label: {"true": true, "false": false}
                 for label, (true, false) in sorted(tally.decisions.items())}
    statuses = dict(sorted(tally.statuses.items(), key=lambda item: (item[0] != OK, item[0])))
    first = {what: dict(sorted(found.items())) for what, found in tally.first.items()}
    # Fixed keys, then the counters found, in the order asked (merging varies the order).
    work = {key: tally.work[key] for key in ("events", "messages", "decisions", *counters)
            if key in tally.work}
    return Exploration(tally.runs, statuses, decisions, dict(sorted(tally.anomalies.items())),
                       work, first,
                       {"simulate": round(tally.simulate, 4), "detect": round(tally.detect, 4),
                        "wall": round(wall, 4)}, workers, seed, schedule)
