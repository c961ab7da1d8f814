"""``cpl verify --workers N``: the tree of choice points split into disjoint subtrees.

A subtree is a :class:`~.reduction.Tree` with a prefix: its search makes exactly
the runs one search makes below that prefix, in the same order, and never goes
above it.  So subtrees whose prefixes cover the tree, searched anywhere and
merged in the search's order (their paths sorted: depth first is the order of
paths), add up to one search: every count, each detector's first
counterexample (its path and its index) and each status's first failure are
one worker's (:meth:`.verification.Tally.merge`).

**The split.**  This process learns the top of the tree by *probes*: the first
run below a prefix, without detectors, says how many alternatives each choice
point on its way has.  It splits the prefix whose subtree looks largest into
one prefix per alternative, until there are ``8 × workers`` of them or every
one is a leaf, and hands them out in the search's order.  Probes are not
counted (the worker searching a prefix makes that run again), so ``runs`` and
``blocked`` equal one worker's too; only their CPU is added.

**Bounds.**  ``time_limit``: each worker stops at the same deadline, and no
subtree is handed out after it; any subtree cut or left makes the report
bounded by it.  ``max_runs``: the budget is handed out in slices (a subtree
whose slice runs out goes back in the queue where it stopped: its tree says
where), so at most ``max_runs`` MSCs are run.  When the bound stops the search
the MSCs are not one worker's first ``max_runs`` (several subtrees advance at
once), so the counts differ; when it does not, they are equal.

**Per-process notes.**  Each lifeline's :class:`~.outcomes.Outcomes` notes draws it
could not enumerate or sampled; a worker clears them before each subtree and
ships them back, and they are merged in the search's order, so the report's
*why* is one worker's.

**Not split**: ``each`` is a callable of this process, so with ``each`` the search
runs here, as with one worker; so does it when no worker can get the plan (no
fork, and no ``source`` or detectors that cannot be pickled for a spawned one).

An error (a usage error, a detector that raised) ends the search as with one
worker; with several, the one raised is the first to happen, which need not be
the first in the search's order.
"""

from __future__ import annotations

import gc
import heapq
import math
import signal
import time
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType

from choreo.execution import INTERRUPTED, TIMEOUT, Simulator
from .explore import Source, _context
from .pool import in_pool, picklable
from .reduction import Blocked, Tree
from .verification import Tally, said

SPLIT = 8  # subtrees per worker, at least, so the slowest one leaves no worker idle long
NOTES = ("not enumerable", "sampled")  # bounds that come from the Outcomes' notes


def _proxy(items: dict) -> MappingProxyType:
    return MappingProxyType(items)


# A tally comes back with its first counterexample's trace, whose maps are read-only views.
ForkingPickler.register(MappingProxyType, lambda proxy: (_proxy, (dict(proxy),)))

_SEARCH = None  # a worker's Search: inherited by a fork, rebuilt by a spawned worker
_DEADLINE: float | None = None


def search_in_parallel(search, workers: int, max_runs: int | None, time_limit: float | None,
                       source: Source | None) -> Tally:
    """One search's tally, from subtrees explored by ``workers`` processes."""
    deadline = None if time_limit is None else time.monotonic() + time_limit
    if search.each is not None:  # a callable of this process: see the docstring
        return _here(search, [((), [], 0)], max_runs, deadline)
    started = time.process_time()
    split = prefixes(search, workers * SPLIT, deadline)
    probed = time.process_time() - started
    context = _context(source)  # after the probes: they may have started a thread
    shipped = None
    if context is not None and context.get_start_method() != "fork":
        shipped = (type(search), source, search.inputs, search.detectors, search.max_steps,
                   any(rng.sampling for rng in search.rngs.values()), search.traces)
        if not picklable(shipped):
            context = None
    jobs = [(prefix, [[chosen, None] for chosen in prefix], len(prefix)) for prefix in split]
    if context is None or len(jobs) == 1:
        tally = _here(search, jobs, max_runs, deadline)
    else:
        tally = _in_workers(search, jobs, min(workers, len(jobs)), context, shipped,
                            max_runs, deadline)
    tally.cpu += probed
    return tally


# ---------------------------------------------------------------- the split


