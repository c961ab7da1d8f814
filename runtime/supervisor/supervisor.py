"""``cpl run`` over processes: one OS process per lifeline, every resource in one scope.

The supervisor binds a ROUTER control socket and has its launchers
(:mod:`runtime.supervisor.launchers`: child processes here, lifelines joining from other
hosts) start every lifeline, each with its connection.  It pings each
lifeline from its ``hello`` on, sends ``start`` with all inbox addresses once
every lifeline said hello, and then watches (every control frame taken from
the lifeline whose key signed it, :mod:`runtime.frames.control`):

* a lifeline whose process exits, or whose heartbeats stop where no launcher
  sees its process, has **died**; one whose process is alive but silent past
  the heartbeat window is **unresponsive**;
* a lifeline that has not said hello when its launcher's patience is over
  has **not joined**;
* every lifeline ended → **ok**, or **failed** if one of them failed;
* all idle and as many messages received as sent, twice in a row with
  nothing else said in between (a probe wave) → **deadlock**;
* ``--timeout`` → **timeout**; Ctrl-C or SIGTERM → **interrupted**.

All along it merges the logs into the trace (:mod:`cpl.trace.merge`, the logs
read as they grow), pausing the lifelines it can while the merge is behind.
Then it says ``stop``, hears the lifelines' last words for at most
``STOP_GRACE`` (a lifeline inside a blocking action cannot answer: its
launcher ends it), merges what is left, and returns ``meta`` saying how the
run ended (:mod:`runtime.supervisor.verdicts` decides it from what was seen), with
the results the merged events leave (:mod:`runtime.supervisor.results`).
Ctrl-C and SIGTERM are counted, not raised (:mod:`runtime.supervisor.interrupts`).  The
logs live in the run's parts folder (:mod:`runtime.supervisor.parts`, beside the trace),
with what ``cpl merge`` needs to rebuild the trace should the supervisor
vanish first.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
import time
from typing import Any

import attrs
import zmq

from choreo.execution import DIED, UNRESPONSIVE, fingerprint
from cpl.errors import TraceError
from cpl.trace import incomplete
from runtime.frames import (
    BEAT, MAX_CONTROL, SHIPPING, STOP_GRACE, SUPERVISOR_SILENCE, Beat, Hello, KeyRing, Keys, Log,
    Probe, Refused, Start, State, Stop, Ticket, authenticator, heard, secure_server, send,
)
from .following import Following
from .interrupts import Interrupts
from .launchers import Launcher, LocalProcesses, Unlaunched
from .parts import Claim, Logs, Parts
from .results import LastValues
from .verdicts import (
    INTERRUPTED_VERDICT, ProbeWaves, Seen, Verdict, deadlock, ending, meta_of, timeout, unlaunched,
)

HEAR_SLICE = 0.05  # seconds of control frames taken at once while the run goes


@attrs.frozen
class RunSpec:
    """Which run this is and how it goes, fixed before it starts: what every lifeline's
    ticket and the trace's ``meta`` say of it."""

    plan: Any  # choreo.execution.Plan
    choreography: str  # its file, absolute: the lifelines load it
    choreography_name: str | None
    inputs: dict
    seed: int
    timeout: float | None
    host: str  # the address the supervisor listens on
    secure: bool
    parts: str | None  # the folder for the lifelines' logs, if not a temporary one
    run_id: str  # every frame holds it
    fingerprint: str  # of the plan every lifeline must load

    @property
    def lifelines(self) -> tuple[str, ...]:
        return self.plan.lifelines


