"""cpl.live as docs/embedding.md shows it: the asyncio example, explanations, and cpl merge
of agents' logs (one system, one log per lifeline, logs cut off, messages in transit)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from cpl.lang import to_text
from cpl.live import System
from cpl.trace import load_trace
from strategies import formulas, small_ints

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "embedding" / "asyncio_review.py"
MERGE = "@TestRunner(status != failed S status == passed) && @TestRunner.candidate == candidate"


def run(*args, cwd):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def cpl(*args, cwd):
    return run("-m", "cpl_cli", *args, cwd=cwd)


def system(**kwargs) -> System:
    return System(["Author", "TestRunner", "Committer"], {"merge": ("Committer", MERGE)},
                  ["status", "candidate"], **kwargs)


def test_the_asyncio_example_is_guarded_in_at_most_15_lines_and_every_decision_agrees(tmp_path):
    """Run twice: the second run into the same folder stops on one line unless --overwrite,
    which replaces the logs (the merge below would count 14 decisions if it appended)."""
    marked = [line for line in EXAMPLE.read_text().splitlines() if line.endswith("# cpl")]
    assert 0 < len(marked) <= 15
    shown = (ROOT / "docs" / "embedding.md").read_text()
    assert all(line in shown for line in marked), "docs/embedding.md shows another version"
    ran = run(EXAMPLE, "--logs", "logs/", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    first = {log.name: log.read_bytes() for log in (tmp_path / "logs").iterdir()}
    again = run(EXAMPLE, "--logs", "logs/", cwd=tmp_path)
    assert (again.returncode, again.stdout, again.stderr) == (2, "", (
        "asyncio_review.py: logs/Author.jsonl exists already: give --overwrite to replace it\n"))
    assert {log.name: log.read_bytes() for log in (tmp_path / "logs").iterdir()} == first
    ran = run(EXAMPLE, "--logs", "logs/", "--overwrite", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "c1: merged\nc2: refused\nc3: merged\n"
    merged = cpl("merge", "logs", "-o", "t.jsonl", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    checked = cpl("eval", "t.jsonl", cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.endswith(
        "7 decisions re-checked: all agree\n"), checked.stdout + checked.stderr
    trace = load_trace(tmp_path / "t.jsonl")
    assert trace.meta["status"] == "ok" and set(trace.meta["agents"].values()) == {"closed"}
    drawn = cpl("render", "t.jsonl", "-o", "t.svg", cwd=tmp_path)
    assert drawn.returncode == 0 and (tmp_path / "t.svg").stat().st_size > 1000, drawn.stderr


def test_explain_names_the_remote_event_and_the_values_that_decided():
    s = system()
    runner, committer = s.agent("TestRunner"), s.agent("Committer")
    runner.receive(s.agent("Author").send("TestRunner"), candidate="c1")
    runner.act(status="passed")
    committer.receive(runner.send("Committer", "report"), candidate="c2")
    assert committer.decide("merge") is False
    text = committer.explain("merge").to_text()
    assert "value: false" in text
    assert "as TestRunner computed it at TestRunner.3" in text
    assert '@TestRunner.candidate = "c1"' in text and 'candidate = "c2"' in text
    assert committer.explain("merge").to_json()["explanation"]["value"] is False


def test_explain_before_anything_is_seen_says_so():
    text = system().agent("Committer").explain("merge").to_text()
    assert "no event of TestRunner is in this agent's causal past yet" in text


def _logs(tmp_path, s, deliver=True, close=True):
    agents = {name: s.agent(name, log=str(tmp_path / "logs") + "/") for name in s.lifelines}
    token = agents["TestRunner"].send("Committer", "report")
    agents["Author"].send("Committer", "lost")  # never received: in transit
    if deliver:
        agents["Committer"].receive(token)
    agents["Committer"].decide("merge")
    if close:
        for agent in agents.values():
            agent.close()
    return agents


def test_a_message_never_received_is_in_transit_and_the_trace_is_whole(tmp_path):
    _logs(tmp_path, system())
    merged = cpl("merge", "logs", "-o", "t.jsonl", cwd=tmp_path)
    assert merged.returncode == 0, merged.stderr
    assert "1 message in transit" in merged.stdout
    trace = load_trace(tmp_path / "t.jsonl")
    assert trace.meta["in_transit"] == ["Author:1"] and trace.meta["status"] == "ok"
    assert [e.vc for e in trace.events if e.kind == "recv"] == [
        {"Author": 0, "TestRunner": 1, "Committer": 1}]


def test_logs_not_closed_merge_as_vanished_naming_the_agents(tmp_path):
    _logs(tmp_path, system(), close=False)
    assert cpl("merge", "logs", "-o", "t.jsonl", cwd=tmp_path).returncode == 0
    meta = load_trace(tmp_path / "t.jsonl").meta
    assert meta["status"] == "vanished" and "Committer" in meta["error"]
    assert meta["agents"] == {"Author": "cut", "Committer": "cut", "TestRunner": "cut"}


def test_logs_of_two_systems_or_two_logs_of_one_lifeline_are_refused(tmp_path):
    _logs(tmp_path / "a", system())
    _logs(tmp_path / "b", System(["Author", "TestRunner", "Committer"],
                                 {"merge": ("Committer", "@TestRunner(status == passed)")},
                                 ["status", "candidate"]))
    other = cpl("merge", "a/logs", "b/logs/Author.jsonl", "-o", "t.jsonl", cwd=tmp_path)
    assert other.returncode == 1 and "the log of another system" in other.stderr
    _logs(tmp_path / "c", system())
    twice = cpl("merge", "a/logs", "c/logs/Committer.jsonl", "-o", "t.jsonl", cwd=tmp_path)
    assert twice.returncode == 1 and "a second log of 'Committer'" in twice.stderr
    assert "Traceback" not in other.stderr + twice.stderr
    assert not (tmp_path / "t.jsonl").exists()


@pytest.mark.parametrize("content", [b"", b"garbage\n", b'{"format": "cpl-live/1"}\n',
                                     b'{"format": "cpl-live/1", "lifeline": "A", "system": 1}\n',
                                     b"[" * 100_000 + b"\n", b"\xff\xfe\n"],
                         ids=["empty", "garbage", "bare header", "wrong types", "deep",
                              "not utf-8"])
def test_a_file_that_is_no_agent_log_is_a_clear_error(tmp_path, content):
    (tmp_path / "x.jsonl").write_bytes(content)
    merged = cpl("merge", "x.jsonl", "-o", "t.jsonl", cwd=tmp_path)
    assert merged.returncode == 1, merged.stderr
    assert "x.jsonl" in merged.stderr and "Traceback" not in merged.stderr


def test_a_damaged_event_line_ends_that_log_the_rest_merges_and_it_is_said(tmp_path):
    _logs(tmp_path, system())
    log = tmp_path / "logs" / "Committer.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:2] + ['{"id": 1}'] + lines[2:]) + "\n")
    merged = cpl("merge", "logs", "-o", "t.jsonl", cwd=tmp_path)
    assert merged.returncode == 1 and "line 3 of logs/Committer.jsonl is not an event" \
        in merged.stderr, merged.stderr
    trace = load_trace(tmp_path / "t.jsonl")
    assert [e.id for e in trace.events if e.lifeline == "Committer"] == ["Committer.1"]
    assert trace.meta["status"] == "incomplete" and trace.meta["unplaced"] == 2  # not the end


def test_an_odd_lifeline_name_gets_a_plain_file_name_and_merges(tmp_path):
    s = System(["../etc/x", "B"], {}, ["v"])
    with s.agent("../etc/x", log=str(tmp_path / "logs") + "/") as agent:
        agent.act(v=1)
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == ["lifeline-0.jsonl"]
    assert cpl("merge", "logs", "-o", "t.json", cwd=tmp_path).returncode == 0
    assert json.loads((tmp_path / "t.json").read_text())["events"][0]["lifeline"] == "../etc/x"


def test_the_extras_name_every_adapter_and_test_installs_them():
    import tomllib
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    for extra in ("langgraph", "openai-agents", "mcp", "http"):
        assert extras[extra], extra
        assert set(extras[extra]) <= set(extras["test"]), extra


@settings(max_examples=60, deadline=None)
@given(formulas(("A", "B"), ("x", "y"), ("passed",), max_leaves=8, literals=small_ints()),
       st.lists(st.tuples(st.sampled_from(["act A", "act B", "A->B", "B->A"]),
                          st.integers(0, 2)), max_size=8))
def test_explain_agrees_with_holds_and_never_fails(formula, steps):
    """Whatever the guard and the events, the explanation's value is the guard's and every
    step has a value: nothing in the tree is read from outside the agent's monitor."""
    s = System(["A", "B"], {"g": ("B", to_text(formula))}, ["x", "y"])
    agents = {name: s.agent(name) for name in s.lifelines}
    for step, value in steps:
        if step.startswith("act"):
            agents[step[-1]].act(x=value, y=value % 2)
        else:
            sender, receiver = step.split("->")
            agents[receiver].receive(agents[sender].send(receiver), x=value)
    explanation = agents["B"].explain("g")
    assert explanation.value == agents["B"].holds("g")
    assert explanation.to_text().count("\n") >= 5


