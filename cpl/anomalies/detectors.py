"""The catalog's anomaly predicates over a log of operation records.

Each detector is the spec's definition (anomalies.md §3.1–3.6) read literally,
over ``h``, a sequence of ``OpRecord``; positions are 1-based as in the spec
(``h[i]`` is ``history[i - 1]``).  A detector returns every witness, not a
bool, so a report can say which operations: the anomaly holds iff the list is
non-empty.  Witnesses are listed in order of their positions.

Values are compared as JSON values, without coercion (``1 != true``,
``1 == 1.0``), as CPL compares them.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict
from typing import Callable, Mapping, Sequence

import attrs

from ..lang import is_number

from .records import OpRecord


@attrs.frozen
class Stale:
    """A1: ``h[i]`` read ``cell`` before ``h[j]`` (another agent) wrote a different value
    of it, and committed after that write."""
    i: int
    j: int
    cell: str


@attrs.frozen
class Phantom:
    """A2: ``h[i]`` planned ``tool`` from a registry that held it; at commit it was gone."""
    i: int
    tool: str


@attrs.frozen
class Cascade:
    """A3: ``h[j]`` survives although its predecessor ``h[p]`` was aborted."""
    j: int
    p: int


@attrs.frozen
class Residue:
    """A3 residue: ``h[j]`` read a non-NULL ``cell`` value that no other logged write
    produced at or before its read."""
    j: int
    cell: str


@attrs.frozen
class Reordering:
    """A6: ``h[i]`` committed its effects in another order than it issued them."""
    i: int


@attrs.frozen
class LostUpdate:
    """Lost update: ``h[m]`` overwrote ``cell`` without having read ``h[k]``'s earlier
    write of it, and ``h[k]``'s contribution is missing from the final value."""
    k: int
    m: int
    cell: str


def witness_json(witness) -> dict:
    """A witness as a JSON object: its kind and its fields (``{"kind": "Stale", "i": 2, …}``)."""
    return {"kind": type(witness).__name__, **attrs.asdict(witness)}


# --------------------------------------------------------------- values

def same(a, b) -> bool:
    """JSON equality without coercion: booleans are not numbers; lists and objects
    compare item by item.  Iterative, so a deep value cannot exhaust the stack."""
    pending = [(a, b)]
    while pending:
        a, b = pending.pop()
        if is_number(a) and is_number(b):
            if a != b:
                return False
        elif type(a) is not type(b):
            return False
        elif isinstance(a, (list, tuple)):
            if len(a) != len(b):
                return False
            pending.extend(zip(a, b))
        elif isinstance(a, dict):
            if a.keys() != b.keys():
                return False
            pending.extend((a[key], b[key]) for key in a)
        elif a != b:
            return False
    return True