class Supervisor:
    """One run over processes, its lifelines placed by ``launchers`` (default: all here).
    What it holds: the run's ``spec``; the ``launchers``; what it has ``seen`` of the
    lifelines (:class:`Seen`, the facts its verdict reads); their ``logs``; the parts'
    ``claim``; and, while it runs, its ``keys``, ``interrupts`` and ``following``."""

    def __init__(self, plan, choreography: str, choreography_name: str | None, inputs: dict,
                 seed: int, *, secure: bool = True, timeout: float | None = None,
                 host: str = "127.0.0.1", launchers: list[Launcher] | None = None,
                 parts: str | None = None, claim: Claim | None = None):
        self.spec = RunSpec(plan, os.path.abspath(choreography), choreography_name, inputs,
                            seed, timeout, host, secure, parts,
                            run_id=secrets.token_hex(8),  # 64 bits name a run well enough
                            fingerprint=fingerprint(plan.choreography, inputs, seed))
        lifelines = self.spec.lifelines
        self.launchers = launchers if launchers is not None else [LocalProcesses(lifelines)]
        placed = [name for launcher in self.launchers for name in launcher.lifelines]
        if sorted(placed) != sorted(lifelines):
            raise ValueError(f"the launchers place {placed}: not every lifeline once")
        self.claim = claim  # the parts' lock, and what must still be there at the end
        self.seen = Seen(tuple(lifelines))
        self.waves = ProbeWaves()
        self.logs = Logs("", lifelines)  # its folder made in the run's scope
        self.keys: dict | None = None  # made in the run's scope: a launcher may make some

    @property
    def started_at(self) -> float | None:
        """When ``start`` went out (every lifeline said hello), or None."""
        return self.seen.started_at

    def run(self, write, interrupts: Interrupts | None = None, tell=None) -> dict:
        """Run to the end, writing each merged event with ``write``; returns the meta.

        The logs are merged into the trace as the run goes (``Following``), so what is
        left to merge when it stops is small.  SIGINT and SIGTERM are counted by
        ``interrupts`` (its caller's, which outlasts this call; else one of ours), never
        raised: the first ends the run, one during the stop hurries it, one during the
        final merge cuts that short (``meta.unmerged``: the parts hold more).  A final merge
        that cannot place every event (a log damaged or cut) ends the run ``incomplete``
        (``cpl.trace.unplaced``), whatever its own end, which ``meta.incomplete`` keeps.  A
        lifeline that died or is unresponsive is named at once, ``tell(meta)``, before the
        stop and the last merge, which may take seconds.  A run whose parts or trace
        vanished meanwhile (``claim``) ends ``lost``, whatever it did: its record is not whole.

        Everything the run holds is in the one scope below and is released on every
        path (an error of ours), in reverse order: the ZAP handler, the ZeroMQ context
        with its sockets, the lifelines (ended by their launchers) and the connection
        files, the logs read, the run's temp folder.  The launchers come first, in a
        process of one thread (``LocalProcesses`` forks there); then the keys (a Ray
        actor makes its own pair), before anything binds.  The ``parts`` folder outlives
        the run: its caller removes it once the trace is whole."""
        began = time.monotonic()  # --timeout counts from here, the lifelines' start-up included
        with contextlib.ExitStack() as scope:
            if interrupts is None:
                interrupts = scope.enter_context(Interrupts())
            self.interrupts = interrupts
            spec = self.spec
            self.logs.folder = spec.parts or scope.enter_context(
                tempfile.TemporaryDirectory(prefix="cpl-run-", ignore_cleanup_errors=True))
            self._keep()
            last = LastValues(spec.lifelines, spec.plan.header(spec.inputs).get("init"),
                              spec.plan.choreography.results)
            self.following = Following({name: self.logs.of(name) for name in spec.lifelines},
                                       last.seeing(write), self.launchers, scope)
            control = None
            try:
                for launcher in self.launchers:  # before any thread or context: one may fork
                    self._unless_interrupted()
                    scope.enter_context(launcher)
                    launcher.ready(spec.plan)
                context = zmq.Context()
                scope.callback(context.destroy, 0)  # closes every socket left (linger 0)
                control = context.socket(zmq.ROUTER)
                control.linger = 0
                control.maxmsgsize = MAX_CONTROL
                control.rcvhwm = SHIPPING  # what a stop must still merge stays small
                if spec.secure:
                    self.keys = Keys.for_run(spec.lifelines, {
                        name: key for launcher in self.launchers
                        for name, key in launcher.public_keys().items()})
                    scope.callback(authenticator(context, KeyRing(self.keys[""].lifelines)).stop)
                secure_server(control, self.keys[""] if self.keys else None)
                port = control.bind_to_random_port(f"tcp://{spec.host}")
                for launcher in self.launchers:
                    self._unless_interrupted()
                    self._launch(launcher, f"tcp://{spec.host}:{port}")
                meta = self._watch(control, began)
            except KeyboardInterrupt:  # ours, raised where it is safe (_unless_interrupted)
                meta = self._meta(INTERRUPTED_VERDICT)
            except Unlaunched as failure:
                meta = self._meta(unlaunched(failure))
            if tell is not None and meta["status"] in (DIED, UNRESPONSIVE):
                tell(meta)  # print first, merge after
            ended = interrupts.count
            self._stop(control, lambda: interrupts.since(ended))
            merging = interrupts.count
            whole = self.following.merging.step(lambda: interrupts.since(merging))
            if self.logs.unlogged:
                meta["unlogged"] = dict(self.logs.unlogged)
            placed = self.following.merging.placed(whole=whole)
            found = placed.pop("incomplete", None)
            meta.update(placed)
            meta["results"] = last.results()
            if found is not None:  # the parts, if kept, hold what could not be placed
                meta = incomplete(meta, found, spec.parts)
            if not whole:
                meta["unmerged"] = True
        return meta if self.claim is None else self.claim.checked(meta)

    def _unless_interrupted(self) -> None:
        """A signal counted already ends the run here, before the next stage."""
        if self.interrupts.count:
            raise KeyboardInterrupt

    def _keep(self) -> None:
        """Make the logs' folder and write what ``cpl merge`` needs to rebuild the trace
        without us (``runtime.supervisor.parts``), before any lifeline starts."""
        spec, folder = self.spec, self.logs.folder
        try:
            os.makedirs(folder, exist_ok=True)
            Parts.of_run(folder, spec.plan, spec.inputs, spec.seed, spec.run_id).keep()
        except OSError as error:
            raise TraceError(f"cannot keep the run's logs: {error.strerror or error}",
                             folder) from None

    def _launch(self, launcher: Launcher, address: str) -> None:
        """Start ``launcher``'s lifelines from drafts that log to this host's disk and bind
        on the supervisor's address; the launcher may place them elsewhere."""
        spec = self.spec
        drafts = {name: Ticket(spec.run_id, name, address, spec.host, spec.choreography,
                               spec.choreography_name, spec.inputs, spec.seed,
                               spec.fingerprint, self.logs.of(name),
                               self.keys[name] if self.keys else None)
                  for name in launcher.lifelines}
        handed = launcher.launch(drafts)
        launched = time.monotonic()
        for name, ticket in handed.items():
            self.seen.hosts[name] = ticket.host
            self.seen.joining[name] = (launched, launcher.patience)
            if not ticket.log:
                self.logs.shipping.add(name)

    def _watch(self, control, began: float) -> dict:
        """Until the run ends: ``start`` once every lifeline said hello; pings to each from
        its hello on (a lifeline waiting for a late join knows we live); an end looked for
        after every frame and every 0.1 s; the logs merged as they grow (``Following``,
        in slices: the frames are heard meanwhile)."""
        seen, timeout_after = self.seen, self.spec.timeout
        pinged = time.monotonic()
        poller = zmq.Poller()
        poller.register(control, zmq.POLLIN)
        woken = self.interrupts.wake_fd()
        if woken is not None:
            poller.register(woken, zmq.POLLIN)
        while True:
            if dict(poller.poll(0 if self.following.behind else 100)).get(control) and \
                    not self.following.waiting(SUPERVISOR_SILENCE / 4):  # a shipment waits
                until = time.monotonic() + HEAR_SLICE
                self._hear(control, seen.endpoints,  # (the lambda is used in this iteration only)
                           lambda: self.interrupts.count or time.monotonic() > until)  # noqa: B023
            if self.interrupts.count:
                self.interrupts.drain()
                return self._meta(INTERRUPTED_VERDICT)
            now = time.monotonic()
            if self.following.keep_up(now):
                self._forgive_pause()
            if seen.started_at is None and len(seen.endpoints) == len(seen.lifelines):
                for name in seen.lifelines:
                    self._send(control, name, Start(seen.endpoints))
                seen.started_at = now
            if now - pinged > BEAT:
                for name in seen.endpoints:
                    self._send(control, name, Beat())
                pinged = now
            ended = self._ended(now)
            if ended is not None:
                return ended
            if timeout_after is not None and now > began + timeout_after:
                return self._meta(timeout(timeout_after))
            reports = [seen.reports.get(name) for name in seen.lifelines]
            if self.waves.deadlocked(reports, lambda wave: self._probe(control, wave)):
                return self._meta(deadlock(seen.reports))

    def _forgive_pause(self) -> None:
        """The lifelines were paused (``Following.hold``): their silence was no death."""
        now = time.monotonic()
        for name in self.seen.beats:
            self.seen.beats[name] = now

    def _stop(self, control, hurry) -> None:
        """Say ``stop``; hear the last words (final reports, shipped log lines) of every
        lifeline that said hello, for at most ``STOP_GRACE`` or until ``hurry()``, merging
        meanwhile; the launchers end the rest."""
        if self.following.hold(False):  # a paused lifeline could not say its last words
            self._forgive_pause()
        if control is not None:
            deadline = time.monotonic() + STOP_GRACE
            for name in self.seen.lifelines:
                self._send(control, name, Stop())
            self._last_words(control, deadline, hurry)
        for launcher in self.launchers:
            launcher.stop()

    def _last_words(self, control, deadline: float, hurry) -> None:
        """Until ``deadline``, or until every lifeline that said hello (the others cannot
        hear ``stop``) has given its final report or ended, or ``hurry()``.  A lifeline
        that ships its log is done only at its final report, which follows its last lines
        on the same socket (its process may end, a Ray actor's call return, with lines
        still on the way), and while its lines keep coming the deadline moves on, within
        ``SUPERVISOR_SILENCE``."""
        seen, logs = self.seen, self.logs
        limit = time.monotonic() + SUPERVISOR_SILENCE
        while time.monotonic() < deadline and not hurry():
            ended = {name: code for launcher in self.launchers
                     for name, code in launcher.ended().items()}
            finished = {name for name, code in ended.items()
                        if name not in logs.shipping or code != 0} | \
                {name for name, report in seen.reports.items() if report.final}
            if finished >= set(seen.endpoints):
                break
            if control.poll(20):
                shipped = logs.shipped
                self._hear(control, {}, hurry)
                if logs.shipped != shipped:
                    deadline = min(max(deadline, time.monotonic() + STOP_GRACE), limit)
            self.following.merge_for(0.02)
        self._hear(control, {}, hurry)  # what came with the last report

    def _hear(self, control, endpoints: dict, enough=None) -> None:
        """Take every control frame waiting now, each from the lifeline whose key signed it
        (``control.heard``); count the refused ones.  Until ``enough()``, if given: lifelines
        that ship their logs (Ray's actors) keep this socket full as long as the run goes,
        and a signal must still be seen (it was not, for 50 s)."""
        seen, spec = self.seen, self.spec
        for said in heard(control, seen.lifelines, signed=spec.secure, enough=enough):
            if isinstance(said, Refused):
                seen.refused[said.reason] += 1
                continue
            name, message = said.lifeline, said.message
            if isinstance(message, Hello):
                if name in seen.routes:  # its one hello was heard: this is someone else
                    seen.refused["repeated"] += 1
                    continue
                seen.routes[name] = said.route
                if message.plan != spec.fingerprint:
                    seen.wrong_plan = (f"lifeline {name} runs another plan: it loaded "
                                       f"{message.plan}, this run's is {spec.fingerprint} "
                                       f"(its choreography file differs from "
                                       f"{spec.choreography})")
                    continue
                endpoints[name] = message.endpoint
            elif isinstance(message, State):
                seen.reports[name] = message
            elif isinstance(message, Log):
                if name not in self.logs.shipping:  # a local lifeline's log is on disk already
                    seen.refused["unexpected"] += 1
                    continue
                self.logs.append(name, message.lines)
            seen.beats[name] = time.monotonic()

    def _probe(self, control, wave: int) -> None:
        for name in self.seen.lifelines:
            self._send(control, name, Probe(wave))

    def _send(self, control, name: str, message) -> None:
        """To the control socket ``name`` said hello from (its key checked); nothing before."""
        route = self.seen.routes.get(name)
        if route is not None:
            send(control, message, route)

    def _ended(self, now: float) -> dict | None:
        """The run's meta if it ended by ``now`` (``verdicts.ending``), else None: which
        processes ended, and whether a silent one is alive, asked of the launchers."""
        exits = {name: (code, launcher.why(name)) for launcher in self.launchers
                 for name, code in launcher.ended().items()}
        verdict = ending(self.seen, now, exits, held=self.following.held,
                         alive=lambda name: any(launcher.alive(name)
                                                for launcher in self.launchers))
        return None if verdict is None else self._meta(verdict)

    def _meta(self, verdict: Verdict) -> dict:
        spec = self.spec
        return meta_of(verdict, self.seen, choreography=spec.plan.name, seed=spec.seed,
                       inputs=spec.inputs, run=spec.run_id,
                       places={name: where for launcher in self.launchers
                               for name, where in launcher.places().items()})
