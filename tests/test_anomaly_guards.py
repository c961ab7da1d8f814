"""The guard library (cpl.anomalies.guards): every text checks, parameters are data, and
each guard has the value anomalies.md §6 says at each choice of the scenarios S1, S1b,
S1c, S5, S5b, S6, S7 (gather, issuer, sink), S10 and S11, built here as small
cpl-msc/1 traces whose choices record the spec's values — computed by the literal
semantics (cpl.semantics.reference), by the monitors (cpl.monitor.offline) and
re-checked by `cpl eval`.

``SCENARIOS`` (name → builder(guarded) → Trace) is shared with test_anomaly_extract.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import cpl
from cpl.semantics import reference
from cpl.anomalies import guards as G
from cpl.monitor.offline import evaluations
from cpl.trace.checker import parse_trace


class Chart:
    """A cpl-msc/1 document built event by event (events named ``Lifeline.N``); every
    variable a recorded guard reads is declared in ``vars``."""

    def __init__(self, lifelines, init=None):
        self.lifelines = list(lifelines)
        self.init = init or {}
        self.events: list[dict] = []
        self.names: dict[str, None] = {}
        self.counts: dict[str, int] = {}
        self.sent = 0
        for store in self.init.values():
            self.names.update(dict.fromkeys(store))

    def _event(self, lifeline, kind, **fields):
        self.counts[lifeline] = self.counts.get(lifeline, 0) + 1
        event = {"id": f"{lifeline}.{self.counts[lifeline]}", "lifeline": lifeline, "kind": kind}
        event.update({key: value for key, value in fields.items() if value is not None})
        if event.get("set"):
            self.names.update(dict.fromkeys(event["set"]))
        self.events.append(event)
        return event["id"]

    def act(self, lifeline, **assigned):
        return self._event(lifeline, "act", set=assigned, label="act")

    def send(self, sender, receiver, label="msg"):
        self.sent += 1
        msg = f"m{self.sent}"
        self._event(sender, "send", to=receiver, msg=msg, label=label)
        return msg

    def recv(self, lifeline, msg, **assigned):
        return self._event(lifeline, "recv", msg=msg, set=assigned or None)

    def message(self, sender, receiver, label="msg", **assigned):
        """A send received at once, the receive assigning ``assigned``."""
        return self.recv(receiver, self.send(sender, receiver, label), **assigned)

    def choice(self, lifeline, guard: G.Guard | str, outcome: bool, label: str):
        text = str(guard)
        self.names.update(dict.fromkeys(guard.variables() if isinstance(guard, G.Guard)
                                        else ()))
        return self._event(lifeline, "choice", guard=text, outcome=outcome, label=label)

    def document(self) -> dict:
        return {"format": "cpl-msc/1", "lifelines": self.lifelines, "vars": list(self.names),
                "init": self.init, "events": self.events}

    def trace(self):
        return parse_trace(json.loads(json.dumps(self.document())))


# ----------------------------------------------------------------- S1 family

AGENTS, CELL = ["a1", "a2"], ["c1"]


def _store_checks(chart, outcome: bool, label: str):
    for name, guard in (("G1_store", G.g1_store(CELL)), ("G1_dlog", G.g1_dlog(AGENTS, CELL)),
                        ("G1_val", G.g1_val(AGENTS, CELL))):
        chart.choice("Store", guard, outcome, f"{label} {name}")


def _serve(chart, agent, value, version):
    chart.message(agent, "Store", "read c1", op="serve", op_agent=agent,
                  **{f"rd_{agent}_c1": value, f"dlr_{agent}_c1": True, f"dlv_{agent}_c1": version})
    chart.message("Store", agent, "reply", reads_c1=True, rval_c1=value, rver_c1=version)


def _request(chart, agent, reads: bool, version, writes: bool, value):
    chart.message(agent, "Store", "commit", op="commit_req", req_agent=agent, req_reads_c1=reads,
                  req_rver_c1=version, req_writes_c1=writes, req_val_c1=value)


def _apply(chart, agent, writes: bool, value=None, version=None):
    fields = {"val_c1": value, "ver_c1": version} if writes else {}
    chart.act("Store", op="apply", writer=agent, w_c1=writes, **fields)
    chart.message("Store", agent, "ack")


def s1(guarded: bool = True, notified: bool = False, aba: bool = False):
    """S1 (the TLC witness), S1b (``notified``: the Store pushes an invalidation) and S1c
    (``aba``: a1 writes y then x back).  Unguarded: the Store's decision is ``true``."""
    first = "x" if aba else None
    chart = Chart(["a1", "a2", "Store"], {"Store": {"val_c1": first, "ver_c1": 0}})
    _serve(chart, "a2", first, 0)
    writes = [("y", 1), ("x", 2)] if aba else [("v1", 1)]
    for value, version in writes:
        _request(chart, "a1", False, None, True, value)
        _store_checks(chart, True, "a1 commit")
        _apply(chart, "a1", True, value, version)
    if notified:
        chart.message("Store", "a2", "invalidate c1")
    chart.choice("a2", G.g1_vis(CELL), not notified, "a2 before commit G1_vis")
    _request(chart, "a2", True, 0, False, None)
    if not guarded:
        chart.choice("Store", "true", True, "a2 commit (unguarded)")
        _apply(chart, "a2", False)
        return chart.trace()
    _store_checks(chart, False, "a2 commit")
    if aba:  # comparing only the latest value is unsound: x came back
        chart.choice("Store", "!(req_reads_c1 == true) || val_c1 == rd_a2_c1", True,
                     "a2 commit latest-value-only")
    chart.message("Store", "a2", "409")
    latest_value, latest_version = writes[-1]
    _serve(chart, "a2", latest_value, latest_version)
    chart.choice("a2", G.g1_vis(CELL), True, "a2 retry G1_vis")
    _request(chart, "a2", True, latest_version, False, None)
    _store_checks(chart, True, "a2 retry")
    _apply(chart, "a2", False)
    return chart.trace()


