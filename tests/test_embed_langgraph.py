"""The LangGraph adapter on real graphs: both examples end to end (their merged logs
re-check), a Send fan-out whose tasks provably do not see each other, and hostile
tokens in state that are refused without crashing the graph or moving a guard."""

import asyncio
import contextlib
import io
import json
import operator
import random
import sys
from pathlib import Path
from typing import Annotated, TypedDict

import pytest

pytest.importorskip("langgraph", reason="langgraph is not installed "
                    "(pip install 'causal-guards[langgraph]')")

from langchain_core.messages import ToolMessage  # noqa: E402
from langgraph.graph import END, START, StateGraph  # noqa: E402

from causal_guards.langgraph import (GraphGuards, Tokens, family, family_guards,  # noqa: E402
                                     member_label, merge_tokens)
from cpl.live import KeyRing, System, refusals_of  # noqa: E402
from cpl_cli import main as cli_main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "embedding"))

import langgraph_review  # noqa: E402
import langgraph_tools  # noqa: E402


def cpl(*args: str) -> tuple[int, str]:
    """``cpl ARGS`` in this process (a subprocess per call costs seconds here): its exit
    status and what it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli_main(list(args))
    return status, out.getvalue() + err.getvalue()


def merged_and_rechecked(logs: Path, tmp_path: Path) -> str:
    """Merge the agents' logs and re-check every decision: -> eval's output."""
    trace = tmp_path / "trace.jsonl"
    status, said = cpl("merge", str(logs), "-o", str(trace))
    assert status == 0, said
    status, said = cpl("eval", str(trace))
    assert status == 0 and "all agree" in said, said
    return said


def events(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_review_refuses_the_merge_of_a_failing_candidate_and_merges_a_passing_one(tmp_path):
    logs = tmp_path / "logs"
    assert langgraph_review.main(["--logs", str(logs)]) == {"c1": "rejected", "c2": "merged"}
    assert sorted(p.name for p in logs.iterdir()) == sorted(
        f"{name}.jsonl" for name in langgraph_review.LIFELINES)
    assert "2 decisions re-checked" in merged_and_rechecked(logs, tmp_path)
    status, said = cpl("render", str(tmp_path / "trace.jsonl"), "-o", str(tmp_path / "review.svg"))
    assert status == 0, said
    assert (tmp_path / "review.svg").read_text().lstrip().startswith("<")


def test_tools_refuses_a_write_issued_with_its_create_and_runs_it_next_turn(tmp_path):
    logs = tmp_path / "logs"
    disk = langgraph_tools.Disk()
    with GraphGuards(langgraph_tools.system(), log=str(logs)) as guards:
        state = langgraph_tools.build(disk, guards).invoke({"messages": [("user", "save")]})
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [(m.name, m.status) for m in results] == [
        ("create_file", "success"), ("write_file", "error"), ("write_file", "success")]
    assert "refused by guard 'write_file [tool_1]'" in results[1].content
    assert disk.files == {"notes.txt": "hello"}
    assert disk.effects == ["create notes.txt", "write notes.txt"]
    assert "2 decisions re-checked" in merged_and_rechecked(logs, tmp_path)


def test_tools_example_runs_from_its_command_line(tmp_path):
    outcome = langgraph_tools.main(["--logs", str(tmp_path / "logs")])
    assert outcome["guarded"] == "hello"
    merged_and_rechecked(tmp_path / "logs", tmp_path)


def test_a_rerun_into_the_same_logs_stops_on_one_line_unless_overwrite(tmp_path, capsys):
    logs = tmp_path / "logs"
    langgraph_review.main(["--logs", str(logs)])
    first = {log.name: log.read_bytes() for log in logs.iterdir()}
    capsys.readouterr()
    with pytest.raises(SystemExit) as stopped:
        langgraph_review.main(["--logs", str(logs)])
    said = capsys.readouterr()
    assert stopped.value.code == 2 and said.out == ""
    assert said.err.endswith(f": {logs}/Author.jsonl exists already: give --overwrite to "
                             f"replace it\n") and said.err.count("\n") == 1, said.err
    assert {log.name: log.read_bytes() for log in logs.iterdir()} == first  # none touched
    assert langgraph_review.main(["--logs", str(logs), "--overwrite"]) == {
        "c1": "rejected", "c2": "merged"}
    assert "2 decisions re-checked" in merged_and_rechecked(logs, tmp_path)  # not 4


WORKERS = family("worker", 3)


class Fan(TypedDict, total=False):
    items: list
    reports: Annotated[list, operator.add]
    cpl: Tokens


def alone(member: str) -> str:
    """At a worker: no sibling's event is visible (tasks of one superstep are concurrent)."""
    return " && ".join(f"!Seen({other})" for other in WORKERS if other != member)


