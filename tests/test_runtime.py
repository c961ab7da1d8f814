"""``cpl run`` over real processes (no ``--sim``), re-checked against the semantics.

Each test runs the installed ``cpl`` as a subprocess: one supervisor and one
``cpl lifeline NAME --stdin`` process per lifeline over ZeroMQ on 127.0.0.1.
The trace it writes is then judged by what the run cannot influence: every
recorded decision is recomputed by the reference semantics
(``cpl.semantics.reference.recheck``) and by the online monitor replaying the recorded
trace (``cpl.monitor.offline.evaluate_trace``); every receive has its send and the
sends without one are exactly ``meta.in_transit``; the results the processes
report are the stores the trace's updates lead to.  Deaths (``kill -9`` of a
lifeline or of the supervisor), Ctrl-C and ``--timeout`` must end the run
within seconds, with a trace that says how, and leave no process behind.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from choreo_util import write
from cpl.trace import load_trace
from runtime_util import (EXAMPLES, Cpl, check_messages, check_results, check_semantics,
                          events_per_lifeline, lifeline_processes, run_cpl, tagged, wait_until)

CODE_REVIEW = str(EXAMPLES / "code_review.py")
REVIEWERS = {"Orchestrator", "TestRunner", "Security", "Committer"}


def _names(processes: dict) -> set[str]:
    """The lifeline names on ``cpl lifeline NAME --stdin`` command lines."""
    found = set()
    for line in processes.values():
        words = line.split()
        if "lifeline" in words and words.index("lifeline") + 1 < len(words):
            found.add(words[words.index("lifeline") + 1])
    return found


def _ok_trace(path, lifelines) -> object:
    trace = load_trace(path)
    meta = trace.meta
    assert meta["status"] == "ok", meta
    assert meta["processes"] is True
    assert meta["in_transit"] == [] and meta["unplaced"] == 0, meta
    assert "rejected_frames" not in meta, meta
    assert set(events_per_lifeline(trace)) == set(lifelines)
    check_messages(trace)
    check_results(trace)
    return trace


@pytest.mark.parametrize("suffix, rounds", [("json", 4), ("jsonl", 12), ("msgpack", 25)])
def test_code_review_runs_as_four_processes_and_every_decision_rechecks(tmp_path, suffix, rounds):
    trace_path = tmp_path / f"review.{suffix}"
    with Cpl(tmp_path, "run", CODE_REVIEW, "--arg", f"rounds={rounds}", "--seed", "3",
             "--trace", str(trace_path)) as cpl:
        seen: dict[int, str] = {}
        while cpl.process.poll() is None and time.monotonic() - cpl.started < 60:
            seen.update(lifeline_processes(cpl.tag))
            time.sleep(0.02)
        code = cpl.wait(60)
        assert code == 0, cpl.err
        assert len(seen) == 4 and _names(seen) == REVIEWERS, seen  # one process each
        assert all(pid != cpl.process.pid for pid in seen)
        assert wait_until(lambda: not tagged(cpl.tag), 5.0), tagged(cpl.tag)
        out = cpl.out
    trace = _ok_trace(trace_path, REVIEWERS)
    decisions = check_semantics(trace)
    merges = [e for e in trace.events if e.label == "merge?"]
    assert len(merges) == rounds and decisions == 2 * rounds + 1  # the loop's tests + merge?
    results = trace.meta["results"]
    assert results["Orchestrator"]["round"] == rounds
    assert results["Orchestrator"]["merges"] == sum(e.outcome for e in merges)
    assert f"Orchestrator: round = {rounds}, merges = {results['Orchestrator']['merges']}" in out


def test_relay_over_processes_reads_the_newest_value_whatever_arrives_last(tmp_path):
    trace_path = tmp_path / "relay.jsonl"
    code, out, err, _ = run_cpl(tmp_path, "run", str(EXAMPLES / "relay.py"), "--trace",
                                str(trace_path))
    assert code == 0, err
    trace = _ok_trace(trace_path, {"Device", "RelayA", "RelayB", "Indicator"})
    assert check_semantics(trace) == 1
    (decision,) = [e for e in trace.events if e.kind == "choice"]
    assert (decision.lifeline, decision.outcome) == ("Indicator", False)
    assert trace.meta["results"]["Indicator"]["lit"] is False
    assert "Indicator:" in out and "lit = false" in out


def test_parallel_tools_over_processes(tmp_path):
    trace_path = tmp_path / "tools.json"
    code, out, err, _ = run_cpl(tmp_path, "run", str(EXAMPLES / "parallel_tools.py"),
                                "--seed", "1", "--trace", str(trace_path))
    assert code == 0, err
    trace = _ok_trace(trace_path, {"Agent", "Search", "Calculator"})
    assert check_semantics(trace) == 1
    agent = [e for e in trace.events if e.lifeline == "Agent"]
    assert sum(e.kind == "send" for e in agent) == 2 and sum(e.kind == "recv" for e in agent) == 2
    assert trace.meta["results"]["Agent"]["answer"]


def test_insecure_runs_end_to_end(tmp_path):
    trace_path = tmp_path / "insecure.json"
    code, _, err, _ = run_cpl(tmp_path, "run", CODE_REVIEW, "--arg", "rounds=6", "--insecure",
                              "--trace", str(trace_path))
    assert code == 0, err
    assert err.splitlines() == ["cpl run: --insecure: no keys, so anyone who can reach this "
                                "run's ports can read its messages and steer the run"]
    trace = _ok_trace(trace_path, REVIEWERS)
    assert check_semantics(trace) == 13


# ------------------------------------------------------------------ ends that are not ok

def _long_run(tmp_path, trace_path, *extra):
    return Cpl(tmp_path, "run", CODE_REVIEW, "--arg", "rounds=100000", "--trace",
               str(trace_path), *extra)


def _under_way(cpl, trace_path=None) -> dict[int, str]:
    """The four lifeline processes, once they are all up and the run has gone on a while."""
    found = wait_until(lambda: len(lifeline_processes(cpl.tag)) == 4, 30.0)
    assert found, f"four lifelines never ran; stderr:\n{cpl.err}"
    under_way = wait_until(lambda: cpl.logged() > 300, 60.0)  # messages in flight everywhere
    assert under_way, f"the run logged {cpl.logged()} events; stderr:\n{cpl.err}"
    processes = lifeline_processes(cpl.tag)
    assert _names(processes) == REVIEWERS, processes
    return processes


def _no_process_left(cpl, within: float = 5.0) -> None:
    left = wait_until(lambda: not tagged(cpl.tag), within)
    assert left, f"processes left behind: {tagged(cpl.tag)}"


def _cut_trace(trace_path, status):
    trace = load_trace(trace_path)
    assert trace.meta["status"] == status, trace.meta
    assert len(trace.events) > 100  # the run was well under way
    assert check_semantics(trace) > 10
    check_messages(trace)
    assert trace.meta["unplaced"] == 0
    return trace


def test_kill_9_of_a_lifeline_ends_the_run_as_died_with_a_trace_that_rechecks(tmp_path):
    trace_path = tmp_path / "killed.jsonl"
    with _long_run(tmp_path, trace_path) as cpl:
        processes = _under_way(cpl)
        (victim,) = [pid for pid, line in processes.items() if " TestRunner " in f"{line} "]
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        code = cpl.wait(20)
        ended = time.monotonic() - killed
        assert code == 1, cpl.err
        assert ended < 10.0, f"the run took {ended:.1f} s to end after the kill"
        assert "TestRunner" in cpl.err and "died" in cpl.err, cpl.err
        _no_process_left(cpl)
    trace = _cut_trace(trace_path, "died")
    assert trace.meta["died"] == {"lifeline": "TestRunner", "exit": None, "signal": 9}
    assert "TestRunner" in trace.meta["error"]


def test_kill_9_of_the_supervisor_ends_every_lifeline(tmp_path):
    with _long_run(tmp_path, tmp_path / "orphans.json") as cpl:
        _under_way(cpl)
        os.kill(cpl.process.pid, signal.SIGKILL)
        killed = time.monotonic()
        cpl.process.wait(5)
        gone = wait_until(lambda: not lifeline_processes(cpl.tag), 8.0)
        after = time.monotonic() - killed
        assert gone, f"lifelines outlived their supervisor: {lifeline_processes(cpl.tag)}"
        assert after < 5.0, f"the lifelines took {after:.1f} s to notice"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_interrupts_with_exit_130_and_a_trace_that_says_so(tmp_path, signum):
    trace_path = tmp_path / "interrupted.msgpack"
    with _long_run(tmp_path, trace_path) as cpl:
        _under_way(cpl)
        os.kill(cpl.process.pid, signum)
        interrupted = time.monotonic()
        code = cpl.wait(20)
        assert code == 130, cpl.err
        assert time.monotonic() - interrupted < 8.0
        _no_process_left(cpl)
    trace = _cut_trace(trace_path, "interrupted")
    assert "died" not in trace.meta


def test_timeout_stops_a_long_run(tmp_path):
    trace_path = tmp_path / "timeout.jsonl"
    with _long_run(tmp_path, trace_path, "--timeout", "2") as cpl:
        code = cpl.wait(30)
        took = time.monotonic() - cpl.started
        assert code == 1, cpl.err
        assert took < 2 + 10, f"--timeout 2 took {took:.1f} s"
        assert "--timeout" in cpl.err
        _no_process_left(cpl)
    trace = _cut_trace(trace_path, "timeout")
    check_results(trace)


# ------------------------------------------------------------------ small choreographies

def _write(tmp_path, name: str, source: str) -> str:
    return str(write(tmp_path, source, name=f"{name}.py"))


def test_a_failing_action_fails_the_run_naming_the_lifeline_and_event(tmp_path):
    choreography = _write(tmp_path, "failing", """
        c = failing = Choreography("failing")
        A, B = c.lifelines("A", "B")
        x = c.var("x", int)
        def broken(variables, rng):
            raise RuntimeError("the tool is down")
        c.set(A, x=1)
        c.send(A, B, x, label="x")
        c.act(B, broken, assigns=[x])
        c.send(B, A, x, label="back")
    """)
    trace_path = tmp_path / "failing.json"
    code, _, err, seconds = run_cpl(tmp_path, "run", choreography, "--trace", str(trace_path))
    assert code == 1 and seconds < 15, (code, seconds, err)
    assert "B, after B.1" in err and "the tool is down" in err, err
    trace = load_trace(trace_path)
    assert trace.meta["status"] == "failed", trace.meta
    assert "B, after B.1" in trace.meta["error"]
    assert [e.id for e in trace.events] == ["A.1", "A.2", "B.1"]


def test_a_value_too_large_for_the_wire_fails_the_run_at_its_sender(tmp_path):
    """A frame over 1 MiB would be dropped by the receiver's ZMQ_MAXMSGSIZE without a word;
    the run must end at once with the cause, not wait for the message until --timeout."""
    choreography = _write(tmp_path, "big", """
        c = big = Choreography("big")
        A, B = c.lifelines("A", "B")
        blob = c.var("blob", str)
        def make(variables, rng):
            return "x" * 2_000_000
        c.act(A, make, assigns=[blob])
        c.send(A, B, blob, label="blob")
    """)
    trace_path = tmp_path / "big.json"
    code, _, err, seconds = run_cpl(tmp_path, "run", choreography, "--timeout", "30",
                                    "--trace", str(trace_path))
    assert code == 1 and seconds < 10, (code, seconds, err)
    assert "1 MiB" in err and "'blob'" in err, err
    trace = load_trace(trace_path)
    assert trace.meta["status"] == "failed", trace.meta  # the user's value, not a crash
    assert "blob" in trace.meta["error"] and "A" in trace.meta["error"]


def test_a_lifeline_waiting_long_for_a_slow_action_elsewhere_is_not_taken_for_dead(tmp_path):
    """B waits for A, whose action (an LLM call, say) takes longer than the lifelines'
    SUPERVISOR_SILENCE; the supervisor is alive all along, so B must wait, not leave."""
    from runtime.frames.control import SUPERVISOR_SILENCE
    choreography = _write(tmp_path, "slow", f"""
        import time
        c = slow = Choreography("slow")
        A, B = c.lifelines("A", "B")
        x = c.var("x", int)
        def think(variables, rng):
            time.sleep({SUPERVISOR_SILENCE + 1.5})
            return 1
        c.act(A, think, assigns=[x])
        c.send(A, B, x, label="x")
        with c.if_("@A.x == 1", at=B, label="one?"):
            c.set(B, x=2)
        c.result(B, x)
    """)
    trace_path = tmp_path / "slow.json"
    code, out, err, _ = run_cpl(tmp_path, "run", choreography, "--trace", str(trace_path),
                                timeout=SUPERVISOR_SILENCE + 30)
    assert code == 0, err
    assert "B: x = 2" in out
    trace = _ok_trace(trace_path, {"A", "B"})
    assert check_semantics(trace) == 1


def test_results_of_lifelines_without_declared_results_are_their_final_stores_as_in_sim(tmp_path):
    """No ``c.result``: each lifeline's result is its whole store at the end, over processes
    as with --sim (a variable first set during the run included)."""
    choreography = _write(tmp_path, "plain", """
        c = plain = Choreography("plain")
        A, B = c.lifelines("A", "B")
        x = c.var("x", int)
        c.set(A, x=1)
        c.send(A, B, x, label="x")
    """)
    code, simulated, err, _ = run_cpl(tmp_path, "run", choreography, "--sim")
    assert code == 0, err
    assert simulated.splitlines() == ["A: x = 1", "B: x = 1"]
    trace_path = tmp_path / "plain.json"
    code, out, err, _ = run_cpl(tmp_path, "run", choreography, "--trace", str(trace_path))
    assert code == 0, err
    assert out == simulated
    check_results(_ok_trace(trace_path, {"A", "B"}))


def test_the_merge_stops_a_log_at_a_line_that_is_no_event():
    """A log shipped from another host is only as good as that host: a bad line stops
    that lifeline's part of the trace there, which the merge says; the rest is merged."""
    from cpl.trace import merge_logs as merge
    logs = {"A": iter([{"id": "A.1", "lifeline": "A", "kind": "send", "to": "B", "msg": "A:1"},
                       {"id": "A.2", "lifeline": "A", "kind": "act", "set": "not a map"},
                       {"id": "A.3", "lifeline": "A", "kind": "act"}]),
            "B": iter([{"id": "B.1", "lifeline": "B", "kind": "recv", "msg": "A:1"}])}
    written = []
    meta = merge(logs, ("A", "B"), written.append)
    assert [e.id for e in written] == ["A.1", "B.1"]
    assert dict(written[1].vc) == {"A": 1, "B": 1}
    assert meta == {"in_transit": [], "unplaced": 2, "incomplete": {
        "lifeline": "A", "line": 2, "event": "A.2", "unplaced": 2, "lifelines": 1,
        "why": 'cannot be placed: its "set" is "not a map", not an object of values'}}