def test_a_runs_parts_folder_is_merged_alone(tmp_path):
    _logs(tmp_path, system())
    (tmp_path / "t.jsonl.parts").mkdir()
    (tmp_path / "t.jsonl.parts" / "run.json").write_text("{}")
    mixed = cpl("merge", "t.jsonl.parts", "logs", "-o", "t.jsonl", cwd=tmp_path)
    assert mixed.returncode == 2 and "merge it alone" in mixed.stderr


def test_a_lifeline_exporting_more_than_64_subformulas_still_sends():
    """A view is a bitmask of the subformulas a lifeline ships: past 64 of them it does not
    fit msgpack's integers (the send raised TypeError, in cpl run's wire too)."""
    from cpl.monitor import Metadata, MetadataError
    guard = " || ".join(f"@B(x == {i})" for i in range(70))
    s = System(["A", "B"], {"g": ("A", guard)}, ["x"])
    b, a = s.agent("B"), s.agent("A")
    b.act(x=69)
    a.receive(b.send("A").text)
    assert a.decide("g") is True
    wide = Metadata((1,), (1 << 69,), ((),))
    assert Metadata.decode(wide.encode()) == wide
    with pytest.raises(MetadataError):  # a hostile "wide view" of megabytes
        Metadata.decode(b"\x93\x91\x01\x91\xc9\x00\x02\x00\x00\x02" + b"\xff" * 0x20000
                        + b"\x91\x90")


def test_an_explanation_is_headed_by_the_latest_event_not_the_guard():
    s = system()
    committer = s.agent("Committer")
    committer.act("looked", candidate="c1")
    assert committer.explain("merge").to_text().startswith("Committer.1 on Committer (act looked)")
