"""Operation records from a recorded trace, and the catalog's detectors run on them.

The convention (docs/anomalies.md, "Records from a trace"; anomalies.md §1.3, §2.3).
Only the variables below are read, each from the event that assigns them or
from its lifeline's store after that event (its valuation); lifeline names do
not matter, so one lifeline may play several roles.

*Owner events* (a Store, a ``Cell_c``, a Registry): an event whose ``set``
assigns ``op`` —

* ``op = "serve"``: a read served to the agent named by ``op_agent``.  Each
  ``rd_<agent>_<cell>`` the event sets is a cell read, with the value served.
  The first serve after the agent's last ``commit_req`` or ``apply`` on this
  lifeline starts a read phase: ``read_time`` = the number of operations
  committed before it, ``read_registry`` = the tools ``t`` with
  ``has_<t> == true`` in the store.  Serve a read set in one event.
* ``op = "commit_req"``: the agent ``req_agent`` asked to commit; its read
  phase is over (a rejected request leaves no record: only applies commit).
* ``op = "apply"``: one operation commits, appended to the log ``h``.  Its
  ``agent`` is ``writer``; ``write_set`` the cells ``c`` whose ``w_<c>`` this
  event sets to ``true``, with ``write_values[c] = val_<c>``;
  ``write_registry`` the tools with ``has_<t> == true``; ``planned_tool`` the
  string ``req_tool`` (else NULL); its operation id ``p`` the one
  ``committed_<p>`` this event sets to ``true``; ``preds`` the committed
  operations ``q`` with ``req_dep_<q> == true``.
* ``op = "abort"``: informational (compensation); nothing is read from it.

*Aborts* (a Supervisor, or the Store's cascade): operation ``p`` is aborted when
any event of the trace sets ``aborted_<p>`` to ``true``.

*Effects* (a World or sink): an event that sets ``applied_op`` (a string: the
operation) and ``applied_idx`` (an integer: the effect's position in the
operation's issuance order) externalizes one effect, named by the ``applied``
it sets (else ``<op>#<idx>``).  ``co`` is the operation's effects in trace
order, ``io`` the same effects by index.  An operation no apply commits gets a
record of its own at its first externalization (agent = its id, no reads or
writes).

``h`` is ordered by the trace: times are 1-based positions in it.  A trace that
does not follow the convention gives fewer records or none — never an error.
"""

from __future__ import annotations

import bisect
from typing import Iterable

import attrs

from .detectors import CATALOG
from .records import MAX_NAME, OpRecord

OPS = ("serve", "commit_req", "apply", "abort")
DETECTORS = tuple(CATALOG)


@attrs.frozen
class History:
    """The log ``h`` of a trace, with what names each record: its operation id (or
    ``None``) and the id of the event that committed it."""
    records: tuple[OpRecord, ...]
    op_ids: tuple[str | None, ...]
    events: tuple[str, ...]

    def describe(self, position: int) -> str:
        """``h[position]`` for people: ``"#2 (op j1, agent a2, event Store.9)"``."""
        record = self.records[position - 1]
        op = self.op_ids[position - 1]
        named = f"op {op}, " if op is not None else ""
        return f"#{position} ({named}agent {record.agent}, event {self.events[position - 1]})"


@attrs.define
class _Phase:
    open: bool = False
    read_time: int = 0
    values: dict = attrs.Factory(dict)
    registry: frozenset = frozenset()


def _suffix(name, prefix: str) -> str | None:
    """``name`` without ``prefix``, if it has it and the rest is a name a record holds."""
    if isinstance(name, str) and name.startswith(prefix) \
            and 0 < len(name) - len(prefix) <= MAX_NAME:
        return name[len(prefix):]
    return None


def _true_suffixes(assigned, prefix: str) -> Iterable[str]:
    """Suffixes of the names with ``prefix`` assigned exactly ``true``."""
    for name, value in assigned.items():
        if value is True:
            rest = _suffix(name, prefix)
            if rest is not None:
                yield rest


def _tools(store, tools: set) -> frozenset:
    return frozenset(t for t in tools if store.get("has_" + t) is True)


def _string(value) -> str | None:
    """A name a record can hold (1 to ``MAX_NAME`` characters), or ``None``."""
    return value if isinstance(value, str) and 0 < len(value) <= MAX_NAME else None


def _has(names) -> set:
    return {t for t in (_suffix(name, "has_") for name in names) if t is not None}


@attrs.frozen
class _Commit:
    """One commit event as scanned: ``clock`` counts every commit before pruning."""
    clock: int
    event: str
    op: str | None
    fields: dict | None  # an apply's record fields; None for an operation's first effect
    deps: tuple = ()