# ------------------------------------------------------------------ async actions overlap

OVERLAP = """
    import asyncio
    c = overlap = Choreography("overlap")
    A, B = c.lifelines("A", "B")
    x, y, z, ok = c.var("x", int), c.var("y", int), c.var("z", int), c.var("ok", bool)
    async def slow(variables, rng):
        await asyncio.sleep({seconds})
        return 1
    async def first(variables, rng):
        await asyncio.sleep(0.2)
        return {first}
    c.set(A, x=0, label="start")
    with c.parallel():
        with c.thread():
            c.act(A, first, assigns=[x], label="x")
        with c.thread():
            c.act(A, slow, assigns=[y], label="y")
        with c.thread():
            c.act(A, slow, assigns=[z], label="z")
    c.send(A, B, x, y, z, label="all")
    with c.if_("@A.x == 1 && @A.y == 1 && @A.z == 1", at=B, label="all in?"):
        c.set(B, ok=True)
    with c.else_():
        c.set(B, ok=False)
    c.result(B, ok)
"""


def test_async_actions_of_parallel_threads_overlap_in_a_lifeline_process(tmp_path):
    """Async actions of 0.2, 1.5 and 1.5 s in three threads of A take ~1.5 s, not 3.2; A is
    busy (not a deadlock) and the decision B takes afterwards re-checks."""
    choreography = _write(tmp_path, "overlap", OVERLAP.format(seconds=1.5, first=1))
    trace_path = tmp_path / "overlap.json"
    code, out, err, seconds = run_cpl(tmp_path, "run", choreography, "--trace", str(trace_path))
    assert code == 0, err
    assert "B: ok = true" in out
    trace = load_trace(trace_path)
    acts = [e.time for e in trace.events if e.kind == "act" and e.lifeline == "A"]
    assert len(acts) == 4 and acts[-1] - acts[0] < 2.5, acts  # one after another: ≥ 3.2 s
    assert check_semantics(trace) == 1


def test_a_failing_async_action_fails_the_run_while_others_still_run(tmp_path):
    choreography = _write(tmp_path, "overlap", OVERLAP.format(seconds=600, first="1 // 0"))
    code, _, err, seconds = run_cpl(tmp_path, "run", choreography, "--timeout", "60")
    assert code == 1 and "raised ZeroDivisionError" in err, (code, err)
    assert seconds < 15, f"the run waited {seconds:.1f} s for the actions still running"


def test_a_run_stopped_during_a_long_async_action_cancels_it_and_ends(tmp_path):
    choreography = _write(tmp_path, "overlap", OVERLAP.format(seconds=600, first=1))
    trace_path = tmp_path / "stopped.jsonl"
    code, _, err, seconds = run_cpl(tmp_path, "run", choreography, "--timeout", "2",
                                    "--trace", str(trace_path))
    assert code == 1 and "--timeout" in err and seconds < 12, (code, seconds, err)
    meta = load_trace(trace_path).meta
    assert meta["status"] == "timeout" and "died" not in meta, meta
