"""``cpl verify``: every MSC of a choreography within the bounds, run once each.

:func:`verify` searches the tree of choice points :mod:`.reduction` defines, one
simulated run per leaf, through the same ``Runner`` code and ``Driver`` loop every
run uses (:meth:`choreo.execution.Simulator.run` with the reduction's ``pick``).
Each MSC's trace goes to the detectors (the catalog's and the user's, as for
``cpl explore``), is counted and dropped; only the first counterexample is kept.

An action's outcomes are a choice point: before the engine calls it, the
verifier calls it once per sequence of outcomes its draws can take
(:mod:`.outcomes`) on the same read-only store, and the sequences that set
distinct values are the alternatives — an action must be a function of its
variables and rng, as a seeded run already assumes.
"""

from __future__ import annotations

import copy
import hashlib
import math
import os
import tempfile
import time
from inspect import isawaitable
from types import MappingProxyType
from typing import Callable

import attrs

from choreo.execution import INTERRUPTED, LIMIT, TIMEOUT, Plan, Simulator, prepare
from .alike import alike_in_parallel
from .explore import DEFAULT_MAX_STEPS, ERROR, Detectors, detect_on
from .outcomes import ACTION_LIMIT, DomainTooLarge, Outcomes
from .reduction import Blocked, NotDeterministic, Reduction, Tree
from .verification import BOUNDS, Counterexample, said, Tally, Verification

CATALOG = "catalog"  # detectors=CATALOG: cpl.anomalies.detect, the catalog's
CHECKED_CALLS = 8  # calls of each action checked: its first made again 5 times, the rest once


def verify(choreography, *, args=(), values: dict | None = None,
           detectors: Detectors | str = CATALOG, max_steps: int | None = DEFAULT_MAX_STEPS,
           max_runs: int | None = None, time_limit: float | None = None, workers: int = 1,
           traces: str | None = None, counterexample: str | bool | None = True,
           sample_domains: bool = False, replay: str | None = None,
           each: Callable | None = None, source=None) -> Verification:
    """Run every MSC of ``choreography`` (or a prepared ``Plan``) once, within the bounds.

    ``max_steps`` bounds each run, ``max_runs`` the MSCs, ``time_limit`` the seconds;
    ``traces`` is a folder that receives every MSC's trace (named by its path);
    ``counterexample`` the file the first counterexample goes to (True: a temporary
    file, when something fired; None: none); ``replay`` a path: that MSC alone;
    ``each(trace)`` sees every MSC's trace.  ``workers`` > 1 splits the search
    across processes (:mod:`.verify_pool`; ``source`` is as for :func:`explore`).
    """
    _check_bounds(max_steps, max_runs, time_limit, workers)
    plan = choreography if isinstance(choreography, Plan) else prepare(choreography)
    inputs = plan.inputs(args, values)
    if detectors == CATALOG:
        from cpl.anomalies import detect
        detectors = detect
    started = time.perf_counter()
    search = Search(plan, inputs, detectors, max_steps, sample_domains, traces, each)
    prefix = _parsed(replay) if replay is not None else ()
    if workers > 1 and replay is None and search.seen is None:  # (repeats: seen in one place)
        from .verify_pool import search_in_parallel
        tally = search_in_parallel(search, workers, max_runs, time_limit, source)
    else:
        deadline = None if time_limit is None else time.monotonic() + time_limit
        try:
            tally = search.run(Tree(prefix), max_runs, deadline, replay is not None)
        except NotDeterministic as error:
            if replay is None:
                raise
            raise NotDeterministic(f"--replay {_clipped(replay)}: {error}") from None
    return _report(plan, inputs, tally, counterexample, time.perf_counter() - started,
                   search.alike)


def _check_bounds(max_steps, max_runs, time_limit, workers) -> None:
    """``ValueError`` for a bound no search can have (``cpl verify`` says so first)."""
    for name, value in (("max_steps", max_steps), ("max_runs", max_runs), ("workers", workers)):
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, not {value}")
    if time_limit is not None and not (time_limit > 0 and math.isfinite(time_limit)):
        raise ValueError(f"time_limit must be a number of seconds above 0, not {time_limit}")