# ----------------------------------------------------------------- S5 family

TOOLS = ["t1", "t2"]


def s5(guarded: bool = True, signature: bool = False):
    """S5 (the TLC witness: t1 removed between plan and dispatch) and S5b (``signature``:
    t1's signature changes instead)."""
    chart = Chart(["a1", "Registry"], {"Registry": {
        "has_t1": True, "has_t2": True, "sig_t1": "s1", "sig_t2": "s2", "reg_ver": 0}})

    def list_tools(version):
        chart.message("a1", "Registry", "list tools", op="serve", op_agent="a1")
        chart.message("Registry", "a1", "tools", rreg_ver=version, saw_t2=True)

    def dispatch(tool, sig, outcome, catalog):
        chart.act("a1", planned=tool, pinned_sig=sig)
        chart.choice("a1", G.g2_vis(TOOLS), True, f"a1 dispatch {tool}? G2_vis")
        chart.choice("a1", G.g2_vis_ver(), True, f"a1 dispatch {tool}? G2_vis_ver")
        chart.message("a1", "Registry", "dispatch", op="commit_req", req_agent="a1",
                      req_tool=tool, req_sig=sig, req_saw_tool=True)
        chart.choice("Registry", G.g2_reg(TOOLS) if guarded else "true", outcome or not guarded,
                     f"dispatch {tool} G2_reg")
        chart.choice("Registry", G.g2_catalog_now(TOOLS), catalog, f"dispatch {tool} catalog-now")

    list_tools(0)
    chart.act("a1", saw_t1=True)
    chart.act("Registry", reg_ver=1, **({"sig_t1": "s1b"} if signature else {"has_t1": False}))
    dispatch("t1", "s1", False, not signature)
    if guarded:
        chart.message("Registry", "a1", "409")
        list_tools(1)
        dispatch("t2", "s2", True, False)
    chart.act("Registry", op="apply", writer="a1")
    return chart.trace()