def prefixes(search, wanted: int, deadline: float | None = None) -> list[tuple]:
    """Prefixes covering the tree, in the search's order, until there are ``wanted``.

    The prefix split next is the one whose subtree looks largest: the product of the
    alternatives along its first run (Knuth's estimate of a tree's size from one
    path).  A search's first subtrees are often its largest; splitting evenly by
    depth would leave one worker with most of the tree."""
    simulator = Simulator.of(search.plan)
    frontier: list[tuple] = [()]
    below: dict[tuple, list | None] = {(): None}  # prefix -> counts along its first run
    while len(frontier) < wanted:
        for prefix in frontier:
            if below[prefix] is None:
                counts = _probe(search, simulator, prefix, deadline)
                if counts is None:  # out of time: the workers will say so
                    return frontier
                below[prefix] = counts
        prefix = max(frontier, key=lambda prefix: math.prod(below[prefix] or ()))
        counts = below[prefix]
        if not counts:  # every prefix is a leaf
            break
        at = frontier.index(prefix)
        children = [prefix + (i,) for i in range(counts[0])]
        frontier[at:at + 1] = children
        below.update(dict.fromkeys(children[1:]))
        below[children[0]] = counts[1:]  # its first run is the prefix's
    return frontier


def _probe(search, simulator: Simulator, prefix: tuple, deadline: float | None) -> list | None:
    """The alternatives at each choice point below ``prefix`` on the first run below it;
    None: the deadline passed."""
    tree = Tree(prefix)
    remaining = None if deadline is None else deadline - time.monotonic()
    if remaining is not None and remaining <= 0:
        return None
    try:
        result = search.one_run(simulator, tree, remaining)
    except Blocked:
        pass
    else:
        if result.status == INTERRUPTED:
            raise KeyboardInterrupt
        if result.status == TIMEOUT:
            return None
    return [node[1] for node in tree.nodes[len(prefix):tree.depth]]


# ---------------------------------------------------------------- searching the subtrees


def search_below(search, prefix: tuple, deadline: float | None = None) -> tuple:
    """Every run below ``prefix``: what :func:`merged` adds up (a cluster's task)."""
    return _search(search, (prefix, [[chosen, None] for chosen in prefix], len(prefix)), None,
                   deadline)


def _search(search, job: tuple, max_runs: int | None, deadline: float | None) -> tuple:
    """(path key, tally, where it stopped or None, notes) of one job: the runs below its
    tree's floor, from its nodes on, at most ``max_runs`` MSCs."""
    key, nodes, floor = job
    for rng in search.rngs.values():
        rng.unenumerable.clear()
        rng.sampled.clear()
    tree = Tree()
    tree.nodes = [list(node) for node in nodes]
    tree.floor = floor
    tally = search.run(tree, max_runs, deadline)
    for bound in NOTES:
        tally.bounds.pop(bound, None)
    rest = None
    if tally.bounds.pop("max-runs", None) is not None:  # the slice ran out, not the tree
        rest = ([list(node) for node in tree.nodes], floor)
    notes = {name: (list(rng.unenumerable), list(rng.sampled))
             for name, rng in search.rngs.items()}
    return key, tally, rest, notes


def _here(search, jobs: list, max_runs: int | None, deadline: float | None) -> Tally:
    """The jobs in this process, in order: one worker's search."""
    parts: list[tuple] = []
    mscs = 0
    for job in jobs:
        left = None if max_runs is None else max_runs - mscs
        if left is not None and left <= 0:
            return merged(search, parts, "max-runs")
        part = _search(search, job, left, deadline)
        parts.append(part)
        mscs += part[1].mscs
        if part[2] is not None:
            return merged(search, parts, "max-runs")
        if "time-limit" in part[1].bounds:
            break
    return merged(search, parts)