class Search:
    """Runs of one plan on one set of inputs, down one subtree of choice points."""

    def __init__(self, plan: Plan, inputs: dict, detectors, max_steps, sample: bool,
                 traces: str | None, each: Callable | None):
        self.plan, self.inputs, self.detectors = plan, inputs, detectors
        self.max_steps, self.traces, self.each = max_steps, traces, each
        self.rngs = {name: Outcomes(name, sample) for name in plan.lifelines}
        # Statements alike in parallel threads (.alike): the MSCs run, to run each once.
        self.alike = alike_in_parallel(plan)
        self.seen: set[bytes] | None = None if self.alike is None else set()
        self.wait = None  # an Awaiter for async actions' outcomes, made on first need
        self.checked: dict[int, int] = {}  # an action statement's id -> its calls checked
        self.tree = Tree()

    def run(self, tree: Tree, max_runs: int | None, deadline: float | None,
            replaying: bool = False) -> Tally:
        """Every run below ``tree``'s prefix, in order, until a bound stops it."""
        tally = Tally()
        clock = time.process_time
        simulator = Simulator.of(self.plan)
        if self.traces is not None:
            os.makedirs(self.traces, exist_ok=True)
        while True:
            if max_runs is not None and tally.mscs >= max_runs:
                tally.bounds["max-runs"] = f"stopped after {said(tally.mscs)} (--max-runs)"
                break
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                tally.bounds["time-limit"] = f"stopped after {said(tally.mscs)} (--time-limit)"
                break
            start = clock()
            tally.runs += 1
            try:
                result = self.one_run(simulator, tree, remaining)
            except Blocked:
                if replaying:
                    raise NotDeterministic(f"no MSC at path {_shown(tree)}: its run repeats "
                                           f"an earlier MSC, and the search abandons it") from None
                tally.blocked += 1
                tally.cpu += clock() - start
            else:
                if result.status == INTERRUPTED:
                    raise KeyboardInterrupt
                if result.status == TIMEOUT:
                    tally.runs -= 1
                    tally.bounds["time-limit"] = (f"stopped after {said(tally.mscs)} "
                                                  f"(--time-limit)")
                    break
                if replaying and not tree.replayed():
                    raise NotDeterministic(f"no MSC at path {_shown(tree)}: its runs end "
                                           f"after {tree.depth} choice"
                                           f"{'' if tree.depth == 1 else 's'}")
                if not replaying and self._repeats(result):
                    tally.blocked += 1
                else:
                    children = [0.0]
                    self._count(tally, result, tree.path(), children)
                    tally.cpu += children[0]
                tally.cpu += clock() - start
            if replaying or not tree.advance():  # a replay: the first MSC below its path
                break
        for rng in self.rngs.values():
            for why in rng.unenumerable:
                tally.bounds.setdefault("not enumerable", why)
            for why in rng.sampled:
                tally.bounds.setdefault("sampled", why)
        return tally

    def one_run(self, simulator: Simulator, tree: Tree, remaining: float | None):
        """The run along ``tree``'s current path (``Blocked``: the reduction abandons it)."""
        self.tree = tree
        tree.start()
        return simulator.run(values=self.inputs, max_steps=self.max_steps, timeout=remaining,
                             pick=Reduction(tree, self._act).pick, rngs=self.rngs.__getitem__)

    def _repeats(self, result) -> bool:
        """The run's MSC was run before (remembered only where :mod:`.alike` says so)."""
        if self.seen is None:
            return False
        from cpl.trace import msc_key
        digest = hashlib.blake2b(repr((result.status, msc_key(result.trace))).encode(),
                                 digest_size=16).digest()
        if digest in self.seen:
            return True
        self.seen.add(digest)
        return False

    def _count(self, tally: Tally, result, path: str, cpu: list) -> None:
        trace = attrs.evolve(result.trace, meta={**result.trace.meta, "schedule": "verify",
                                                  "path": path})
        if result.status == LIMIT:
            tally.bounds.setdefault("max-steps", f"runs reached --max-steps "
                                                 f"{self.max_steps} (the first at path "
                                                 f"{path or '(root)'})")
        status, error = result.status, result.error
        try:
            fired = detect_on(self.detectors, trace, f"the MSC at path {path}", cpu)
        except Exception as failure:  # noqa: BLE001 - a detector's bug: counted, as explore does
            status, error, fired = ERROR, str(failure), {}
        tally.count_trace(trace, status, error, path, fired)
        if self.each is not None:
            self.each(trace)
        if self.traces is not None:
            from cpl.trace import dump_trace
            dump_trace(trace, os.path.join(self.traces, f"msc-{path or 'root'}.jsonl"))

    def _act(self, option) -> None:
        """The action ``option`` is at is about to be called: its distinct outcomes are a
        choice point, and its rng is scripted to take the one this run takes."""
        runner, thread, _ = option
        s = thread.want[1]
        rng = runner.rng
        call = f"{runner.name}.{runner.taken + 1}"
        scripts = self._outcomes(s, runner.store, rng, call, runner.name)
        chosen = 0 if len(scripts) == 1 else self.tree.decide(
            len(scripts), lambda: f"the outcome of action {s.label!r} on {runner.name}")
        rng.begin(s.label, call, scripts[chosen])

    def _outcomes(self, s, store: dict, rng: Outcomes, call: str,
                  lifeline: str) -> list[tuple]:
        """One script of draws per distinct value the action can give, in draw order."""
        rng.begin(s.label, call)
        first = self._call(s, store, rng)
        self._check_deterministic(s, store, rng, call, lifeline, first)
        if not rng.domains:  # no draw, one outcome: most actions
            return [()]
        found: dict = {_key(first): (0,) * len(rng.domains)}
        script: list[int] = [0] * len(rng.domains)
        calls = 1
        while True:
            taken = script + [0] * (len(rng.domains) - len(script))
            while taken and taken[-1] + 1 >= rng.domains[len(taken) - 1]:
                taken.pop()
            if not taken:
                return list(found.values())
            if calls >= ACTION_LIMIT:
                rng._over_the_limit(f"has more than {ACTION_LIMIT} sequences of outcomes",
                                    ACTION_LIMIT)
                return list(found.values())
            taken[-1] += 1
            script = taken
            rng.begin(s.label, call, tuple(script))
            found.setdefault(_key(self._call(s, store, rng)), tuple(script) + (0,) * (
                len(rng.domains) - len(script)))
            calls += 1

    def _check_deterministic(self, s, store: dict, rng: Outcomes, call: str, lifeline: str,
                             first) -> None:
        """The first calls of each action are made again with the same outcomes: one that
        reads a clock or the global random generator gives another value, and its MSCs
        would not be its own (``NotDeterministic``, naming it, not a false "complete")."""
        made = self.checked.get(id(s), 0)
        if made >= CHECKED_CALLS:
            return
        self.checked[id(s)] = made + 1
        one = _key(first)
        if isinstance(one, _Unreadable):
            return
        for _ in range(5 if made == 0 else 1):  # its first call: a coin read elsewhere, 1/32
            rng.begin(s.label, call)
            again = self._call(s, store, rng)
            other = _key(again)
            if one != other and not isinstance(other, _Unreadable):
                break
        else:
            return
        raise NotDeterministic(
            f"action {s.label!r} on {lifeline} gave {_brief(first)} and then "
            f"{_brief(again)} for the same draws of its rng: an action must be a function "
            f"of its variables and rng (does it read a clock, a file, or the random "
            f"module instead of rng?)")

    def _call(self, s, store: dict, rng: Outcomes):
        """What one call gives (a failure as its own kind of value: the real call fails).
        On a copy of the store: the engine's own call is the one whose changes count."""
        try:
            copied = copy.deepcopy(store)
        except Exception:  # noqa: BLE001 - a value that cannot be copied: read in place
            copied = store
        try:
            value = s.fn(MappingProxyType(copied), rng)
            if isawaitable(value):
                value = self._await(value)
        except BaseException as error:  # noqa: BLE001 - the real call fails alike
            if isinstance(error, (NotDeterministic, DomainTooLarge, KeyboardInterrupt,
                                  GeneratorExit)):
                raise
            return _Raised(f"{type(error).__name__}: {error}")
        return value

    def _await(self, awaitable):
        if self.wait is None:
            from choreo.execution import Awaiter
            self.wait = Awaiter()
        return self.wait(awaitable, None)