# ----------------------------------------------------------------------- S6

def s6(guarded: bool = True):
    """S6: Planner commits p1, Executor reads it and commits j1, Sup then retracts p1;
    ``guarded`` is the L2 runtime (cascade), unguarded the L1-class baseline."""
    chart = Chart(["Planner", "Executor", "Store", "Sup"],
                  {"Store": {"val_plan": None, "ver_plan": 0, "val_result": None}})
    chart.message("Planner", "Store", "commit p1", op="commit_req", req_agent="Planner",
                  req_dep_p1=False)
    chart.choice("Store", G.g3_commit(["p1"]), True, "commit p1 G3_commit")
    chart.act("Store", op="apply", writer="Planner", w_plan=True, w_result=False, val_plan="v1",
              ver_plan=1, committed_p1=True)
    chart.message("Store", "Planner", "ack")
    chart.message("Executor", "Store", "read plan", op="serve", op_agent="Executor",
                  rd_Executor_plan="v1")
    chart.message("Store", "Executor", "plan (writer p1)", rval_plan="v1", dep_p1=True)
    chart.message("Executor", "Store", "commit j1", op="commit_req", req_agent="Executor",
                  req_dep_p1=True)
    chart.choice("Store", G.g3_commit(["p1"]), True, "commit j1 G3_commit")
    chart.act("Store", op="apply", writer="Executor", w_plan=False, w_result=True,
              val_result="r1", committed_j1=True, dep_j1_p1=True)
    chart.message("Store", "Executor", "ack")
    chart.choice("Executor", G.g3_ext(["p1"]), False, "email? G3_ext")
    chart.choice("Executor", G.g3_vis(["p1"]), True, "email? G3_vis (would leak)")
    chart.act("Sup", aborted_p1=True)
    chart.message("Sup", "Store", "abort p1", op="abort", aborted_p1=True, val_plan=None)
    chart.choice("Store", G.g3_cascade("j1", ["p1"]), True, "cascade to j1?")
    if guarded:
        chart.act("Store", aborted_j1=True)
        chart.message("Store", "Executor", "abort j1", status="aborted")
        chart.choice("Executor", G.g3_vis(["p1"]), False, "after cascade G3_vis")
        chart.choice("Executor", G.g3_ext(["p1"]), False, "after cascade G3_ext")
    return chart.trace()


# ----------------------------------------------------------------------- S7

def s7(mode: str):
    """S7: op1 issues effects #1 (c1) and #2 (c2); ``gather`` issues both at once and #2
    lands first; ``issuer`` waits for #1's ack; ``sink`` resequences at the World."""
    chart = Chart(["Agent", "Tool1", "Tool2", "World"])

    def land(tool, index, via_sink_guard=None):
        chart.message(tool, "World", f"op1#{index}", req_op="op1", req_idx=index)
        if via_sink_guard is not None:
            chart.choice("World", G.g6_sink("op1", 2), via_sink_guard, f"apply op1#{index}?")

    def apply(index, cell):
        chart.act("World", applied_op="op1", applied_idx=index, applied=cell)

    chart.choice("Agent", G.g6_issue("op1", 1), True, "issue #1?")
    if mode == "gather":
        chart.choice("Agent", G.g6_issue("op1", 2), False, "issue #2? (gather issues anyway)")
        first = chart.send("Agent", "Tool1", "call 1")
        second = chart.send("Agent", "Tool2", "call 2")
        chart.recv("Tool2", second)
        land("Tool2", 2)
        apply(2, "c2")
        chart.recv("Tool1", first)
        land("Tool1", 1)
        apply(1, "c1")
    elif mode == "issuer":
        chart.message("Agent", "Tool1", "call 1")
        land("Tool1", 1)
        apply(1, "c1")
        chart.message("World", "Agent", "ack op1#1")
        chart.choice("Agent", G.g6_issue("op1", 2), True, "issue #2?")
        chart.message("Agent", "Tool2", "call 2")
        land("Tool2", 2)
        apply(2, "c2")
    else:
        first = chart.send("Agent", "Tool1", "call 1")
        second = chart.send("Agent", "Tool2", "call 2")
        chart.recv("Tool2", second)
        land("Tool2", 2, via_sink_guard=False)  # buffered
        chart.recv("Tool1", first)
        land("Tool1", 1, via_sink_guard=True)
        apply(1, "c1")
        chart.act("World", req_op="op1", req_idx=2)  # the buffered request, dequeued
        chart.choice("World", G.g6_sink("op1", 2), True, "apply buffered op1#2?")
        apply(2, "c2")
    return chart.trace()


