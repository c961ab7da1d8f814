"""cpl.live against the definitions: what an agent decides is what the semantics says.

A random system (2–4 lifelines, 1–3 random guards over every operator, random
owners) and a random execution driven through the live API only: acts and
receives with random updates, sends whose tokens are delivered in any order
(some never: in transit), each received as a ``Token``, its text or its bytes,
and decisions at the owners.  The agents' logs are merged into a trace
(``cpl.trace.merge_logs``, as ``cpl merge`` does), read back by the trace
reader, and then:

* every ``decide`` equals the reference evaluator (``cpl.semantics``) at its
  choice event, and every ``holds`` the evaluator at the owner's latest event;
* the merged trace has exactly the events the agents took, its messages in
  transit are exactly the tokens never delivered, and ``cpl.monitor``'s
  offline re-check (what ``cpl eval`` runs) agrees with every recorded decision;
* all of it unsigned, with a ``secret``, and with per-lifeline keys (``KeyRing``).

One slower test runs the real commands (``cpl merge``, ``cpl eval``) on such logs.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile

from hypothesis import HealthCheck, given, settings, strategies as st

from cpl.lang import check
from cpl.live import AgentLogs, KeyRing, System
from cpl.monitor import decisions, evaluate_trace
from cpl.semantics import Evaluator
from cpl.trace import TraceWriter, load_trace, merge_logs
from cpl import to_text
from strategies import formulas

POOL = ("A", "B", "C", "D")
VARIABLES = ("x", "y", "z")
SYMBOLS = ("a", "b")  # bare words that are no declared variable: constants
VALUES = (0, 1, 2, 1.0, -1, "a", "b", True, False, None)
SIGNING = st.sampled_from([{}, {"secret": b"0123456789abcdef-secret"}, {"keys": True}])
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@functools.lru_cache(maxsize=None)
def _guards_over(lifelines: tuple[str, ...]):
    # One strategy per lifeline set: building a recursive strategy per example costs more
    # than the example.
    return formulas(lifelines, VARIABLES, symbols=SYMBOLS, max_leaves=8,
                    literals=st.sampled_from(VALUES)).map(to_text)


@st.composite
def systems(draw):
    lifelines = POOL[:draw(st.integers(2, 4))]
    count = draw(st.integers(1, 3))
    guards = {f"g{i}": (draw(st.sampled_from(lifelines)), draw(_guards_over(lifelines)))
              for i in range(count)}
    init = draw(st.dictionaries(st.sampled_from(lifelines), _updates(), max_size=2))
    signing = draw(SIGNING)
    if "keys" in signing:  # one process runs every agent here, so it holds every key
        signing = {"keys": KeyRing.generate(lifelines)}
    return System(lifelines, guards, VARIABLES, init=init, **signing)


def _updates():
    return st.dictionaries(st.sampled_from(VARIABLES), st.sampled_from(VALUES), max_size=2)


class Run:
    """One random execution through the live API, with what each call answered."""

    def __init__(self, system: System, folder: str):
        self.system = system
        self.agents = {name: system.agent(name, log=folder + os.sep)
                       for name in system.lifelines}
        self.pending = []  # tokens sent and not (yet) delivered
        self.decided = []  # (choice event id, label, value)
        self.held = []  # (latest event id, label, value)

    def step(self, data) -> None:
        kind = data.draw(st.sampled_from(("act", "send", "send", "recv", "recv", "decide")))
        who = self.agents[data.draw(st.sampled_from(self.system.lifelines))]
        if kind == "act":
            who.act(data.draw(st.sampled_from((None, "work"))), **data.draw(_updates()))
        elif kind == "send":
            to = data.draw(st.sampled_from([n for n in self.system.lifelines if n != who.lifeline]))
            self.pending.append(who.send(to, data.draw(st.sampled_from(("", "m")))))
        elif kind == "recv" and self.pending:
            token = self.pending.pop(data.draw(st.integers(0, len(self.pending) - 1)))
            form = data.draw(st.sampled_from(("token", "text", "bytes")))
            given_as = {"token": token, "text": token.text, "bytes": token.encode()}[form]
            self.agents[token.receiver].receive(given_as, **data.draw(_updates()))
        elif kind == "decide":
            label = data.draw(st.sampled_from(self.system.labels))
            owner = self.agents[self.system.owner(label)]
            value = owner.decide(label)
            self.decided.append((f"{owner.lifeline}.{owner.taken}", label, value))
        for label in self.system.labels:  # holds, at every owner that took an event
            owner = self.agents[self.system.owner(label)]
            if owner.taken:
                self.held.append((f"{owner.lifeline}.{owner.taken}", label, owner.holds(label)))

    def close(self) -> None:
        for agent in self.agents.values():
            agent.close()


def merged(folder: str, path: str):
    """The trace the agents' logs in ``folder`` merge into, read back by the trace reader."""
    logs = AgentLogs.collect([folder])
    header = logs.trace_header
    with TraceWriter.open(path, header["lifelines"], header["init"], header["vars"]) as writer:
        placed = merge_logs(logs.events(), logs.lifelines, writer.write)
        writer.close({**logs.meta(), **placed})
    return load_trace(path)