class _Raised(str):
    """An action's failure, told apart from any value it returns."""


def _key(value) -> object:
    """A value as a key: equal keys set variables that behave alike afterwards, so types
    and orders count (a tuple is not its list, nor a dict its reordering, though a trace
    writes them alike).  A value it cannot read is a key of its own: never merged."""
    if isinstance(value, _Raised):
        return ("raised", str(value))
    try:
        return _shape(value, 0)
    except Exception:  # noqa: BLE001 - a repr that raises, a value nested too deep
        return _Unreadable()


class _Unreadable:
    """The key of a value :func:`_key` cannot read: equal to no other."""


def _brief(value) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr that raises
        text = f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:60] + "..."


def _shape(value, depth: int):
    if depth > 100:
        raise RecursionError("nested too deep to compare")
    kind = type(value)
    if value is None or kind in (bool, int, str, bytes):
        return kind.__name__, value
    if kind is float:
        return "float", repr(value)  # nan equals itself here, as it prints
    if kind in (list, tuple):
        return kind.__name__, tuple(_shape(item, depth + 1) for item in value)
    if kind is dict:
        return "dict", tuple((_shape(k, depth + 1), _shape(v, depth + 1))
                             for k, v in value.items())
    if kind in (set, frozenset):
        return kind.__name__, tuple(sorted(repr(_shape(item, depth + 1)) for item in value))
    return f"{kind.__module__}.{kind.__qualname__}", repr(value)