def extract(trace) -> History:
    """The operation records of a ``cpl.trace.msc.Trace`` (or a stream read by
    ``cpl.trace.files.open_trace``, read once) under the convention above."""
    stores: dict[str, dict] = {name: dict(values) for name, values in trace.init.items()}
    tools: dict[str, set] = {name: _has(values) for name, values in stores.items()}
    phases: dict[tuple[str, str], _Phase] = {}
    aborted: set[str] = set()
    effects: dict[str, list] = {}
    commits: list[_Commit] = []
    events = trace.events if isinstance(trace.events, (tuple, list)) else trace.events()
    for event in events:
        assigned = event.set
        if not assigned:
            continue
        lifeline = event.lifeline
        store = stores.setdefault(lifeline, {})
        store.update(assigned)
        known = tools.setdefault(lifeline, set())
        known.update(_has(assigned))
        aborted.update(_true_suffixes(assigned, "aborted_"))
        op = assigned.get("op")
        if op == "serve":
            _serve(phases, lifeline, store, known, assigned, len(commits))
        elif op == "commit_req":
            requester = _string(store.get("req_agent"))
            phase = None if requester is None else phases.get((lifeline, requester))
            if phase is not None:
                phase.open = False
        elif op == "apply" and _string(store.get("writer")) is not None:
            commits.append(_apply(phases, lifeline, store, known, assigned, event.id,
                                  len(commits)))
        applied_op, index = _string(assigned.get("applied_op")), assigned.get("applied_idx")
        if applied_op is not None and type(index) is int:
            name = _string(assigned.get("applied")) or f"{applied_op}#{index}"
            if applied_op not in effects:
                effects[applied_op] = []
                commits.append(_Commit(len(commits), event.id, applied_op, None))
            effects[applied_op].append((name, index))
    return _log(commits, effects, aborted)


def _serve(phases, lifeline, store, known, assigned, clock) -> None:
    agent = _string(store.get("op_agent"))
    if agent is None:
        return
    phase = phases.setdefault((lifeline, agent), _Phase())
    if not phase.open:
        phase.open, phase.read_time, phase.values = True, clock, {}
        phase.registry = _tools(store, known)
    prefix = f"rd_{agent}_"
    for name, value in assigned.items():
        cell = _suffix(name, prefix)
        if cell is not None:
            phase.values[cell] = value


def _apply(phases, lifeline, store, known, assigned, event_id, clock) -> _Commit:
    agent = store["writer"]
    phase = phases.pop((lifeline, agent), None) or _Phase(read_time=clock)
    writes = sorted(set(_true_suffixes(assigned, "w_")))
    ids = sorted(set(_true_suffixes(assigned, "committed_")))
    fields = dict(
        agent=agent, read_set=phase.values.keys(), read_values=phase.values,
        read_registry=phase.registry, planned_tool=_string(store.get("req_tool")),
        read_time=phase.read_time, write_set=writes,
        write_values={cell: store.get("val_" + cell) for cell in writes},
        write_registry=_tools(store, known))
    deps = tuple(sorted(set(_true_suffixes(store, "req_dep_"))))
    return _Commit(clock, event_id, ids[0] if ids else None, fields, deps)


def _log(commits, effects, aborted) -> History:
    """Drop the first-effect entries of operations an apply commits, number the rest
    (1-based), recount read times over them, and resolve op ids to positions."""
    applied = {commit.op for commit in commits if commit.fields is not None}
    kept = [c for c in commits if c.fields is not None or c.op not in applied]
    clocks = [commit.clock for commit in kept]
    position_of: dict[str, int] = {}
    for position, commit in enumerate(kept, 1):
        if commit.op is not None:
            position_of.setdefault(commit.op, position)
    records = []
    for position, commit in enumerate(kept, 1):
        op = commit.op
        io, co = _orders(effects.get(op, ())) if op is not None else ((), ())
        if commit.fields is not None:
            read_time = bisect.bisect_left(clocks, commit.fields["read_time"])
            preds = {position_of[q] for q in commit.deps if q in position_of and q != op}
            record = OpRecord(**{**commit.fields, "read_time": read_time},
                              write_time=position, io=io, co=co, aborted=op in aborted,
                              preds=preds)
        else:
            record = OpRecord(agent=op, read_time=position - 1, write_time=position,
                              io=io, co=co, aborted=op in aborted)
        records.append(record)
    return History(tuple(records), tuple(c.op for c in kept), tuple(c.event for c in kept))


def _orders(effects) -> tuple[tuple, tuple]:
    committed = tuple((name, index) for name, index in effects)
    issued = tuple(sorted(committed, key=lambda entry: entry[1]))
    return issued, committed


def detect(trace) -> dict[str, list]:
    """Each catalog detector's witnesses on the trace's records (name → list; the anomaly
    occurred iff the list is non-empty).  Names are ``DETECTORS``; ``lost_update`` takes
    each cell's final value from its last write."""
    history = extract(trace).records
    return {name: detector(history) for name, detector in CATALOG.items()}


def detect_history(history) -> dict[str, list]:
    """``detect`` over a log of records given directly."""
    return {name: detector(history) for name, detector in CATALOG.items()}
