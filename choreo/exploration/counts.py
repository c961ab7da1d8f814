"""The counts ``cpl explore`` and ``cpl verify`` both keep, kept one way.

Why one place: both report the same work (events, messages, decisions) and the
same table of decisions by label and outcome, and both add up the tallies of
their workers; two copies would drift apart.
"""

from __future__ import annotations


def count_events(events, work: dict, decisions: dict) -> None:
    """Add one trace's events to ``work`` and its choices to ``decisions`` (label ->
    [true, false])."""
    work["events"] += len(events)
    for event in events:
        kind = event.kind
        if kind == "send":
            work["messages"] += 1
        elif kind == "choice":
            work["decisions"] += 1
            counts = decisions.get(event.label or event.guard)
            if counts is None:
                counts = decisions[event.label or event.guard] = [0, 0]
            counts[0 if event.outcome else 1] += 1


def add_counts(pairs) -> None:
    """For each (mine, theirs) of counts by key: add theirs to mine."""
    for mine, theirs in pairs:
        for key, value in theirs.items():
            mine[key] = mine.get(key, 0) + value


def add_decisions(mine: dict, theirs: dict) -> None:
    """Add one decisions table (label -> [true, false]) to another."""
    for label, (true, false) in theirs.items():
        counts = mine.setdefault(label, [0, 0])
        counts[0] += true
        counts[1] += false