class _Queue:
    """The jobs not yet handed out, earliest path first, each with its slice of the budget.

    An iterator that may run dry and fill again: :func:`in_pool` asks it for more after
    each batch is taken, and a slice that ran out comes back as a job."""

    def __init__(self, jobs: list, max_runs: int | None, workers: int, deadline):
        self.heap = [(tuple(n[0] for n in nodes), nodes, floor) for _, nodes, floor in jobs]
        heapq.heapify(self.heap)
        self.max_runs, self.deadline = max_runs, deadline
        self.slice = 0 if max_runs is None else max(1, math.ceil(max_runs / (3 * workers)))
        self.counted = self.reserved = 0
        self.given: dict[tuple, int] = {}  # path key -> the slice it was given

    def __iter__(self):
        return self

    def __next__(self) -> tuple:
        if not self.heap or (self.deadline is not None and time.monotonic() >= self.deadline):
            raise StopIteration
        bound = None
        if self.max_runs is not None:
            left = self.max_runs - self.counted - self.reserved
            if left <= 0:
                raise StopIteration
            bound = min(left, self.slice)
            self.reserved += bound
        job = heapq.heappop(self.heap)
        self.given[job[0]] = bound or 0
        return job, bound

    def back(self, key: tuple, tally: Tally, rest: tuple | None) -> None:
        """A job's result: its budget is counted, and where it stopped is queued."""
        self.reserved -= self.given.pop(key)
        self.counted += tally.mscs
        if rest is not None:
            nodes, floor = rest
            heapq.heappush(self.heap, (tuple(node[0] for node in nodes), nodes, floor))


def _in_workers(search, jobs: list, workers: int, context, shipped, max_runs, deadline) -> Tally:
    global _SEARCH, _DEADLINE
    queue = _Queue(jobs, max_runs, workers, deadline)
    parts: list[tuple] = []

    def take(results: list) -> None:
        for part in results:
            parts.append(part)
            queue.back(*part[:3])

    _SEARCH, _DEADLINE = search, deadline  # what a forked worker inherits
    gc.freeze()  # a forked worker's collector leaves the inherited objects (and pages) alone
    try:
        in_pool(queue, workers, context, _start, (shipped, deadline), _work, take)
    finally:
        gc.unfreeze()
        _SEARCH = _DEADLINE = None
    stopped = None
    if queue.heap:  # subtrees never searched: a bound stopped the search
        late = deadline is not None and time.monotonic() >= deadline
        stopped = "time-limit" if late else "max-runs"
    tally = merged(search, parts, stopped)
    tally.workers = workers
    return tally


def _start(shipped, deadline) -> None:
    """A worker's initializer: Ctrl-C is the parent's, and SIGTERM (the parent's way to end
    it) ends it whatever the parent made of SIGTERM; a spawned worker builds the search."""
    global _SEARCH, _DEADLINE
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _DEADLINE = deadline
    if shipped is not None:
        kind, source, inputs, detectors, max_steps, sample, traces = shipped
        _SEARCH = kind(source.plan(), inputs, detectors, max_steps, sample, traces, None)


def _work(chunk) -> tuple:
    job, bound = chunk
    return _search(_SEARCH, job, bound, _DEADLINE)


# ---------------------------------------------------------------- the merged tally


def merged(search, parts: list, stopped: str | None = None) -> Tally:
    """The tally of one search from its parts (:func:`search_below`'s, in any order): added
    up in the search's order, which is the order of their paths.  ``stopped``: the bound
    that left some of the tree unsearched."""
    tally = Tally()
    noted: dict[str, tuple] = {}  # lifeline -> (its unenumerable notes, its sampled ones)
    for _, part, _, notes in sorted(parts, key=lambda part: part[0]):
        tally.merge(part)
        _note(noted, notes)
    if stopped is not None:
        tally.bounds[stopped] = ""
    return _finished(search, tally, noted)


def _note(noted: dict, notes: dict) -> None:
    """Add one job's notes, which come after those already noted."""
    for name, (unenumerable, sampled) in notes.items():
        mine = noted.setdefault(name, ({}, {}))
        mine[0].update(dict.fromkeys(unenumerable))
        mine[1].update(dict.fromkeys(sampled))


def _finished(search, tally: Tally, noted: dict) -> Tally:
    """The bounds as one search words them."""
    for name in search.rngs:  # the plan's order, as Search.run goes through them
        unenumerable, sampled = noted.get(name, ({}, {}))
        for why in unenumerable:
            tally.bounds.setdefault("not enumerable", why)
        for why in sampled:
            tally.bounds.setdefault("sampled", why)
    for bound, flag in (("max-runs", "--max-runs"), ("time-limit", "--time-limit")):
        if bound in tally.bounds:
            tally.bounds[bound] = f"stopped after {said(tally.mscs)} ({flag})"
    return tally