def fan_out_system() -> System:
    guards = family_guards("alone", WORKERS, alone)
    guards["all done"] = ("Sink", " && ".join(f"@{w}.done" for w in WORKERS))
    return System(["Planner", *WORKERS, "Sink"], guards, variables=["done"])


def fan_out_graph(guards: GraphGuards):
    def plan(state: Fan) -> dict:
        return {"items": [1, 2, 3]}

    def work(payload: dict, agent, lifeline: str) -> dict:
        agent.act(done=True)
        return {"reports": [(lifeline, agent.decide(member_label("alone", lifeline)))]}

    def sink(state: Fan) -> dict:
        return {}

    g = StateGraph(Fan)
    g.add_node("plan", guards.node("Planner", plan))
    g.add_node("worker", guards.tasks("worker", work, to=["Sink"]))
    g.add_node("sink", guards.node("Sink", sink))
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", lambda state: guards.fan_out(
        "Planner", "worker", [{"item": i} for i in state["items"]]), ["worker"])
    g.add_edge("worker", "sink")
    g.add_conditional_edges("sink", guards.route("all done", END, "plan"), [END, "plan"])
    return g.compile()


def test_send_fan_out_tasks_are_concurrent_lifelines(tmp_path):
    logs = tmp_path / "logs"
    with GraphGuards(fan_out_system(), log=str(logs)) as guards:
        state = fan_out_graph(guards).invoke({})
        assert guards.agent("Sink").holds("all done")
    # each task decided it saw no sibling, and the sink saw all three: no task was lost
    assert sorted(state["reports"]) == [(w, True) for w in WORKERS]
    assert "4 decisions re-checked" in merged_and_rechecked(logs, tmp_path)


# -- hostile tokens ----------------------------------------------------------------------

class Chain(TypedDict, total=False):
    status: str
    verdict: str
    cpl: Tokens


def chain_system(guard: str = "@Tester(status == passed)", **signing):
    return System(["Tester", "Committer"], {"merge": ("Committer", guard)},
                  variables=["status"], **signing)


def chain_graph(guards: GraphGuards, *, with_tester: bool = True):
    """Tester -> Committer -> merge?; without the tester, the Committer alone."""
    g = StateGraph(Chain)
    g.add_node("committer", guards.node("Committer", lambda s: {}))
    g.add_node("merge", lambda s: {"verdict": "merged"})
    g.add_node("reject", lambda s: {"verdict": "rejected"})
    if with_tester:
        g.add_node("tester", guards.node("Tester", lambda s: {"status": "passed"},
                                         to=["Committer"]))
        g.add_edge(START, "tester")
        g.add_edge("tester", "committer")
    else:
        g.add_edge(START, "committer")
    g.add_conditional_edges("committer", guards.route("merge", "merge", "reject"),
                            ["merge", "reject"])
    return g.compile()


def refusals(log: Path) -> list[str]:
    """Every refusal the log counts, one entry per refused token."""
    counted = (refusals_of(str(e.get("label", ""))) for e in events(log))
    return [reason for found in counted if found for reason in [found[0]] * found[1]]


