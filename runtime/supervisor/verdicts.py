"""How a run over processes ended, worded from facts alone: no socket, no process.

The supervisor watches sockets and processes; what it concludes — a lifeline died,
is unresponsive, never joined, or every lifeline waits on a message nobody sends —
is decided and worded here, so each verdict can be tested without ZeroMQ.
"""

from __future__ import annotations

import itertools
import shlex
import signal
from collections.abc import Callable, Sequence

import attrs

from choreo.execution import DIED, LOST, NOT_JOINED, UNRESPONSIVE
from runtime.frames import quiet
from .launchers import Unlaunched


@attrs.frozen
class Verdict:
    """A run's end before the supervisor adds what it knows of the whole run: its status,
    the line ``cpl run`` prints, and the facts the trace's ``meta`` keeps under it."""

    status: str
    error: str
    facts: dict = attrs.field(factory=dict)


def died(name: str, code: int | None, why: str) -> Verdict:
    """``code`` is the exit status, negative for a signal (as ``subprocess`` says it)."""
    signal_number = -code if code is not None and code < 0 else None
    said = (f" (signal {signal.Signals(signal_number).name})" if signal_number
            else f" (exit status {code})" if code else "")
    return Verdict(DIED, f"lifeline {name} died: {why}{said}",
                   {"died": {"lifeline": name, "exit": None if signal_number else code,
                             "signal": signal_number}})


def unresponsive(name: str, silent: float) -> Verdict:
    """Its process is there but says nothing (an action holding the interpreter's lock,
    SIGSTOP): not dead, and the run cannot go on with it either."""
    return Verdict(UNRESPONSIVE, f"lifeline {name} is unresponsive: its process is alive but "
                   f"silent for {silent:.1f} s (an action holding the interpreter, or a "
                   f"stopped process)", {"unresponsive": {"lifeline": name,
                                                        "silent": round(silent, 1)}})


def not_joined(names: Sequence[str], waited: float, what: str = "no hello") -> Verdict:
    return Verdict(NOT_JOINED, f"not joined: {', '.join(names)} ({what} within {waited:g} s)",
                   {"not_joined": list(names)})


def unlaunched(failure: Unlaunched) -> Verdict:
    """A launcher could not bring its lifelines up: one died first, or some were never
    placed (a Ray actor no node can take)."""
    for name, why in failure.dead.items():
        return died(name, None, why)
    return not_joined(failure.late, failure.waited, "not started")


def lost(vanished: Sequence[str], folder: str, trace: str | None, meta: dict) -> Verdict:
    """A run whose ``vanished`` files (its parts ``folder``, their lock, its ``trace``) are
    gone or replaced by the time it ended (``meta``): whatever the run did, its record is
    not whole, so it cannot say ``ok`` (runtime.supervisor.parts.Claim tells what vanished)."""
    parts_gone = any(path != trace for path in vanished)
    what = " and ".join(dict.fromkeys(
        f"its trace {trace}" if path == trace else f"its parts {folder}" for path in vanished))
    why = (f"the events its lifelines logged there may not all be in {trace or 'the trace'}"
           if parts_gone else
           f"the trace it wrote is gone; its lifelines' logs are kept: `cpl merge "
           f"{shlex.quote(folder)} -o {shlex.quote(trace or '')} --force` rebuilds it")
    ended = meta.get("status")
    return Verdict(LOST, f"{what} {'were' if parts_gone else 'was'} deleted or replaced "
                   f"while the run went: {why} (the run itself ended {ended})",
                   {"lost": {"vanished": list(vanished), "status": ended,
                             **({"error": meta["error"]} if meta.get("error") else {})}})


def before_lost(meta: dict) -> dict:
    """The ``meta`` a ``lost`` run ended with before it was found lost: what ``cpl merge``
    of its parts, kept whole, says."""
    was = meta.get("lost")
    if not isinstance(was, dict):
        return meta
    ended = {key: value for key, value in meta.items() if key not in ("lost", "error")}
    ended["status"] = was.get("status", meta.get("status"))
    if was.get("error"):
        ended["error"] = was["error"]
    return ended


class ProbeWaves:
    """Deadlock by Mattern's counting in two waves: the reports are ``quiet``, a probe wave
    asks every lifeline again, and every answer to it is quiet with the same counts."""

    def __init__(self) -> None:
        self.numbers = itertools.count(1)
        self.out: tuple[int, tuple] | None = None  # a wave out, and the counts it checks

    def deadlocked(self, reports: Sequence, probe: Callable[[int], None]) -> bool:
        """Whether ``reports`` (one a lifeline, ``None`` where none came yet) show a
        deadlock; ``probe(wave)`` sends a new wave to every lifeline."""
        counts = quiet(reports)
        if counts is None:
            self.out = None
            return False
        if self.out is None:
            wave = next(self.numbers)
            probe(wave)
            self.out = (wave, counts)
            return False
        wave, before = self.out
        if counts != before:  # something happened since the wave left: start another
            self.out = None
            return False
        if any(r.probe != wave for r in reports):
            return False  # not every answer is in yet
        self.out = None
        return True
