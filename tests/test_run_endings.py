"""How a run over processes ends, decided from facts alone (runtime.supervisor.verdicts.ending
and meta_of): no socket, no process, no clock — each ending from a few written-down facts."""

import signal

from choreo.execution.status import (
    DEADLOCK, DIED, FAILED, INTERRUPTED, LOST, NOT_JOINED, OK, TIMEOUT, UNRESPONSIVE,
)
from runtime.frames import SILENCE, State
from runtime.supervisor.verdicts import (
    INTERRUPTED_VERDICT, Seen, deadlock, ending, lost, meta_of, timeout,
)

LIFELINES = ("A", "B")
STARTED = 100.0  # when ``start`` went out, in the tests' own seconds


def report(state="idle", status="running", error=None, waiting=(), rejected=None):
    return State(state=state, status=status, error=error, sent=1, received=1, taken=1,
                 results={}, waiting=waiting, rejected=rejected or {}, probe=None, final=False)


def seen(**facts) -> Seen:
    """Both lifelines joined at 0 s and started at ``STARTED``, heard from just now."""
    defaults = dict(endpoints={"A": "tcp://a", "B": "tcp://b"},
                    joining={"A": (0.0, 60.0), "B": (0.0, 60.0)}, started_at=STARTED,
                    beats={"A": STARTED + 1, "B": STARTED + 1})
    return Seen(LIFELINES, **{**defaults, **facts})


def never_alive(name):
    raise AssertionError(f"asked whether {name} is alive: no lifeline was silent")


def test_a_run_goes_on_while_a_lifeline_has_not_ended():
    going = seen(reports={"A": report("end", "ok"), "B": report("busy")})
    assert ending(going, STARTED + 2, {}, never_alive) is None


def test_every_lifeline_ended_is_ok_and_one_failed_fails_the_run_whatever_the_others_do():
    ended = seen(reports={"A": report("end", "ok"), "B": report("end", "ok")})
    verdict = ending(ended, STARTED + 2, {}, never_alive)
    assert (verdict.status, verdict.error) == (OK, None)
    failing = seen(reports={"A": report("busy"), "B": report("end", "failed", "B: boom")})
    verdict = ending(failing, STARTED + 2, {}, never_alive)
    assert (verdict.status, verdict.error) == (FAILED, "B: boom")
    assert verdict.beside == {"failed": {"lifeline": "B"}}


def test_a_hello_for_another_plan_fails_the_run_before_anything_else():
    wrong = seen(wrong_plan="lifeline B runs another plan", reports={
        "A": report("end", "ok"), "B": report("end", "ok")})
    verdict = ending(wrong, STARTED + 2, {"A": (-9, None)}, never_alive)
    assert (verdict.status, verdict.error) == (FAILED, "lifeline B runs another plan")


def test_a_process_that_exited_before_its_end_died_and_one_that_ended_cleanly_did_not():
    running = seen(reports={"A": report("end", "ok"), "B": report("busy")})
    assert ending(running, STARTED + 2, {"A": (0, None)}, never_alive) is None
    killed = ending(running, STARTED + 2, {"A": (0, None), "B": (-signal.SIGKILL, None)},
                    never_alive)
    assert killed.status == DIED
    assert killed.error == "lifeline B died: its process exited (signal SIGKILL)"
    assert killed.facts == {"died": {"lifeline": "B", "exit": None, "signal": 9}}
    ended_badly = ending(seen(reports={"A": report("end", "ok")}), STARTED + 2,
                         {"A": (3, "its actor raised X")}, never_alive)
    assert ended_badly.error == "lifeline A died: its actor raised X (exit status 3)"


def test_silence_past_the_heartbeat_window_is_unresponsive_if_alive_else_died():
    silent_b = seen(beats={"A": STARTED + SILENCE + 1, "B": STARTED + 0.5})
    now = STARTED + SILENCE + 1.5
    asked = []

    def alive(name):
        asked.append(name)
        return True
    verdict = ending(silent_b, now, {}, alive)
    assert asked == ["B"]
    assert verdict.status == UNRESPONSIVE
    assert verdict.facts == {"unresponsive": {"lifeline": "B", "silent": SILENCE + 1.0}}
    verdict = ending(silent_b, now, {}, lambda name: None)  # no launcher sees its process
    assert (verdict.status, verdict.error) == (DIED, f"lifeline B died: no heartbeat for "
                                                     f"{SILENCE:g} s")