def _parsed(path: str) -> tuple[int, ...]:
    parts = path.split(".") if path else []
    if (len(parts) > 100_000 or not all(part.isascii() and part.isdigit() and len(part) < 10
                                        for part in parts)):
        shown = repr(path) if len(path) <= 60 else f"{path[:60]!r}... ({len(path)} characters)"
        raise NotDeterministic(f"--replay {shown}: give a path as the report prints it "
                               f"(numbers joined by dots, e.g. 0.2.1)")
    return tuple(int(part) for part in parts)


def _shown(tree: Tree) -> str:
    return _clipped(".".join(str(node[0]) for node in tree.nodes) or "(empty)")


def _clipped(path: str) -> str:
    """A path in an error, cut short: a --replay may be long."""
    return path if len(path) <= 60 else f"{path[:60]}... ({len(path)} characters)"


def _report(plan: Plan, inputs: dict, tally: Tally, counterexample,
            wall: float, alike: str | None) -> Verification:
    if ERROR in tally.statuses:  # those MSCs were run, but not checked
        _, path, error = tally.failures[ERROR]
        tally.bounds["detector error"] = (f"the detectors raised on "
                                          f"{said(tally.statuses[ERROR])}, the first at path "
                                          f"{path or '(root)'}: {error}")
    bound = next((b for b in BOUNDS if b in tally.bounds), None)
    written = None
    if tally.example is not None and counterexample:
        written = counterexample if isinstance(counterexample, str) else _temporary()
        from cpl.trace import dump_trace
        dump_trace(tally.example[1], written)
    first = {name: Counterexample(name, path, index)
             for name, (_, path, index) in sorted(tally.first.items())}
    replay = None
    if first:
        earliest = min(first.values(), key=lambda c: c.index)
        replay = f"--replay {earliest.path}"
    statuses = dict(sorted(tally.statuses.items(), key=lambda item: (item[0] != "ok", item[0])))
    return Verification(
        name=plan.name, inputs=inputs, complete=bound is None, bound=bound,
        why=None if bound is None else tally.bounds[bound], mscs=tally.mscs, runs=tally.runs,
        blocked=tally.blocked, statuses=statuses,
        decisions={label: {"true": t, "false": f}
                   for label, (t, f) in sorted(tally.decisions.items())},
        detectors=dict(sorted(tally.detectors.items())), first=first,
        failures={status: [path, error] for status, (_, path, error)
                  in sorted(tally.failures.items())},
        work=dict(tally.work), seconds={"cpu": round(tally.cpu, 4), "wall": round(wall, 4)},
        workers=tally.workers, counterexample=written, replay=replay, alike=alike)


def _temporary() -> str:
    handle, path = tempfile.mkstemp(prefix="cpl-verify-", suffix=".jsonl")
    os.close(handle)
    return path