def drive(system: System, data, folder: str) -> Run:
    run = Run(system, folder)
    for _ in range(data.draw(st.integers(0, 30))):
        run.step(data)
    run.close()
    return run


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(systems(), st.data())
def test_live_values_equal_the_semantics_of_the_merged_trace(system, data):
    with tempfile.TemporaryDirectory() as folder:
        run = drive(system, data, os.path.join(folder, "logs"))
        trace = merged(os.path.join(folder, "logs"), os.path.join(folder, "trace.jsonl"))
    evaluator = Evaluator(trace)
    schema = trace.schema()
    formula = {label: check(system.guards[label][1].source, schema).formula
               for label in system.labels}

    def semantics(event_id, label):
        return evaluator.holds(formula[label], trace.index_of(event_id))

    for event_id, label, value in run.decided:
        assert value == semantics(event_id, label), f"decide {label} at {event_id}"
        event = trace.events[trace.index_of(event_id)]
        assert (event.kind, event.label, event.outcome) == ("choice", label, value)
        assert event.guard == system.guards[label][1].canonical
    for event_id, label, value in run.held:
        assert value == semantics(event_id, label), f"holds {label} at {event_id}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(systems(), st.data())
def test_the_merged_trace_is_the_run_and_re_checks(system, data):
    with tempfile.TemporaryDirectory() as folder:
        run = drive(system, data, os.path.join(folder, "logs"))
        trace = merged(os.path.join(folder, "logs"), os.path.join(folder, "trace.jsonl"))
    for name, agent in run.agents.items():  # no event lost, none doubled, ids in order
        assert [e.id for e in trace.events if e.lifeline == name] == \
            [f"{name}.{k}" for k in range(1, agent.taken + 1)]
    assert {e.msg for e in trace.in_transit()} == {t.msg for t in run.pending}
    assert sorted(trace.meta["in_transit"]) == sorted(t.msg for t in run.pending)
    assert trace.meta["status"] == "ok" and trace.meta["unplaced"] == 0
    checked = list(decisions(trace))
    assert len(checked) == len(run.decided)
    assert all(recorded == computed for _, recorded, computed in checked)
    for label in system.labels:  # evaluate_trace, per guard, at its owner's choices
        owner, guard = system.guards[label]
        values = dict((e.id, v) for e, v in evaluate_trace(trace, guard.canonical, owner))
        for event_id, decided_label, value in run.decided:
            if decided_label == label:
                assert values[event_id] == value


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(systems(), st.data())
def test_cpl_merge_and_cpl_eval_agree_with_every_decision(system, data):
    with tempfile.TemporaryDirectory() as folder:
        logs, trace = os.path.join(folder, "logs"), os.path.join(folder, "trace.jsonl")
        run = drive(system, data, logs)
        env = {**os.environ, "PYTHONPATH": ROOT}
        merge = subprocess.run([sys.executable, "-m", "cpl_cli", "merge", logs, "-o", trace],
                               capture_output=True, text=True, env=env, timeout=60)
        assert merge.returncode == 0, merge.stderr
        assert f"{len(run.pending):,} message" in merge.stdout
        lines = {}
        for engine in ("monitor", "reference"):  # cpl eval re-checks, both ways
            result = subprocess.run([sys.executable, "-m", "cpl_cli", "eval", trace,
                                     "--format", "jsonl", "--engine", engine],
                                    capture_output=True, text=True, env=env, timeout=60)
            assert result.returncode == 0, result.stdout + result.stderr
            lines[engine] = [json.loads(line) for line in result.stdout.splitlines()]
    for engine, rows in lines.items():
        assert sorted((r["event"], r["recorded"], r["value"]) for r in rows) == \
            sorted((event_id, value, value) for event_id, _, value in run.decided), engine
