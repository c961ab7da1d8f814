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
run ended, with the results the merged events leave (:mod:`runtime.supervisor.results`).
Ctrl-C and SIGTERM are counted, not raised (:mod:`runtime.supervisor.interrupts`).  The
logs live in the run's parts folder (:mod:`runtime.supervisor.parts`, beside the trace),
with what ``cpl merge`` needs to rebuild the trace should the supervisor
vanish first.
"""

from __future__ import annotations

import collections
import contextlib
import os
import secrets
import tempfile
import time

import zmq

from choreo.execution import fingerprint
from choreo.execution import (
    DEADLOCK, DIED, FAILED, INTERRUPTED, OK, TIMEOUT, UNRESPONSIVE, deadlocked, run_meta, timed_out,
)
from cpl.errors import TraceError
from cpl.trace import incomplete
from runtime.frames import Ticket, Keys, KeyRing, authenticator, secure_server
from runtime.frames import (
    BEAT, MAX_CONTROL, SHIPPING, SILENCE, STOP_GRACE, SUPERVISOR_SILENCE, Beat, Hello, Log, Probe, Refused, Start, State, Stop, heard, send,
)
from .following import Following
from .interrupts import Interrupts
from .launchers import Launcher, LocalProcesses, Unlaunched
from .parts import Claim, Parts, log_of
from .results import LastValues
from .verdicts import ProbeWaves, Verdict, died, not_joined, unlaunched, unresponsive

HEAR_SLICE = 0.05  # seconds of control frames taken at once while the run goes


class Supervisor:
    """One run over processes, its lifelines placed by ``launchers`` (default: all here)."""

    def __init__(self, plan, choreography: str, choreography_name: str | None, inputs: dict,
                 seed: int, *, secure: bool = True, timeout: float | None = None, host: str = "127.0.0.1",
                 launchers: list[Launcher] | None = None, parts: str | None = None,
                 claim: Claim | None = None):
        self.plan, self.inputs, self.seed, self.timeout = plan, inputs, seed, timeout
        self.choreography, self.host = os.path.abspath(choreography), host
        self.choreography_name = choreography_name
        self.run_id = secrets.token_hex(8)  # 64 bits name a run well enough; every frame holds it
        self.lifelines = plan.lifelines
        self.launchers = launchers if launchers is not None else [LocalProcesses(self.lifelines)]
        placed = [name for launcher in self.launchers for name in launcher.lifelines]
        if sorted(placed) != sorted(self.lifelines):
            raise ValueError(f"the launchers place {placed}: not every lifeline once")
        self.secure = secure
        self.keys: dict | None = None  # made in the run's scope: a launcher may make some
        self.fingerprint = fingerprint(plan.choreography, inputs, seed)
        self.reports: dict[str, State] = {}
        self.beats: dict[str, float] = {}
        self.routes: dict[str, bytes] = {}  # lifeline -> its control socket, from its hello
        self.refused: collections.Counter = collections.Counter()  # control frames, by reason
        self.wrong_plan: str | None = None  # why a lifeline's hello was refused, if one was
        self.waves = ProbeWaves()
        self.endpoints: dict[str, str] = {}  # lifeline -> its inbox, from its hello
        self.connections: dict[str, Ticket] = {}  # as the launchers handed them out
        self.shipping: set[str] = set()  # lifelines that send their log lines to us
        self.joining: dict[str, tuple[float, float]] = {}  # lifeline -> (launched, patience)
        self.started_at: float | None = None
        self.parts = parts  # the folder for the lifelines' logs, if not a temporary one
        self.claim = claim  # its lock, and what must still be there at the end (runtime.supervisor.parts)
        self.folder = ""  # the folder of the lifelines' logs, while the run goes
        self.unlogged: collections.Counter = collections.Counter()  # lost shipped lines
        self.shipped = 0  # shipped log lines heard

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
            self.folder = self.parts or scope.enter_context(
                tempfile.TemporaryDirectory(prefix="cpl-run-", ignore_cleanup_errors=True))
            self._keep()
            last = LastValues(self.lifelines, self.plan.header(self.inputs).get("init"),
                              self.plan.choreography.results)
            self.following = Following({name: self._log(name) for name in self.lifelines},
                                       last.seeing(write), self.launchers, scope)
            control = None
            try:
                for launcher in self.launchers:  # before any thread or context: one may fork
                    self._unless_interrupted()
                    scope.enter_context(launcher)
                    launcher.ready(self.plan)
                context = zmq.Context()
                scope.callback(context.destroy, 0)  # closes every socket left (linger 0)
                control = context.socket(zmq.ROUTER)
                control.linger = 0
                control.maxmsgsize = MAX_CONTROL
                control.rcvhwm = SHIPPING  # what a stop must still merge stays small
                if self.secure:
                    self.keys = Keys.for_run(self.lifelines, {
                        name: key for launcher in self.launchers
                        for name, key in launcher.public_keys().items()})
                    scope.callback(authenticator(context, KeyRing(self.keys[""].lifelines)).stop)
                secure_server(control, self.keys[""] if self.keys else None)
                port = control.bind_to_random_port(f"tcp://{self.host}")
                for launcher in self.launchers:
                    self._unless_interrupted()
                    self._launch(launcher, f"tcp://{self.host}:{port}")
                meta = self._watch(control, began)
            except KeyboardInterrupt:  # ours, raised where it is safe (_unless_interrupted)
                meta = self._meta(INTERRUPTED, INTERRUPTED)
            except Unlaunched as failure:
                meta = self._verdict(unlaunched(failure))
            if tell is not None and meta["status"] in (DIED, UNRESPONSIVE):
                tell(meta)  # print first, merge after
            ended = interrupts.count
            self._stop(control, lambda: interrupts.since(ended))
            merging = interrupts.count
            whole = self.following.merging.step(lambda: interrupts.since(merging))
            if self.unlogged:
                meta["unlogged"] = dict(self.unlogged)
            placed = self.following.merging.placed(whole=whole)
            found = placed.pop("incomplete", None)
            meta.update(placed)
            meta["results"] = last.results()
            if found is not None:  # the parts, if kept, hold what could not be placed
                meta = incomplete(meta, found, self.parts)
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
        try:
            os.makedirs(self.folder, exist_ok=True)
            Parts.of_run(self.folder, self.plan, self.inputs, self.seed, self.run_id).keep()
        except OSError as error:
            raise TraceError(f"cannot keep the run's logs: {error.strerror or error}",
                             self.folder) from None

    def _log(self, name: str) -> str:
        return log_of(self.folder, self.lifelines.index(name))

    def _launch(self, launcher: Launcher, address: str) -> None:
        """Start ``launcher``'s lifelines from drafts that log to this host's disk and bind
        on the supervisor's address; the launcher may place them elsewhere."""
        drafts = {name: Ticket(self.run_id, name, address, self.host, self.choreography,
                                   self.choreography_name, self.inputs, self.seed,
                                   self.fingerprint, self._log(name),
                                   self.keys[name] if self.keys else None)
                  for name in launcher.lifelines}
        handed = launcher.launch(drafts)
        launched = time.monotonic()
        for name, connection in handed.items():
            self.connections[name] = connection
            self.joining[name] = (launched, launcher.patience)
            if not connection.log:
                self.shipping.add(name)

    def _watch(self, control, began: float) -> dict:
        """Until the run ends: ``start`` once every lifeline said hello; pings to each from
        its hello on (a lifeline waiting for a late join knows we live); an end looked for
        after every frame and every 0.1 s; the logs merged as they grow (``Following``,
        in slices: the frames are heard meanwhile)."""
        deadline = None if self.timeout is None else began + self.timeout
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
                self._hear(control, self.endpoints,
                           lambda: self.interrupts.count or time.monotonic() > until)
            if self.interrupts.count:
                self.interrupts.drain()
                return self._meta(INTERRUPTED, INTERRUPTED)
            now = time.monotonic()
            if self.following.keep_up(now):
                self._forgive_pause()
            if self.started_at is None and len(self.endpoints) == len(self.lifelines):
                for name in self.lifelines:
                    self._send(control, name, Start(self.endpoints))
                self.started_at = now
            if now - pinged > BEAT:
                for name in self.endpoints:
                    self._send(control, name, Beat())
                pinged = now
            ended = self._ended(now)
            if ended is not None:
                return ended
            if deadline is not None and now > deadline:
                return self._meta(TIMEOUT, timed_out(self.timeout))
            reports = [self.reports.get(name) for name in self.lifelines]
            if self.waves.deadlocked(reports, lambda wave: self._probe(control, wave)):
                return self._meta(DEADLOCK, deadlocked(w for r in self.reports.values()
                                                       for w in r.waiting))

    def _forgive_pause(self) -> None:
        """The lifelines were paused (``Following.hold``): their silence was no death."""
        now = time.monotonic()
        for name in self.beats:
            self.beats[name] = now

    def _stop(self, control, hurry) -> None:
        """Say ``stop``; hear the last words (final reports, shipped log lines) of every
        lifeline that said hello, for at most ``STOP_GRACE`` or until ``hurry()``, merging
        meanwhile; the launchers end the rest."""
        if self.following.hold(False):  # a paused lifeline could not say its last words
            self._forgive_pause()
        if control is not None:
            deadline = time.monotonic() + STOP_GRACE
            for name in self.lifelines:
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
        limit = time.monotonic() + SUPERVISOR_SILENCE
        while time.monotonic() < deadline and not hurry():
            ended = {name: code for launcher in self.launchers
                     for name, code in launcher.ended().items()}
            finished = {name for name, code in ended.items()
                        if name not in self.shipping or code != 0} | \
                {name for name, report in self.reports.items() if report.final}
            if finished >= set(self.endpoints):
                break
            if control.poll(20):
                shipped = self.shipped
                self._hear(control, {}, hurry)
                if self.shipped != shipped:
                    deadline = min(max(deadline, time.monotonic() + STOP_GRACE), limit)
            self.following.merge_for(0.02)
        self._hear(control, {}, hurry)  # what came with the last report

    def _hear(self, control, endpoints: dict, enough=None) -> None:
        """Take every control frame waiting now, each from the lifeline whose key signed it
        (``control.heard``); count the refused ones.  Until ``enough()``, if given: lifelines
        that ship their logs (Ray's actors) keep this socket full as long as the run goes,
        and a signal must still be seen (it was not, for 50 s)."""
        for said in heard(control, self.lifelines, signed=self.secure, enough=enough):
            if isinstance(said, Refused):
                self.refused[said.reason] += 1
                continue
            name, message = said.lifeline, said.message
            if isinstance(message, Hello):
                if name in self.routes:  # its one hello was heard: this is someone else
                    self.refused["repeated"] += 1
                    continue
                self.routes[name] = said.route
                if message.plan != self.fingerprint:
                    self.wrong_plan = (f"lifeline {name} runs another plan: it loaded "
                                       f"{message.plan}, this run's is {self.fingerprint} "
                                       f"(its choreography file differs from {self.choreography})")
                    continue
                endpoints[name] = message.endpoint
            elif isinstance(message, State):
                self.reports[name] = message
            elif isinstance(message, Log):
                if name not in self.shipping:  # a local lifeline's log is on disk already
                    self.refused["unexpected"] += 1
                    continue
                self._append(name, message.lines)
            self.beats[name] = time.monotonic()

    def _append(self, name: str, lines) -> None:
        """A shipped log's lines onto its file here.  Once a write fails (a full disk) the
        file ends there for the merge: later lines are only counted (``meta.unlogged``)."""
        self.shipped += len(lines)
        if not self.unlogged[name]:
            try:
                with open(self._log(name), "a", encoding="utf-8") as log:
                    log.writelines(f"{line}\n" for line in lines)
                return
            except OSError:
                pass
        self.unlogged[name] += len(lines)

    def _probe(self, control, wave: int) -> None:
        for name in self.lifelines:
            self._send(control, name, Probe(wave))

    def _send(self, control, name: str, message) -> None:
        """To the control socket ``name`` said hello from (its key checked); nothing before."""
        route = self.routes.get(name)
        if route is not None:
            send(control, message, route)

    def _ended(self, now: float):
        if self.wrong_plan is not None:
            return self._meta(FAILED, self.wrong_plan)
        for launcher in self.launchers:
            for name, code in launcher.ended().items():
                report = self.reports.get(name)
                if report is None or report.state != "end" or code != 0:
                    return self._verdict(died(name, code, launcher.why(name) or "its process exited"))
        if self.started_at is None:
            late = [name for name in self.lifelines if name not in self.endpoints
                    and now - self.joining[name][0] > self.joining[name][1]]
            if late:
                return self._verdict(not_joined(
                    late, max(self.joining[name][1] for name in late)))
            return None
        for name in () if self.following.held else self.lifelines:  # silent since the start:
            # waiting for a join was no silence, nor a pause of ours (Following.hold)
            silent = now - max(self.beats.get(name, now), self.started_at)
            if silent > SILENCE:
                if any(launcher.alive(name) for launcher in self.launchers):
                    return self._verdict(unresponsive(name, silent))
                return self._verdict(died(name, None, f"no heartbeat for {SILENCE:g} s"))
        ends = [self.reports.get(name) for name in self.lifelines]
        failed = [n for n, r in zip(self.lifelines, ends) if r is not None and r.status == FAILED]
        if failed:  # one lifeline cannot go on: the run has failed, whatever the others do
            return self._meta(FAILED, self.reports[failed[0]].error, failed={"lifeline": failed[0]})
        if all(r is not None and r.state == "end" for r in ends):
            return self._meta(OK)
        return None

    def _verdict(self, verdict: Verdict) -> dict:
        meta = self._meta(verdict.status, verdict.error)
        meta.update(verdict.facts)
        return meta

    def _meta(self, status: str, error: str | None = None, **facts) -> dict:
        meta = run_meta(self.plan.name, self.seed, self.inputs, status, error, run=self.run_id,
                        processes=True, **facts, hosts={name: self.connections[name].host
                                               for name in self.lifelines
                                               if name in self.connections})
        places = {name: where for launcher in self.launchers
                  for name, where in launcher.places().items()}
        if places:
            meta["nodes"] = places
        rejected = {name: r.rejected for name, r in self.reports.items() if r.rejected}
        if rejected:
            meta["rejected_frames"] = rejected
        if self.refused:
            meta["rejected_control"] = dict(self.refused)
        return meta