def _key(value):
    """A hashable stand-in with ``same``'s equality (for multiset comparison)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if is_number(value):
        return ("number", value)
    if isinstance(value, (list, tuple)):
        return ("list", tuple(_key(item) for item in value))
    if isinstance(value, dict):
        return ("object", tuple(sorted((key, _key(item)) for key, item in value.items())))
    return ("other", repr(value))


# ------------------------------------------------------------ detectors

def _writers(h: Sequence[OpRecord]) -> dict[str, list[int]]:
    """Cell → the positions of the records that write it, ascending."""
    writers: dict[str, list[int]] = defaultdict(list)
    for position, record in enumerate(h, 1):
        for cell in record.write_set:
            writers[cell].append(position)
    return writers


class _ByTime:
    """The writers of each cell by write_time, to find those strictly between two times
    without scanning them all (a long log would make the detectors quadratic)."""

    def __init__(self, h: Sequence[OpRecord]):
        self.times: dict[str, list[tuple[int, int]]] = {
            cell: sorted((h[j - 1].write_time, j) for j in positions)
            for cell, positions in _writers(h).items()}

    def between(self, cell: str, low: int | None, high: int) -> list[int]:
        """Positions of the writers of ``cell`` with low < write_time < high (no low: any)."""
        times = self.times.get(cell, ())
        start = 0 if low is None else bisect.bisect_right(times, (low, math.inf))
        end = bisect.bisect_left(times, (high, -math.inf))
        return [j for _, j in times[start:end]]


def stale_generation(h: Sequence[OpRecord]) -> list[Stale]:
    """Definition 1 (A1): ∃ i ≠ j, agents differ, c ∈ read_set_i ∩ write_set_j with
    read_time_i < write_time_j < write_time_i and read_values_i[c] ≠ write_values_j[c].

    Read-only operations count (``h[i]`` need not write); every intervening writer
    ``j`` is a witness (the ABA case has one per write)."""
    writers = _ByTime(h)
    found = []
    for i, reader in enumerate(h, 1):
        for cell in reader.read_set:
            for j in writers.between(cell, reader.read_time, reader.write_time):
                writer = h[j - 1]
                if j != i and writer.agent != reader.agent \
                        and not same(reader.read_value(cell), writer.write_value(cell)):
                    found.append(Stale(i, j, cell))
    return sorted(found, key=lambda w: (w.i, w.j, w.cell))


def phantom_tool(h: Sequence[OpRecord]) -> list[Phantom]:
    """Definition 2 (A2), membership only: planned_tool ≠ NULL, in read_registry, not in
    write_registry.  A tool removed and re-added before commit, a tool never seen at read
    and a signature change (the L4 model's extra disjunct) do not fire."""
    return [Phantom(i, record.planned_tool) for i, record in enumerate(h, 1)
            if record.planned_tool is not None and record.planned_tool in record.read_registry
            and record.planned_tool not in record.write_registry]


def causal_cascade(h: Sequence[OpRecord]) -> list[Cascade]:
    """Definition 3 (A3): ∃ j, p: ¬aborted_j ∧ p ∈ preds_j ∧ aborted_p.  ``preds`` is the
    closure at read time, so one level suffices; a position outside 1..|h| is ignored."""
    return [Cascade(j, p) for j, record in enumerate(h, 1) if not record.aborted
            for p in sorted(record.preds) if 1 <= p <= len(h) and h[p - 1].aborted]


def cascade_residue(h: Sequence[OpRecord]) -> list[Residue]:
    """The flat-trace residue of A3: ∃ j, c ∈ read_set_j: read_values_j[c] ≠ NULL and no
    k ≠ j wrote that value to c at or before j's read (write_time_k ≤ read_time_j).

    A sound over-approximation for histories without ``aborted``/``preds``: run it on
    ``flat_projection(h)``.  It also fires on a read of an initial value that no logged
    operation wrote (log cell initialisation as a write to avoid that)."""
    writers = _writers(h)
    found = []
    for j, reader in enumerate(h, 1):
        for cell in sorted(reader.read_set):
            value = reader.read_value(cell)
            if value is None:
                continue
            if not any(k != j and h[k - 1].write_time <= reader.read_time
                       and same(h[k - 1].write_value(cell), value)
                       for k in writers.get(cell, ())):
                found.append(Residue(j, cell))
    return found


def flat_projection(h: Sequence[OpRecord]) -> tuple[OpRecord, ...]:
    """What a black-box trace shows: aborted operations disappear (their writes were
    rolled back), and no record keeps ``aborted``/``preds``.  Times are kept (they
    are the log clock), so positions change but the order of times does not."""
    return tuple(attrs.evolve(record, aborted=False, preds=frozenset())
                 for record in h if not record.aborted)


def tool_effect_reordering(h: Sequence[OpRecord]) -> list[Reordering]:
    """Definition 4 (A6): |io| ≥ 2 ∧ co ≠ io ∧ co is a permutation of io (same
    entries, same multiplicities).  A co that lost or duplicated an effect is not a
    reordering."""
    found = []
    for i, record in enumerate(h, 1):
        io, co = record.io, record.co
        if len(io) >= 2 and len(io) == len(co):
            issued = [(cell, _key(value)) for cell, value in io]
            committed = [(cell, _key(value)) for cell, value in co]
            if issued != committed and Counter(issued) == Counter(committed):
                found.append(Reordering(i))
    return found


def lost_update(h: Sequence[OpRecord], final: Mapping[str, object] | None = None, *,
                same_agent: bool = False) -> list[LostUpdate]:
    """The supplementary L0 lost update (§3.6): ∃ k < m, c ∈ W_k ∩ W_m,
    write_time_k < write_time_m, ¬(c ∈ R_m ∧ read_time_m ≥ write_time_k) — m wrote c
    without having read k's write — and k's contribution is absent from the final
    value of c.  Unless ``same_agent``, also agent_k ≠ agent_m: an agent knows its own
    earlier write without reading it back (§3.6 literally: ``same_agent=True``).

    ``final`` maps a cell to its final value; a cell it does not hold takes the value
    of the write with the greatest write_time (last writer wins).  k's *contribution*
    to c is its written value, and it is present in the final value when:
    NULL (``None``) — always (a write of nothing loses nothing); a list — every item
    of it is an item of the final value, which must be a list (an additive channel);
    anything else — the final value equals it."""
    last: dict[str, OpRecord] = {}
    for record in h:
        for cell in record.write_set:
            if cell not in last or record.write_time >= last[cell].write_time:
                last[cell] = record
    writers = _ByTime(h)
    found = []
    for m, later in enumerate(h, 1):
        for cell in later.write_set:
            # k's write is after m's read of c (if any) and before m's write
            low = later.read_time if cell in later.read_set else None
            for k in writers.between(cell, low, later.write_time):
                earlier = h[k - 1]
                if k < m and (same_agent or earlier.agent != later.agent):
                    end = final[cell] if final is not None and cell in final \
                        else last[cell].write_value(cell)
                    if not _present(earlier.write_value(cell), end):
                        found.append(LostUpdate(k, m, cell))
    return sorted(found, key=lambda w: (w.k, w.m, w.cell))


def _present(contribution, end) -> bool:
    if contribution is None:
        return True
    if isinstance(contribution, (list, tuple)):
        return isinstance(end, (list, tuple)) and all(
            any(same(item, kept) for kept in end) for item in contribution)
    return same(contribution, end)


CATALOG: dict[str, Callable[..., list]] = {
    "stale_generation": stale_generation,
    "phantom_tool": phantom_tool,
    "causal_cascade": causal_cascade,
    "tool_effect_reordering": tool_effect_reordering,
    "lost_update": lost_update,
}