# ---------------------------------------------------------------------- S10

def s10(guarded: bool = True):
    """S10 (deer-flow #3123): the Reporter's blind ``todos = None`` clobbers the plan."""
    chart = Chart(["Planner", "Reporter", "Todos", "UI"],
                  {"Todos": {"val_todos": None, "ver_todos": 0}})

    def request(agent, value, base, outcome):
        chart.message(agent, "Todos", "update", op="commit_req", req_agent=agent,
                      req_val_todos=value, req_base_ver_todos=base)
        chart.choice("Todos", G.g_occ("todos"), outcome, f"{agent} G_occ")
        chart.choice("Todos", G.g_noclobber("todos"), outcome, f"{agent} G_noclobber")

    request("Planner", ["a", "b"], 0, True)
    chart.act("Todos", op="apply", writer="Planner", w_todos=True, val_todos=["a", "b"],
              ver_todos=1)
    chart.message("Todos", "UI", "stream", shown=["a", "b"])
    request("Reporter", None, None, False)
    if guarded:
        chart.message("Todos", "Reporter", "409")
    else:
        chart.act("Todos", op="apply", writer="Reporter", w_todos=True, val_todos=None,
                  ver_todos=2)
    return chart.trace()


# ---------------------------------------------------------------------- S11

def s11(guarded: bool = True):
    """S11: T2 (epoch 2) waits for the Orchestrator's frontier on order42 to reach 2."""
    chart = Chart(["T1", "T2", "Orch"], {"T2": {"epoch": 2}, "Orch": {"F_order42": 1}})
    gate = G.atomix_frontier(["order42"])
    chart.message("Orch", "T2", "frontier")
    chart.choice("T2", gate, False, "commit T2? (T1 not final)")
    chart.message("T1", "Orch", "T1 finalized")
    chart.act("Orch", F_order42=2)
    chart.message("Orch", "T2", "wake")
    chart.choice("T2", gate, True, "commit T2? (frontier advanced)")
    return chart.trace()


SCENARIOS = {
    "S1": s1, "S1b": lambda guarded=True: s1(guarded, notified=True),
    "S1c": lambda guarded=True: s1(guarded, aba=True),
    "S5": s5, "S5b": lambda guarded=True: s5(guarded, signature=True), "S6": s6,
    "S7_gather": lambda guarded=False: s7("gather"),
    "S7_issuer": lambda guarded=True: s7("issuer"), "S7_sink": lambda guarded=True: s7("sink"),
    "S10": s10, "S11": s11,
}
VARIANTS = [(name, guarded) for name in SCENARIOS for guarded in (True, False)
            if not name.startswith("S7")] + [("S7_gather", False), ("S7_issuer", True),
                                              ("S7_sink", True)]


def _choices(trace):
    return [(index, event) for index, event in enumerate(trace.events) if event.kind == "choice"]


@pytest.mark.parametrize("name,guarded", VARIANTS)
def test_every_guard_has_the_specified_value_by_the_literal_semantics(name, guarded):
    trace = SCENARIOS[name](guarded)
    checked = reference.recheck(trace)
    assert len(checked) == len(_choices(trace)) > 0
    wrong = [(event.label, recorded, value) for event, recorded, value in checked
             if recorded != value]
    assert not wrong