def test_hostile_tokens_in_state_are_refused_and_move_nothing(tmp_path):
    logs = tmp_path / "logs"
    with GraphGuards(chain_system(), log=str(logs)) as guards:
        updates = list(chain_graph(guards).stream({}, stream_mode="updates"))
        genuine = next(u["tester"]["cpl"]["Committer"] for u in updates if "tester" in u)
        genuine = next(iter(genuine.values()))
        committer = guards.agent("Committer")
        assert committer.holds("merge")

        def knowledge() -> tuple:
            """What the Committer knows: its store and how much of the Tester it saw."""
            return dict(committer.monitor.store), committer.seen.get("Tester")

        before = knowledge()
        # a token of another system whose Tester failed: accepted, it would flip the guard
        with System(["Tester", "Committer"], {"merge": ("Committer", "true")},
                    variables=["status"]).agent("Tester") as stranger:
            stranger.act(status="failed")
            foreign = stranger.send("Committer").text
        rng = random.Random(17)
        hostile = {
            "random": "".join(chr(rng.randrange(33, 127)) for _ in range(80)),
            "bytes": bytes(rng.randrange(256) for _ in range(64)),
            "truncated": genuine[:len(genuine) // 2],
            "oversized": "A" * 100_000,
            "foreign": foreign,
            "replayed": genuine,
            "number": 42,
        }
        alone = chain_graph(guards, with_tester=False)
        assert alone.invoke({"cpl": {"Committer": hostile}})["verdict"] == "merged"
        assert committer.holds("merge") and knowledge() == before
        # a shape no receiver can be found for is refused by the next node that runs
        assert alone.invoke({"cpl": ["junk", 3]})["verdict"] == "merged"
        assert knowledge() == before
    refused = refusals(logs / "Committer.jsonl")
    assert len(refused) == len(hostile) + 1
    assert {"malformed", "oversized", "foreign", "replayed"} <= set(refused)
    assert "3 decisions re-checked" in merged_and_rechecked(logs, tmp_path)


def hostile_value(rng: random.Random, depth: int = 0):
    """Any shape a state value can take: nested containers of text, bytes, numbers."""
    kind = rng.randrange(7 if depth < 2 else 4)
    if kind == 0:
        return "".join(chr(rng.randrange(1, 0x3000)) for _ in range(rng.randrange(40)))
    if kind == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(40)))
    if kind == 2:
        return rng.choice([None, 0, -1, 2 ** 70, 1.5, True])
    if kind == 3:
        return "cpl1." + "".join(rng.choice("ABCdef0123-_") for _ in range(rng.randrange(120)))
    if kind == 4:
        return [hostile_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = ["Committer", "Tester", "?", 7, None, "x"]
    return {rng.choice(keys): hostile_value(rng, depth + 1) for _ in range(rng.randrange(4))}


@pytest.mark.parametrize("signing", ["secret", "keys"])
def test_fuzzed_channels_and_mutated_signed_tokens_never_move_the_committer(tmp_path, signing):
    """Signed tokens (a shared secret, or per-lifeline keys: the graph's process runs both
    lifelines, so it holds both keys): any change to a genuine one is refused (forged,
    malformed or replayed); random shapes in the channel are refused; the graph always
    finishes."""
    logs = tmp_path / "logs"
    options = {"secret": bytes(range(32))} if signing == "secret" else \
        {"keys": KeyRing.generate(["Tester", "Committer"])}
    with GraphGuards(chain_system(**options), log=str(logs)) as guards:
        updates = list(chain_graph(guards).stream({}, stream_mode="updates"))
        genuine = next(iter(next(u["tester"]["cpl"]["Committer"] for u in updates
                                 if "tester" in u).values()))
        committer = guards.agent("Committer")
        before = dict(committer.monitor.store), committer.seen.get("Tester")
        alone = chain_graph(guards, with_tester=False)
        rng = random.Random(1117)
        for _ in range(40):
            at = rng.randrange(len("cpl1."), len(genuine))
            flipped = genuine[:at] + rng.choice(
                [c for c in "ABCDEFabcdef0123456789-_" if c != genuine[at]]) + genuine[at + 1:]
            channel = {"Committer": {"mutated": flipped}, "?": hostile_value(rng)}
            assert alone.invoke({"cpl": channel})["verdict"] == "merged"
            assert alone.invoke({"cpl": hostile_value(rng)})["verdict"] == "merged"
            assert (dict(committer.monitor.store), committer.seen.get("Tester")) == before
    merged_and_rechecked(logs, tmp_path)


def test_a_hostile_token_at_a_tool_call_is_refused_and_the_tool_still_runs(tmp_path):
    logs = tmp_path / "logs"
    disk = langgraph_tools.Disk()
    with GraphGuards(langgraph_tools.system(), log=str(logs)) as guards:
        state = langgraph_tools.build(disk, guards).invoke(
            {"messages": [("user", "save")], "cpl": {"tool_0": {"x": "garbage"}}})
    assert disk.files == {"notes.txt": "hello"}
    assert [m.status for m in state["messages"] if isinstance(m, ToolMessage)] == [
        "success", "error", "success"]
    assert len(refusals(logs / "tool_0.jsonl")) == 1
    merged_and_rechecked(logs, tmp_path)


def test_the_reducer_files_any_shape_under_a_receiver_and_never_raises():
    assert merge_tokens({}, {"A": {"m1": "t1"}}) == {"A": {"m1": "t1"}}
    assert merge_tokens({"A": {"m1": "t1"}}, {"A": {"m1": None}, "B": {"m2": "t2"}}) == {
        "B": {"m2": "t2"}}
    for junk in ("text", 7, [1, None], {3: "x"}, {"A": "bare"}, {"A": [b"x"]}, object()):
        merged = merge_tokens("not a dict", junk)
        assert all(isinstance(k, str) for bucket in merged.values() for k in bucket)


def test_async_nodes_and_a_checkpointer_carry_the_tokens(tmp_path):
    """Async node functions are wrapped alike; a checkpointer stores the token channel
    (plain text) and a second run on the same thread goes on from it."""
    from langgraph.checkpoint.memory import InMemorySaver

    async def test(state: Chain) -> dict:
        return {"status": state.get("verdict") and "failed" or "passed"}

    logs = tmp_path / "logs"
    with GraphGuards(chain_system(), log=str(logs)) as guards:
        g = StateGraph(Chain)
        g.add_node("tester", guards.node("Tester", test, to=["Committer"]))
        g.add_node("committer", guards.node("Committer", lambda s: {}))
        g.add_node("merge", lambda s: {"verdict": "merged"})
        g.add_node("reject", lambda s: {"verdict": "rejected"})
        g.add_edge(START, "tester")
        g.add_edge("tester", "committer")
        g.add_conditional_edges("committer", guards.route("merge", "merge", "reject"),
                                ["merge", "reject"])
        graph = g.compile(checkpointer=InMemorySaver())
        thread = {"configurable": {"thread_id": "review"}}
        verdicts = [asyncio.run(graph.ainvoke({}, thread))["verdict"] for _ in range(2)]
        assert graph.get_state(thread).values["cpl"] == {}  # every token was consumed
    assert verdicts == ["merged", "rejected"]
    assert "2 decisions re-checked" in merged_and_rechecked(logs, tmp_path)


# -- fan-outs larger than one node run takes ---------------------------------------------

def wide_fan_out(guards: GraphGuards, n: int, *, drain: bool):
    """Planner -> n worker tasks -> Sink, which decides whether all n are done: END, or
    plan again. With ``drain`` the sink first runs again while tokens for it wait."""
    def plan(state: Fan) -> dict:
        return {"items": list(range(n))}

    def work(payload: dict, agent) -> dict:
        agent.act(done=True)
        return {"reports": [agent.lifeline]}

    decide = guards.route("all done", END, "plan")
    g = StateGraph(Fan)
    g.add_node("plan", guards.node("Planner", plan))
    g.add_node("worker", guards.tasks("worker", work, to=["Sink"]))
    g.add_node("sink", guards.node("Sink", lambda state: {}))
    g.add_edge(START, "plan")
    g.add_conditional_edges("plan", lambda state: guards.fan_out(
        "Planner", "worker", [{"item": i} for i in state["items"]]), ["worker"])
    g.add_edge("worker", "sink")
    g.add_conditional_edges("sink", guards.until_taken("Sink", "sink", decide) if drain
                            else decide, [END, "plan", "sink"])
    return g.compile()


def wide_system(n: int, every: int = 1) -> System:
    """The sink's guard names every ``every``-th worker and the last (a guard naming 200
    lifelines takes seconds to compile, twice: here and in ``cpl eval``)."""
    workers = family("worker", n)
    watched = sorted({*workers[::every], workers[-1]}, key=workers.index)
    return System(["Planner", *workers, "Sink"],
                  {"all done": ("Sink", " && ".join(f"@{w}.done" for w in watched))},
                  variables=["done"])


def received(log: Path) -> list[dict]:
    return [e for e in events(log) if e.get("kind") == "recv"]


def test_a_fan_out_of_65_into_a_sink_taking_64_a_run_ends_and_loses_no_token(tmp_path):
    """The 65th token waits in the state for the sink's next run (it was deleted unread,
    and the sink's guard never held: the graph looped to its recursion limit)."""
    logs = tmp_path / "logs"
    with GraphGuards(wide_system(65), log=str(logs)) as guards:
        state = wide_fan_out(guards, 65, drain=False).invoke({}, {"recursion_limit": 40})
        assert guards.agent("Sink").holds("all done")
    sent = 2 * 65  # the sink saw 64 of the first fan-out: plan again, a second one
    assert len(state["reports"]) == sent
    waiting = len(state["cpl"].get("Sink", {}))
    assert len(received(logs / "Sink.jsonl")) == 2 * 64 and waiting == sent - 2 * 64
    assert refusals(logs / "Sink.jsonl") == []
    assert "2 decisions re-checked: all agree" in merged_and_rechecked(logs, tmp_path)


def test_a_fan_out_of_200_is_taken_whole_by_a_sink_routed_back_until_taken(tmp_path):
    logs = tmp_path / "logs"
    workers = family("worker", 200)
    with GraphGuards(wide_system(200, every=8), log=str(logs)) as guards:
        state = wide_fan_out(guards, 200, drain=True).invoke({}, {"recursion_limit": 40})
        assert guards.agent("Sink").holds("all done")
    assert sorted(state["reports"]) == sorted(workers)  # one fan-out, no second round
    assert state["cpl"] == {}  # every token taken
    senders = [e["msg"].rsplit(":", 1)[0] for e in received(logs / "Sink.jsonl")]
    assert sorted(senders) == sorted(workers)
    assert refusals(logs / "Sink.jsonl") == []
    assert "1 decision re-checked: all agree" in merged_and_rechecked(logs, tmp_path)
