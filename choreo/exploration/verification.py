"""What ``cpl verify`` found: the report, and how its parts add up across workers.

Why a report of its own rather than ``cpl explore``'s: *complete* is a claim
about every MSC, so the report says which bound, if any, kept it from being
one; and a counterexample is named by its path (``--replay``), which does not
depend on a seed or on how many workers split the search.
"""

from __future__ import annotations

import attrs

from .counts import add_counts, add_decisions, count_events

STOPPED = ("time-limit", "max-runs")  # bounds that stop the search before its end
# in the order reported; "detector error": some MSC's detectors raised, so it was not checked
BOUNDS = ("detector error", *STOPPED, "max-steps", "not enumerable", "sampled")


@attrs.frozen
class Counterexample:
    """The first MSC (in the search's order) in which a detector fired."""

    detector: str
    path: str  # the choices that make it: ``cpl verify --replay PATH``
    index: int  # its number among the MSCs explored, from 1

    def to_json(self) -> dict:
        return {"detector": self.detector, "path": self.path, "index": self.index}


@attrs.frozen
class Verification:
    """Every MSC of a choreography within the bounds, or how far the search got."""

    name: str
    inputs: dict
    complete: bool
    bound: str | None  # the first of BOUNDS that applies, None when complete
    why: str | None  # the sentence that says what the bound left out
    mscs: int
    runs: int  # runs made: the MSCs, and those the reduction abandoned
    blocked: int
    statuses: dict  # status -> MSCs that ended with it
    decisions: dict  # label -> {"true": choice events, "false": choice events}
    detectors: dict  # detector -> MSCs in which it fired (0 for those that never did)
    first: dict  # detector -> Counterexample
    failures: dict  # non-ok status -> [path, error] of its first MSC
    work: dict  # "events", "messages", "decisions": summed over the MSCs
    seconds: dict  # "cpu" (the search's processes, detectors' included), "wall"
    workers: int = 1
    counterexample: str | None = None  # the file the first counterexample was written to
    replay: str | None = None  # the command that replays the first counterexample
    # where statements alike in parallel threads made the search remember every MSC (.alike)
    alike: str | None = None

    @property
    def fired(self) -> dict:
        """The detectors that fired, with the number of MSCs each fired in."""
        return {name: count for name, count in self.detectors.items() if count}

    @property
    def failed(self) -> int:
        """MSCs whose run did not end ok (failed, deadlock; not the step limit)."""
        return sum(count for status, count in self.statuses.items()
                   if status not in ("ok", "limit"))

    @property
    def exit_code(self) -> int:
        """cli.md: 0 complete with nothing found, 1 something found, 3 bounded."""
        if self.fired or self.failed:
            return 1
        return 0 if self.complete else 3

    def to_json(self) -> dict:
        return {"name": self.name, "inputs": self.inputs,
                "result": "complete" if self.complete else "bounded",
                "bound": self.bound, "why": self.why, "mscs": self.mscs, "runs": self.runs,
                "blocked": self.blocked, "statuses": self.statuses, "decisions": self.decisions,
                "detectors": self.detectors,
                "first": {name: c.to_json() for name, c in self.first.items()},
                "failures": self.failures, "counterexample": self.counterexample,
                "replay": self.replay, "work": self.work, "seconds": self.seconds,
                "workers": self.workers, "alike": self.alike}

    def __repr__(self) -> str:
        """What a failed ``assert report.complete and not report.fired`` shows."""
        parts = [f"{'complete' if self.complete else 'bounded'}: {said(self.mscs)} of "
                f"{self.name!r}"]
        if self.why:
            parts.append(self.why)
        for name, count in self.fired.items():
            parts.append(f"{name} fired in {said(count)}, first in MSC {self.first[name].index} "
                        f"(path {self.first[name].path})")
        for status, (path, error) in self.failures.items():
            parts.append(f"{status} at path {path}: {error}")
        if self.counterexample:
            parts.append(f"counterexample: {self.counterexample}; draw it: cpl render "
                        f"{self.counterexample} -o counterexample.svg")
        return "Verification(" + "; ".join(parts) + ")"


class Tally:
    """Counts of some MSCs; two tallies of disjoint subtrees add up (:meth:`merge`)."""

    def __init__(self):
        self.mscs = self.runs = self.blocked = 0
        self.statuses: dict[str, int] = {}
        self.decisions: dict[str, list[int]] = {}
        self.detectors: dict[str, int] = {}
        self.first: dict[str, tuple] = {}  # detector -> (path key, path, index in this tally)
        self.failures: dict[str, tuple] = {}  # status -> (path key, path, error)
        self.work = {"events": 0, "messages": 0, "decisions": 0}
        self.cpu = 0.0
        self.bounds: dict[str, str] = {}  # bound -> why
        self.example = None  # (path key, trace) of the earliest firing, to write out
        self.workers = 1  # the processes that searched (a split may fall back to this one)

    def count_trace(self, trace, status: str, error: str | None, path: str,
                    fired: dict) -> None:
        """One MSC: its status, its events, what fired in it."""
        self.mscs += 1
        self.statuses[status] = self.statuses.get(status, 0) + 1
        key = path_key(path)
        if status != "ok" and status != "limit" and status not in self.failures:
            self.failures[status] = (key, path, error)
        count_events(trace.events, self.work, self.decisions)
        for name, hit in fired.items():
            self.detectors[name] = self.detectors.get(name, 0) + bool(hit)
            if hit and name not in self.first:
                self.first[name] = (key, path, self.mscs)
                if self.example is None:
                    self.example = (key, trace)

    def merge(self, later: "Tally") -> None:
        """Add the tally of the subtree that comes after this one in the search's order."""
        for name, (key, path, index) in later.first.items():
            if name not in self.first:
                self.first[name] = (key, path, self.mscs + index)
        for status, found in later.failures.items():
            self.failures.setdefault(status, found)
        if self.example is None:
            self.example = later.example
        self.mscs += later.mscs
        self.runs += later.runs
        self.blocked += later.blocked
        add_counts(((self.statuses, later.statuses), (self.detectors, later.detectors),
                    (self.work, later.work)))
        add_decisions(self.decisions, later.decisions)
        for bound, why in later.bounds.items():
            self.bounds.setdefault(bound, why)
        self.cpu += later.cpu


def said(count: int) -> str:
    """A number of MSCs, in words."""
    return f"{count:,} MSC" if count == 1 else f"{count:,} MSCs"


def path_key(path: str) -> tuple:
    """Paths in the search's order (depth first, alternatives in order)."""
    return tuple(int(part) for part in path.split(".")) if path else ()
