"""How a run ended, worded from facts alone (runtime.supervisor.verdicts): no socket, no process."""

import signal

import attrs

from choreo.execution.status import DIED, NOT_JOINED, UNRESPONSIVE
from runtime.supervisor.launchers import Unlaunched
from runtime.supervisor.verdicts import ProbeWaves, died, not_joined, unlaunched, unresponsive


def test_a_lifeline_killed_by_a_signal_names_it_and_keeps_no_exit_status():
    verdict = died("Tester", -signal.SIGKILL, "its process exited")
    assert verdict.status == DIED
    assert verdict.error == "lifeline Tester died: its process exited (signal SIGKILL)"
    assert verdict.facts == {"died": {"lifeline": "Tester", "exit": None, "signal": 9}}


def test_an_exit_status_is_said_and_kept_and_none_says_nothing():
    assert died("A", 3, "its process exited").error == \
        "lifeline A died: its process exited (exit status 3)"
    assert died("A", 3, "x").facts["died"]["exit"] == 3
    assert died("A", None, "no heartbeat for 5 s").error == "lifeline A died: no heartbeat for 5 s"


def test_unresponsive_and_not_joined_say_for_how_long():
    silent = unresponsive("B", 7.04)
    assert silent.status == UNRESPONSIVE and "silent for 7.0 s" in silent.error
    assert silent.facts == {"unresponsive": {"lifeline": "B", "silent": 7.0}}
    late = not_joined(["B", "C"], 2.5)
    assert (late.status, late.error, late.facts) == \
        (NOT_JOINED, "not joined: B, C (no hello within 2.5 s)", {"not_joined": ["B", "C"]})


def test_an_unlaunched_lifeline_that_died_first_is_died_else_not_started():
    assert unlaunched(Unlaunched(dead={"A": "no node can take it"})).status == DIED
    never = unlaunched(Unlaunched(late=["A"], waited=4.0))
    assert never.error == "not joined: A (not started within 4 s)"


@attrs.frozen
class Report:
    """What ``quiet`` reads of a lifeline's report."""
    state: str = "idle"
    waiting: tuple = ("m",)
    sent: int = 1
    received: int = 1
    probe: int = 0


def test_deadlock_needs_a_whole_wave_of_quiet_answers_with_unchanged_counts():
    waves, sent = ProbeWaves(), []
    quiet = [Report(), Report()]
    assert not waves.deadlocked(quiet, sent.append)  # a wave goes out
    assert sent == [1]
    assert not waves.deadlocked(quiet, sent.append)  # its answers are not in yet
    answered = [Report(probe=1), Report(probe=1)]
    assert waves.deadlocked(answered, sent.append)
    assert not waves.deadlocked(quiet, sent.append)  # a new wave after a verdict
    moved = [Report(probe=2, sent=2, received=2), Report(probe=2)]
    assert not waves.deadlocked(moved, sent.append)  # counts moved since it left
    assert not waves.deadlocked([Report(state="busy"), Report()], sent.append)
    assert sent == [1, 2]
