"""A run over processes trusts a control frame only as far as the key that signed it, and runs
one plan everywhere.

TestRunner is placed on 127.0.0.2 (``--hosts``), so a connection file holding its keys
exists.  A peer holding that file forges the other lifelines' ``hello``s and ``end``
reports (DEALERs whose routing ids claim Orchestrator, Security, Committer): the run must
end exactly as it would have, every forged frame refused and counted in
``meta.rejected_control``.  A joined lifeline whose copy of the choreography differs from
the supervisor's is refused, both fingerprints named, and the run ends at once.
"""

from __future__ import annotations

import json
import re
import shutil
import time

import zmq

from choreo import load_one
from choreo.execution.fingerprint import fingerprint
from cpl.trace import load_trace
from runtime.frames import control
from runtime.frames import Ticket, secure_client
from runtime_util import (EXAMPLES, Cpl, check_messages, check_results, check_semantics, run_cpl,
                          wait_until)

ROUNDS = 1000
MERGE = ("@TestRunner.candidate == candidate && @Security.candidate == candidate"
         " && @TestRunner(status != failed S status == passed)"
         " && @Security(status != critical S status == cleared)")  # examples/code_review.py


def _placed_run(tmp_path, choreography, *args) -> tuple[Cpl, list[str]]:
    """``cpl run --hosts`` with TestRunner on 127.0.0.2; the command it prints to join."""
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"supervisor": "127.0.0.1",
                                 "hosts": {"127.0.0.2": ["TestRunner"]}}))
    run = Cpl(tmp_path, "run", str(choreography), "--hosts", str(hosts), *args)
    said = wait_until(lambda: re.search(r"on 127\.0\.0\.2: cpl (lifeline .*)$", run.err, re.M),
                      30.0)
    if not said:
        run.__exit__()
        raise AssertionError(f"no command to join printed; stderr:\n{run.err}")
    return run, said.group(1).split()


def _forgers(context, connection: Ticket) -> list:
    """DEALERs with TestRunner's keys, each claiming another lifeline (and one the bare name
    a lifeline's socket had before its routing id got a token of its own)."""
    claims = [control.routing_id(name, "forged") for name in ("Orchestrator", "Security",
                                                                "Committer")] + [b"Committer"]
    forgers = []
    for claim in claims:
        dealer = context.socket(zmq.DEALER)
        dealer.linger = 0
        dealer.identity = claim
        secure_client(dealer, connection.keys, connection.keys.supervisor)
        dealer.connect(connection.supervisor)
        forgers.append(dealer)
    return forgers


def test_a_peer_with_one_lifelines_keys_cannot_steer_the_others(tmp_path):
    trace_path = tmp_path / "forged.jsonl"
    run, words = _placed_run(tmp_path, EXAMPLES / "code_review.py", "--arg", f"rounds={ROUNDS}",
                             "--seed", "3", "--trace", str(trace_path))
    context = zmq.Context()
    try:
        with run:
            connection = Ticket.read(words[words.index("--connection") + 1], "TestRunner")
            forgers = _forgers(context, connection)
            evil = {"round": 3, "merges": 3, "candidate": "EVIL", "decision": "EVIL"}
            forged_end = control.State("end", "ok", None, 0, 0, 0, evil, (), {}, None, True)
            forged_hello = control.Hello("tcp://127.0.0.1:9", connection.fingerprint)
            for forger in forgers:  # before the run starts: a hello would redirect messages
                control.send(forger, forged_hello)
            sent = len(forgers)
            with Cpl(tmp_path, *words) as joined:
                while run.process.poll() is None and time.monotonic() - run.started < 120:
                    for forger in forgers:
                        control.send(forger, forged_end)
                        control.send(forger, forged_hello)
                        sent += 2
                    time.sleep(0.02)
                code = run.wait(10)
                assert joined.wait(15) == 0, joined.err
            out, err = run.out, run.err
    finally:
        context.destroy(linger=0)
    assert code == 0, err
    assert "Traceback" not in err and "EVIL" not in out
    assert out.splitlines()[0].startswith(f"Orchestrator: round = {ROUNDS}, merges = ")
    trace = load_trace(trace_path)
    meta = trace.meta
    assert meta["status"] == "ok" and meta["results"]["Orchestrator"]["round"] == ROUNDS, meta
    assert "rejected_frames" not in meta  # the data frames were never touched
    assert set(meta["rejected_control"]) == {"impostor"}, meta["rejected_control"]
    assert len(forgers) <= meta["rejected_control"]["impostor"] <= sent
    check_messages(trace)
    check_results(trace)
    merges = [e for e in trace.events if e.label == "merge?"]
    assert len(merges) == ROUNDS and check_semantics(trace) == 2 * ROUNDS + 1
    assert meta["results"]["Orchestrator"]["merges"] == sum(e.outcome for e in merges)
    code, evaluated, err, _ = run_cpl(tmp_path, "eval", str(trace_path), MERGE, "--lifeline",
                                      "Committer", "--format", "jsonl")
    assert code == 0, err
    values = {line["event"]: line["value"] for line in map(json.loads, evaluated.splitlines())}
    assert {e.id: e.outcome for e in merges} == {e.id: values[e.id] for e in merges}


def test_a_joined_lifeline_whose_plan_differs_is_refused_naming_both_fingerprints(tmp_path):
    """The joined host's copy of the choreography (``--choreo``) was changed after the run
    started: the lifeline says so and exits 1, the supervisor refuses its hello and ends the
    run as failed at once (not after the 300 s it waits for joins)."""
    trace_path = tmp_path / "refused.json"
    run, words = _placed_run(tmp_path, EXAMPLES / "code_review.py", "--trace", str(trace_path))
    with run:
        expected = Ticket.read(words[words.index("--connection") + 1], "TestRunner").fingerprint
        copy = tmp_path / "review.py"
        shutil.copy(EXAMPLES / "code_review.py", copy)
        with open(copy, "a") as handle:
            handle.write("\nc.set(TestRunner, status='passed')\n")
        loaded = fingerprint(load_one(str(copy)), {"rounds": 3}, 0)
        assert loaded != expected
        code, _, said, _ = run_cpl(tmp_path, *words, "--choreo", str(copy), timeout=30)
        assert code == 1 and expected in said and loaded in said, said
        assert run.wait(15) == 1, run.err
        ended = time.monotonic() - run.started
        err = run.err
    assert "Traceback" not in err
    assert f"lifeline TestRunner runs another plan: it loaded {loaded}, this run's is " \
           f"{expected}" in err, err
    assert ended < 30, f"the run took {ended:.1f} s to end"
    meta = load_trace(trace_path).meta
    assert meta["status"] == "failed" and loaded in meta["error"] and expected in meta["error"]
