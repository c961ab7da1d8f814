"""Bytes of metadata per message, ``len(metadata.encode())``, on the mixed workload.

Baseline, computed from the same messages: a naive JSON encoding of the full
vector clock and *every* subformula's truth value at every lifeline (what the
unpruned monitor knows), as compact JSON arrays — no pruning, no bitmasks.

Growth: five more Committer guards over Committer-local variables leave every
message byte-for-byte the same size; five that read Orchestrator add
Orchestrator's entries, which every lifeline relays (causal propagation), but
nothing about the other senders themselves.
"""

from __future__ import annotations

import json
from functools import partial

import workloads as w
from cpl.lang import UNSET
from timing import Row, median

row = partial(Row, "metadata_size")  # every row of this file is under its name

LOCAL_EXTRA = ("candidate == c1", "Y candidate != c2", "O candidate == c3",
               "H candidate != c1", "candidate == c2 S candidate == c3")
ORCHESTRATOR_EXTRA = ("@Orchestrator.candidate == candidate", "@Orchestrator(candidate == c1)",
                      "@Orchestrator(Y candidate == c2)",
                      "@Orchestrator(candidate == c1 S candidate == c2)",
                      "@Orchestrator.candidate == c3")


def messages(trace, guards, prune: bool = True):
    """[(sender, Metadata)] for every send, and the Program: the trace run through fresh
    monitors."""
    program, _ = w.compile_program([("Committer", g) for g in guards], trace.lifelines,
                                   w.PAPER_VARS, prune)
    monitors, _ = w.monitor_handlers(program, trace.lifelines)
    in_flight, sent = {}, []
    for event in trace.events:
        monitor = monitors[event.lifeline]
        if event.kind == "send":
            in_flight[event.msg] = metadata = monitor.send()
            sent.append((event.lifeline, metadata))
        elif event.kind == "recv":
            monitor.receive(in_flight.pop(event.msg), dict(event.set) or None)
        elif event.kind == "act":
            monitor.act(dict(event.set))
        else:
            monitor.choice()
    return sent, program


def naive_json(metadata, program) -> bytes:
    """Full clock, every subformula's bit per lifeline, every variable: compact JSON."""
    views = [[(mask >> k) & 1 for k in range(len(exports.formulas))]
             for mask, exports in zip(metadata.views, program.exports)]
    variables = [[None if v is UNSET else v for v in values] for values in metadata.vars]
    return json.dumps({"vc": list(metadata.vc), "views": views, "vars": variables},
                      separators=(",", ":")).encode()


def sizes(trace, guards) -> dict[str, list[int]]:
    sent, _ = messages(trace, guards)
    by_sender: dict[str, list[int]] = {name: [] for name in trace.lifelines}
    for sender, metadata in sent:
        by_sender[sender].append(len(metadata.encode()))
    return by_sender


def run(quick: bool = False) -> list[Row]:
    n = 5_000 if quick else 100_000
    trace = w.mixed_trace(n)
    sent, _ = messages(trace, [w.GUARD_FULL])
    encoded = [len(metadata.encode()) for _, metadata in sent]
    unpruned, program = messages(trace, [w.GUARD_FULL], prune=False)
    naive = [len(naive_json(metadata, program)) for _, metadata in unpruned]
    rows = [
        row(f"metadata bytes/message, full guard, median ({len(encoded):,} msgs)",
            median(encoded), "B", encoded, baseline="naive JSON: full vc + all subformula views",
            baseline_value=median(naive), target="≤ 140", met=median(encoded) <= 140),
        row("metadata bytes/message, full guard, max", max(encoded), "B",
            baseline="naive JSON, max", baseline_value=max(naive), target="≤ 140",
            met=max(encoded) <= 140),
    ]
    base = sizes(trace, [w.GUARD_FULL])
    for label, extra in (("+5 Committer-local guards", LOCAL_EXTRA),
                         ("+5 guards reading Orchestrator", ORCHESTRATOR_EXTRA)):
        more = sizes(trace, [w.GUARD_FULL, *extra])
        for sender in ("TestRunner", "Orchestrator"):
            same = more[sender] == base[sender]
            rows.append(row(
                f"{sender}'s messages, {label}, max", max(more[sender]), "B",
                baseline="full guard alone, max", baseline_value=max(base[sender]),
                note="every message the same size as with the full guard alone" if same else ""))
            if not same:
                grew = max(b - a for a, b in zip(base[sender], more[sender]))
                rows[-1].note = (f"grew by at most {grew} B: Orchestrator's view entries, which "
                                 f"every lifeline relays")
    return rows