@pytest.mark.parametrize("name,guarded", VARIANTS)
def test_every_guard_has_the_specified_value_by_the_monitor(name, guarded):
    trace = SCENARIOS[name](guarded)
    for _, event in _choices(trace):
        values = dict((e.id, value) for e, value in evaluations(trace, event.guard, event.lifeline))
        assert values[event.id] is event.outcome, event.label


def test_cpl_eval_rechecks_every_recorded_decision(tmp_path):
    for name, guarded in VARIANTS:
        trace = SCENARIOS[name](guarded)
        path = tmp_path / f"{name}-{guarded}.json"
        path.write_text(json.dumps(trace.to_dict()))
        result = subprocess.run([sys.executable, "-m", "cpl_cli", "eval", str(path)],
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, (name, guarded, result.stdout + result.stderr)
        assert result.stdout.splitlines()[-1] == (
            f"{len(_choices(trace))} decisions re-checked: all agree"), (name, guarded)


def _outcome(trace, label):
    found = [event.outcome for event in trace.events if event.label == label]
    assert len(found) == 1, label
    return found[0]


def test_the_spec_verdicts_are_the_recorded_ones():
    """The headline values of §6, spelled out (the tests above check they are computed)."""
    s1_trace = s1()
    assert _outcome(s1_trace, "a2 before commit G1_vis") is True  # the write is invisible
    assert _outcome(s1_trace, "a2 commit G1_store") is False
    assert _outcome(s1_trace, "a2 commit G1_val") is False
    assert _outcome(s1(notified=True), "a2 before commit G1_vis") is False  # S1b early abort
    aba = s1(aba=True)
    assert _outcome(aba, "a2 commit latest-value-only") is True  # unsound under ABA
    assert _outcome(aba, "a2 commit G1_val") is False
    assert _outcome(s5(), "dispatch t1 G2_reg") is False
    assert _outcome(s5(), "dispatch t1 catalog-now") is True
    assert _outcome(s5(signature=True), "dispatch t1 catalog-now") is False  # Def. 2 silent
    assert _outcome(s6(), "email? G3_ext") is False
    assert _outcome(s6(), "email? G3_vis (would leak)") is True
    assert _outcome(s7("gather"), "issue #2? (gather issues anyway)") is False
    assert _outcome(s7("sink"), "apply op1#2?") is False


# ------------------------------------------------------------ the library itself

EXAMPLES = [
    G.g1_store(["c1", "c2"]), G.g1_dlog(AGENTS, ["c1", "c2"]), G.g1_val(AGENTS, ["c1", "c2"]),
    G.g1_lock_grant("c1"), G.g1_lock("c1", "a2"), G.g1_vis(["c1", "c2"], store="Cell_c1"),
    G.g2_reg(TOOLS), G.g2_catalog_now(TOOLS), G.g2_pin("t1"), G.g2_vis(TOOLS), G.g2_vis_ver(),
    G.g3_commit(["p1", "p2"]), G.g3_cascade("q", ["p1", "p2"]), G.g3_ext(["p1", "p2"]),
    G.g3_vis(["p1"]), G.g6_issue("op1", 1), G.g6_issue("op1", 3),
    G.g6_issue_after("create_database"), G.g6_sink("op1", 5), G.g6_sink_counter("op1"),
    G.g6_seq(2), G.g6_seq(2, op="op1"), G.g_occ(), G.g_occ("todos"),
    G.g_noclobber("todos", request="req_todos", current="todos"),
    G.atomix_frontier(["order42", "stock"]),
]


@pytest.mark.parametrize("guard", EXAMPLES, ids=lambda g: g.text[:40])
def test_every_text_checks_and_says_its_pattern(guard):
    checked = cpl.check(guard.text)
    assert cpl.check(checked.canonical).formula == checked.formula
    assert guard.pattern in G.PATTERNS and guard.owner and guard.note
    if guard.pattern == G.VISIBLE:
        assert "NOT prevention" in guard.pattern


def test_every_library_function_has_a_docstring_and_is_listed():
    assert len(G.LIBRARY) == len(set(G.LIBRARY.values()))
    for function in G.LIBRARY.values():
        assert function.__doc__


def test_texts_are_the_specs():
    """Where anomalies.md writes the text out, the library gives exactly that."""
    assert G.g1_store(["c1"]).text == "!(req_reads_c1 == true) || req_rver_c1 == ver_c1"
    assert G.g1_vis(["c1"]).text == "!(reads_c1 == true) || @Store.ver_c1 == rver_c1"
    assert G.g1_lock_grant("c1").text == "!(holder_c1 != null)"
    assert G.g1_lock("c1", "a2").text == '@Store.holder_c1 == "a2"'
    assert G.g2_reg(TOOLS).text == ('req_tool == "t1" && has_t1 == true && sig_t1 == req_sig || '
                                    'req_tool == "t2" && has_t2 == true && sig_t2 == req_sig')
    assert G.g2_pin("t1").text == "pins_t1 == 0"
    assert G.g2_vis_ver().text == "@Registry.reg_ver == rreg_ver"
    assert G.g3_commit(["p1"]).text == ("!(req_dep_p1 == true) || committed_p1 == true && "
                                        "!(aborted_p1 == true)")
    assert G.g3_ext(["p1"]).text == "!(dep_p1 == true) || @Sup.final_p1 == true"
    assert G.g6_issue("op1", 2).text == 'P @World(applied_op == "op1" && applied_idx == 1)'
    assert G.g6_seq(2).text == "completed_2 == true && next_rel == 2"
    assert G.g_occ().text == "req_base_ver == ver"
    assert G.g_noclobber("todos", request="req_todos", current="todos").text == \
        "!(req_todos == null) || todos == null"
    assert G.atomix_frontier(["order42"]).text == "@Orch.F_order42 >= epoch"
    assert G.g1_val(["a1"], ["c1"]).variables() == (
        "op", "op_agent", "rd_a1_c1", "req_agent", "req_reads_c1", "val_c1", "w_c1", "writer")


@pytest.mark.parametrize("call", [
    lambda: G.g1_store([]), lambda: G.g1_store("c1"), lambda: G.g1_store(["c1", "c1"]),
    lambda: G.g1_store(['c1") || true || ("']), lambda: G.g1_store(["c 1"]),
    lambda: G.g1_store([1]), lambda: G.g1_store(["x" * 101]), lambda: G.g1_store(None),
    lambda: G.g1_vis(["c1"], store="S"), lambda: G.g1_vis(["c1"], store="1Store"),
    lambda: G.g1_vis(["c1"], store="Store.x"), lambda: G.g1_lock("c1", 'a"2'),
    lambda: G.g1_val(["a_b", "a"], ["c", "b_c"]), lambda: G.g6_issue("op1", 0),
    lambda: G.g6_issue("op1", True), lambda: G.g6_sink("op1", "2"),
    lambda: G.g_occ(request="not a name"), lambda: G.g6_issue_after(["x"]),
    lambda: G.atomix_frontier(["order42"], epoch="since"),
    lambda: G.g2_reg(["t"] * 2000),
])
def test_parameters_are_validated_not_pasted(call):
    with pytest.raises(ValueError):
        call()


def test_string_constants_are_quoted_by_the_printer():
    """A name that is only a constant may hold anything: it is printed, not pasted."""
    guard = G.g6_issue_after('db "prod"\n|| true')
    assert guard.text == 'P @World(applied == "db \\"prod\\"\\n|| true")'
    assert cpl.check(guard.text).formula.body.body.right.value == 'db "prod"\n|| true'