def test_a_pause_of_ours_or_the_wait_for_a_join_is_no_silence():
    quiet_since_start = seen(beats={"A": 1.0, "B": 1.0})  # heard last at their hello, long
    # before the others joined: silent from the start on only
    assert ending(quiet_since_start, STARTED + SILENCE - 0.1, {}, never_alive) is None
    assert ending(quiet_since_start, STARTED + SILENCE + 60, {}, never_alive, held=True) is None
    assert ending(quiet_since_start, STARTED + SILENCE + 0.1, {},
                  lambda name: True).status == UNRESPONSIVE


def test_a_lifeline_without_hello_past_its_launchers_patience_has_not_joined():
    waiting = seen(started_at=None, endpoints={"A": "tcp://a"},
                   joining={"A": (0.0, 5.0), "B": (10.0, 30.0)})
    assert ending(waiting, 39.0, {}, never_alive) is None  # B has until 40 s
    verdict = ending(waiting, 41.0, {}, never_alive)
    assert (verdict.status, verdict.error) == (NOT_JOINED, "not joined: B (no hello within 30 s)")
    assert verdict.facts == {"not_joined": ["B"]}


def test_the_supervisors_own_endings_are_worded_as_every_mode_words_them():
    assert (INTERRUPTED_VERDICT.status, INTERRUPTED_VERDICT.error) == (INTERRUPTED, INTERRUPTED)
    assert (timeout(2.5).status, timeout(2.5).error) == (TIMEOUT, "stopped after 2.5 s (--timeout)")
    stuck = deadlock({"A": report(waiting=("A waits for m from B",)),
                      "B": report(waiting=("B waits for n from A",))})
    assert (stuck.status, stuck.error) == (
        DEADLOCK, "deadlock: no event can happen; A waits for m from B; B waits for n from A")


def test_a_run_whose_trace_vanished_is_lost_and_keeps_how_it_ended():
    verdict = lost(["t.jsonl"], "t.jsonl.parts", "t.jsonl", {"status": OK})
    assert verdict.status == LOST
    assert verdict.error.startswith("its trace t.jsonl was deleted or replaced while the run "
                                    "went: the trace it wrote is gone")
    assert verdict.facts == {"lost": {"vanished": ["t.jsonl"], "status": OK}}


def test_the_meta_says_which_run_where_each_lifeline_ran_and_what_was_refused():
    facts = seen(hosts={"B": "host-b", "A": "127.0.0.1"}, reports={
        "A": report("end", "failed", "A: boom\n  frame", rejected={"forged": 2}),
        "B": report("end", "ok")})
    facts.refused["repeated"] += 1
    verdict = ending(facts, STARTED + 2, {}, never_alive)
    meta = meta_of(verdict, facts, choreography="Review", seed=3, inputs={"n": 1}, run="r1",
                   places={"A": {"node": "n1"}})
    assert meta == {"choreography": "Review", "seed": 3, "inputs": {"n": 1}, "status": FAILED,
                    "run": "r1", "processes": True, "failed": {"lifeline": "A"},
                    "hosts": {"A": "127.0.0.1", "B": "host-b"}, "error": "A: boom",
                    "traceback": "  frame", "nodes": {"A": {"node": "n1"}},
                    "rejected_frames": {"A": {"forged": 2}},
                    "rejected_control": {"repeated": 1}}
    assert list(meta)[6:8] == ["failed", "hosts"]  # beside the status, as it always was
    assert list(meta["hosts"]) == ["A", "B"]  # in the run's order, not the launchers'
    died = ending(facts, STARTED + 2, {"B": (-signal.SIGKILL, None)}, never_alive)
    meta = meta_of(died, facts, choreography="Review", seed=3, inputs={}, run="r1", places={})
    assert list(meta)[-1] == "died" and "nodes" not in meta  # after what the run knows
