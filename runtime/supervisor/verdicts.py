"""How a run over processes ended, decided and worded from facts alone: no socket, no process.

The supervisor watches sockets and processes and writes down what it learns in a
:class:`Seen` (each lifeline's last report, when it was last heard, who said hello,
whose hello named another plan); launchers say which processes ended and which are
alive.  From those facts :func:`ending` concludes whether the run is over — ok, failed,
a lifeline died, is unresponsive or never joined — the supervisor adds its own
endings (interrupted, timeout, deadlock by :class:`ProbeWaves`, lost by its claim),
and :func:`run_meta_of` words the ``meta`` the trace ends with.  Each verdict can so be
tested without ZeroMQ or a process.
"""

from __future__ import annotations

import collections
import itertools
import shlex
import signal
from collections.abc import Callable, Mapping, Sequence

import attrs

from choreo.execution import (
    DEADLOCK, DIED, FAILED, INTERRUPTED, LOST, NOT_JOINED, OK, TIMEOUT, UNRESPONSIVE, deadlocked,
    run_meta, timed_out,
)
from runtime.frames import SILENCE, State, quiet
from .launchers import Unlaunched


@attrs.frozen
class Verdict:
    """A run's end before the supervisor adds what it knows of the whole run: its status,
    the line ``cpl run`` prints (none for ok), and the facts the trace's ``meta`` keeps
    under it — ``beside`` the status (the lifeline that failed the run), or after what
    the supervisor knows of the run (``facts``: who died, who never joined)."""

    status: str
    error: str | None = None
    facts: dict = attrs.field(factory=dict)
    beside: dict = attrs.field(factory=dict)


OK_VERDICT = Verdict(OK)
INTERRUPTED_VERDICT = Verdict(INTERRUPTED, INTERRUPTED)  # Ctrl-C or SIGTERM, counted


def failed(name: str, error: str | None) -> Verdict:
    """One lifeline failed (its final report says why): the run cannot go on, whatever the
    others do."""
    return Verdict(FAILED, error, beside={"failed": {"lifeline": name}})


def timeout(seconds: float) -> Verdict:
    return Verdict(TIMEOUT, timed_out(seconds))


def deadlock(reports: Mapping[str, State]) -> Verdict:
    """Every lifeline waits on a message nobody sends: what each waits for, said."""
    return Verdict(DEADLOCK, deadlocked(w for r in reports.values() for w in r.waiting))


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


@attrs.define
class Seen:
    """What the supervisor has learnt of its lifelines so far, kept as the run goes: the
    facts :func:`ending` and :func:`meta_of` read (plain data: a test writes them down)."""

    lifelines: tuple[str, ...]
    reports: dict[str, State] = attrs.field(factory=dict)  # each one's last report
    beats: dict[str, float] = attrs.field(factory=dict)  # when each was last heard
    routes: dict[str, bytes] = attrs.field(factory=dict)  # its control socket, from its hello
    endpoints: dict[str, str] = attrs.field(factory=dict)  # its inbox, from a hello accepted
    joining: dict[str, tuple[float, float]] = attrs.field(factory=dict)  # (launched, patience)
    hosts: dict[str, str] = attrs.field(factory=dict)  # where its launcher placed it
    started_at: float | None = None  # when ``start`` went out, every hello heard
    wrong_plan: str | None = None  # why a lifeline's hello was refused, if one was
    refused: collections.Counter = attrs.field(factory=collections.Counter)  # frames, by reason


def ending(seen: Seen, now: float, exits: Mapping[str, tuple[int | None, str | None]],
           alive: Callable[[str], object], held: bool = False) -> Verdict | None:
    """How the run ended by ``now``, or None while it goes on.  ``exits``: the lifelines
    whose process ended, with its exit status and the launcher's why, in the launchers'
    order; ``alive(name)``: whether a launcher sees a silent lifeline's process (asked of
    a silent one only: Ray answers with a call); ``held``: the lifelines were paused by us,
    so their silence says nothing."""
    if seen.wrong_plan is not None:
        return Verdict(FAILED, seen.wrong_plan)
    for name, (code, why) in exits.items():
        report = seen.reports.get(name)
        if report is None or report.state != "end" or code != 0:
            return died(name, code, why or "its process exited")
    if seen.started_at is None:
        late = [name for name in seen.lifelines if name not in seen.endpoints
                and now - seen.joining[name][0] > seen.joining[name][1]]
        if late:
            return not_joined(late, max(seen.joining[name][1] for name in late))
        return None
    for name in () if held else seen.lifelines:  # silent since the start: waiting for a join
        silent = now - max(seen.beats.get(name, now), seen.started_at)  # was no silence
        if silent > SILENCE:
            if alive(name):
                return unresponsive(name, silent)
            return died(name, None, f"no heartbeat for {SILENCE:g} s")
    ends = [seen.reports.get(name) for name in seen.lifelines]
    failing = [n for n, r in zip(seen.lifelines, ends) if r is not None and r.status == FAILED]
    if failing:
        return failed(failing[0], seen.reports[failing[0]].error)
    if all(r is not None and r.state == "end" for r in ends):
        return OK_VERDICT
    return None


def meta_of(verdict: Verdict, seen: Seen, *, choreography: str, seed, inputs: dict, run: str,
            places: Mapping[str, dict]) -> dict:
    """The trace's ``meta`` of a run over processes that ended so (``run_meta``): which run,
    where each lifeline ran (``hosts``, and ``nodes`` on Ray), the frames refused."""
    meta = run_meta(choreography, seed, inputs, verdict.status, verdict.error, run=run,
                    processes=True, **verdict.beside,
                    hosts={name: seen.hosts[name] for name in seen.lifelines
                           if name in seen.hosts})
    if places:
        meta["nodes"] = dict(places)
    rejected = {name: r.rejected for name, r in seen.reports.items() if r.rejected}
    if rejected:
        meta["rejected_frames"] = rejected
    if seen.refused:
        meta["rejected_control"] = dict(seen.refused)
    meta.update(verdict.facts)
    return meta


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
