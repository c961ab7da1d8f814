"""A bounded load test of ``cpl run`` over processes: 32 lifelines, over 10,000 messages.

A star: each round the Hub decides whether to go on (a while loop it tells
all 31 workers about), then, in 31 parallel threads, sends each worker the
round number; each worker works, decides on ``@Hub.k`` (the Hub's round in
its causal past) and answers.  93 messages a round, 108 rounds and the last
31 "no more rounds": 10,075 messages.  None may be lost (a receive for every
send, nothing in transit), every decision must equal the semantics, every
socket listens on 127.0.0.1, and the whole run is bounded in time.
"""

from __future__ import annotations

import time

from cpl.trace import load_trace
from runtime_util import (Cpl, check_messages, check_results, check_semantics,
                          events_per_lifeline, lifeline_processes, listening, tagged, wait_until)

WORKERS = 31
ROUNDS = 108
BOUND = 120.0  # seconds for the run

STAR = f'''
from choreo import Choreography

c = star = Choreography("star")
WORKERS = {WORKERS}
Hub, *workers = c.lifelines("Hub", *[f"W{{i:02d}}" for i in range(1, WORKERS + 1)])
rounds = c.input("rounds", int, default=2, at=Hub)
k = c.var("k", int, init={{Hub: 0}})
n = c.var("n", int, init={{w: 0 for w in workers}})
fresh = c.var("fresh", bool)
got = [c.var(f"got{{i:02d}}", int, init={{Hub: 0}}) for i in range(1, WORKERS + 1)]


def next_round(variables, rng):
    return variables["k"] + 1


def work(variables, rng):
    return variables["n"] + variables["k"]


with c.while_("k < rounds", at=Hub, label="another round?"):
    c.act(Hub, next_round, assigns=[k], reads=[k])
    with c.parallel():
        for w, g in zip(workers, got):
            with c.thread():
                c.send(Hub, w, k, label="work")
                c.act(w, work, assigns=[n], reads=[n, k])
                with c.if_("@Hub.k == k && n >= k", at=w, label="fresh?"):
                    c.set(w, fresh=True)
                with c.else_():
                    c.set(w, fresh=False)
                c.send(w, Hub, label="done", **{{g.name: n}})
c.result(Hub, k, *got)
'''


def test_32_lifelines_exchange_10000_messages_none_lost_every_decision_rechecked(tmp_path):
    choreography = tmp_path / "star.py"
    choreography.write_text(STAR)
    trace_path = tmp_path / "star.jsonl"
    with Cpl(tmp_path, "run", str(choreography), "--arg", f"rounds={ROUNDS}", "--seed", "5",
             "--trace", str(trace_path)) as cpl:
        seen: dict[int, str] = {}
        sockets = set()
        while cpl.process.poll() is None and time.monotonic() - cpl.started < BOUND:
            now = lifeline_processes(cpl.tag)
            seen.update(now)
            if len(sockets) < 1 + (WORKERS + 1):  # until every inbox has been bound
                sockets |= listening(tagged(cpl.tag))
            time.sleep(0.1)
        code = cpl.wait(max(1.0, BOUND - (time.monotonic() - cpl.started)))
        seconds = time.monotonic() - cpl.started
        assert code == 0, cpl.err
        assert len(seen) == WORKERS + 1, seen
        assert wait_until(lambda: not tagged(cpl.tag), 5.0), tagged(cpl.tag)
    assert sockets, "no listening socket seen"
    assert {address for address, _ in sockets} == {"127.0.0.1"}, sockets
    assert len(sockets) >= 1 + (WORKERS + 1)  # the supervisor's control and every inbox
    started = time.monotonic()
    trace = load_trace(trace_path)
    assert trace.meta["status"] == "ok", trace.meta
    assert trace.meta["in_transit"] == [] and trace.meta["unplaced"] == 0
    sends, receives = check_messages(trace)
    assert sends == receives == ROUNDS * 3 * WORKERS + WORKERS >= 10_000
    per_lifeline = events_per_lifeline(trace)
    assert len(per_lifeline) == WORKERS + 1
    assert check_semantics(trace) == ROUNDS + 1 + ROUNDS * WORKERS
    check_results(trace)
    results = trace.meta["results"]
    assert results["Hub"]["k"] == ROUNDS
    assert all(results["Hub"][f"got{i:02d}"] == ROUNDS * (ROUNDS + 1) // 2
               for i in range(1, WORKERS + 1))
    assert all(e.outcome for e in trace.events if e.label == "fresh?")
    checked = time.monotonic() - started
    print(f"\n32 lifelines, {sends} messages, {len(trace.events)} events: run {seconds:.1f} s "
          f"({sends / seconds:.0f} messages/s), checks {checked:.1f} s")
    assert seconds < BOUND
