"""``cpl run`` over processes: one OS process per lifeline, owned in one visible scope.

The supervisor binds a ROUTER control socket, starts ``cpl lifeline NAME``
for every lifeline inside a :class:`Children` block — which, however the
block is left, stops every child it started (SIGTERM, then SIGKILL) — hands
each child its connection through a private pipe, waits for every
``hello``, sends ``start`` with all inbox addresses, and then watches
(every control frame taken from the lifeline whose key signed it,
:mod:`runtime.control`):

* a lifeline whose process exits, or whose heartbeats stop, has **died**;
* every lifeline ended → **ok**, or **failed** if one of them failed;
* all idle and as many messages received as sent, twice in a row with
  nothing else said in between (a probe wave) → **deadlock**;
* ``--timeout`` → **timeout**; Ctrl-C or SIGTERM → **interrupted**.

Then it says ``stop``, lets the children finish their logs, and merges the
logs into the trace (:mod:`runtime.merge`) with ``meta`` saying how the run
ended.  A child's standard input is the supervisor's pipe: if the supervisor
is killed, the pipe closes and every child exits.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import zmq

from choreo.fingerprint import fingerprint
from choreo.status import DEADLOCK, DIED, FAILED, INTERRUPTED, OK, TIMEOUT
from .connection import (Connection, Keys, KeyRing, authenticator, secure_server,
                         write_connections)
from .control import (BEAT, HELLO_TIMEOUT, JOIN_TIMEOUT, MAX_CONTROL, SILENCE, STOP_GRACE, Beat,
                      Hello, Log, Probe, Refused, Start, State, Stop, heard, quiet, send)
from .merge import merge, read_log


class Children:
    """Every child process of one run, stopped when the block is left, whatever happens."""

    def __init__(self):
        self.processes: dict[str, subprocess.Popen] = {}

    def __enter__(self):
        return self

    def start(self, name: str, command: list[str], connection: Connection) -> None:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, start_new_session=True)
        self.processes[name] = process
        process.stdin.write(connection.to_json().encode("utf-8") + b"\n")
        process.stdin.flush()  # the pipe stays open: its end tells the child we are gone

    def exited(self) -> dict[str, int]:
        return {name: p.returncode for name, p in self.processes.items() if p.poll() is not None}

    def wait(self, grace: float) -> None:
        deadline = time.monotonic() + grace
        for process in self.processes.values():
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass

    def __exit__(self, *exc) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        self.wait(2.0)
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stdin:
                try:
                    process.stdin.close()
                except OSError:
                    pass


class Supervisor:
    """One run over processes; ``placement`` maps lifelines to other hosts (``--hosts``)."""

    def __init__(self, plan, choreography: str, name: str | None, inputs: dict, seed: int, *,
                 secure: bool = True, timeout: float | None = None, host: str = "127.0.0.1",
                 placement: dict[str, str] | None = None, join_folder: str = "."):
        self.plan, self.inputs, self.seed, self.timeout = plan, inputs, seed, timeout
        self.choreography, self.name, self.host = os.path.abspath(choreography), name, host
        self.run_id = uuid.uuid4().hex[:16]  # 64 bits name a run well enough; every frame holds it
        self.lifelines = plan.lifelines
        self.placement = placement or {}  # lifeline -> host, for those not started here
        self.join_folder = join_folder
        self.keys = self._keys() if secure else None
        self.fingerprint = fingerprint(plan.choreography, inputs, seed)
        self.reports: dict[str, State] = {}
        self.beats: dict[str, float] = {}
        self.routes: dict[str, bytes] = {}  # lifeline -> its control socket, from its hello
        self.refused: collections.Counter = collections.Counter()  # control frames, by reason
        self.wrong_plan: str | None = None  # why a lifeline's hello was refused, if one was
        self.waves = itertools.count(1)
        self.wave: tuple[int, tuple] | None = None  # a probe wave out, and the counts it checks
        self.started = False
        self.invitations: list[str] = []  # the connection files written for other hosts
        self.folder = tempfile.mkdtemp(prefix="cpl-run-")

    def _keys(self) -> dict:
        pairs = {name: Keys.pair() for name in (*self.lifelines, "")}  # "": the supervisor
        public = {name: pair[0] for name, pair in pairs.items() if name}
        return {name: Keys(pairs[name][0], pairs[name][1], pairs[""][0], public)
                for name in pairs}

    def run(self, write) -> dict:
        """Run to the end, writing each merged event with ``write``; returns the meta."""
        context = zmq.Context()
        auth = None
        previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # as Ctrl-C
        try:
            if self.keys:
                auth = authenticator(context, KeyRing(self.keys[""].lifelines))
            control = context.socket(zmq.ROUTER)
            control.linger = 0
            control.maxmsgsize = MAX_CONTROL
            secure_server(control, self.keys[""] if self.keys else None)
            port = control.bind_to_random_port(f"tcp://{self.host}")
            address = f"tcp://{self.host}:{port}"
            with Children() as children:
                for name in self.lifelines:
                    if name not in self.placement:
                        children.start(name, lifeline_command(name),
                                       self._connection(name, address))
                self._invite(address)
                meta = self._watch(control, children)
                for name in self.lifelines:
                    self._send(control, name, Stop())
                self._last_words(control, children)
                meta["results"] = self._results()
            control.close(0)
        finally:
            signal.signal(signal.SIGTERM, previous)
            if auth is not None:
                auth.stop()
            context.term()
        for path in self.invitations:  # their keys are of no use after the run
            with contextlib.suppress(OSError):
                os.remove(path)
        logs = {name: read_log(self._log(name), name) for name in self.lifelines}
        meta.update(merge(logs, self.lifelines, write))
        shutil.rmtree(self.folder, ignore_errors=True)
        return meta

    def _log(self, name: str) -> str:
        return os.path.join(self.folder, f"{self.lifelines.index(name)}.jsonl")

    def _connection(self, name: str, address: str) -> Connection:
        """A local lifeline logs to this host's disk; a remote one ships its log lines."""
        remote = name in self.placement
        return Connection(self.run_id, name, address, self.placement.get(name, self.host),
                          self.choreography, self.name, self.inputs, self.seed, self.fingerprint,
                          "" if remote else self._log(name),
                          self.keys[name] if self.keys else None)

    def _invite(self, address: str) -> None:
        """Write one connection file per other host (mode 0600) and print the commands."""
        hosts: dict[str, list[str]] = {}
        for name, host in self.placement.items():
            hosts.setdefault(host, []).append(name)
        if not hosts:
            return
        print(f"cpl run: waiting {JOIN_TIMEOUT:g} s for {len(hosts)} host(s); copy each "
              f"connection file there (it holds secret keys: keep it private) and run:",
              file=sys.stderr)
        for host, names in hosts.items():
            path = os.path.abspath(os.path.join(self.join_folder,
                                                f"cpl-{self.run_id[:8]}-{host}.json"))
            write_connections(path, [self._connection(name, address) for name in names])
            self.invitations.append(path)
            for name in names:
                print(f"  on {host}: cpl lifeline {name} --join {address} --connection {path}",
                      file=sys.stderr, flush=True)

    def _watch(self, control, children: Children) -> dict:
        started = time.monotonic()
        deadline = None if self.timeout is None else started + self.timeout
        endpoints: dict[str, str] = {}
        pinged = started
        try:
            while True:
                if control.poll(100):
                    self._hear(control, endpoints)
                if len(endpoints) == len(self.lifelines) and not self.started:
                    for name in self.lifelines:
                        self._send(control, name, Start(endpoints))
                    self.started = True
                now = time.monotonic()
                if self.started and now - pinged > BEAT:  # we live: lifelines wait for us
                    for name in self.lifelines:
                        self._send(control, name, Beat())
                    pinged = now
                ended = self._ended(children, endpoints, started, now)
                if ended is not None:
                    return ended
                if deadline is not None and now > deadline:
                    return self._meta(TIMEOUT, f"stopped after {self.timeout:g} s (--timeout)")
                if self._deadlock(control):
                    waits = [w for r in self.reports.values() for w in r.waiting]
                    return self._meta(DEADLOCK, "deadlock: no event can happen; "
                                      + "; ".join(waits))
        except KeyboardInterrupt:
            return self._meta(INTERRUPTED, "interrupted")

    def _last_words(self, control, children: Children) -> None:
        """After ``stop``: every lifeline's final report (its results), until all have said
        it or exited — at most ``STOP_GRACE`` seconds."""
        deadline = time.monotonic() + STOP_GRACE
        while time.monotonic() < deadline:
            finished = set(children.exited()) | {name for name, r in self.reports.items()
                                                  if r.final}
            if finished >= set(self.lifelines):
                break
            if control.poll(50):
                self._hear(control, {})
        children.wait(max(0.0, deadline - time.monotonic()))

    def _results(self) -> dict:
        return {name: self.reports[name].results for name in self.lifelines
                if name in self.reports}

    def _hear(self, control, endpoints: dict) -> None:
        """Take every control frame waiting now, each from the lifeline whose key signed it
        (``control.heard``); count the refused ones."""
        for said in heard(control, self.lifelines, signed=self.keys is not None):
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
                if name not in self.placement:  # a local lifeline's log is on disk already
                    self.refused["unexpected"] += 1
                    continue
                with open(self._log(name), "a", encoding="utf-8") as log:
                    log.writelines(f"{line}\n" for line in message.lines)
            self.beats[name] = time.monotonic()

    def _send(self, control, name: str, message) -> None:
        """To the control socket ``name`` said hello from (its key checked); nothing before."""
        route = self.routes.get(name)
        if route is not None:
            send(control, message, route)

    def _ended(self, children: Children, endpoints, started: float, now: float):
        if self.wrong_plan is not None:
            return self._meta(FAILED, self.wrong_plan)
        for name, code in children.exited().items():
            report = self.reports.get(name)
            if report is None or report.state != "end" or code != 0:
                return self._died(name, code, "its process exited")
        if len(endpoints) < len(self.lifelines):
            patience = JOIN_TIMEOUT if self.placement else HELLO_TIMEOUT
            if now - started > patience:
                missing = sorted(set(self.lifelines) - set(endpoints))
                return self._meta(DIED, f"{', '.join(missing)} did not join within "
                                  f"{patience:g} s")
            return None
        for name in self.lifelines:
            if now - self.beats.get(name, now) > SILENCE:
                return self._died(name, None, f"no heartbeat for {SILENCE:g} s")
        ends = [self.reports.get(name) for name in self.lifelines]
        failed = [r for r in ends if r is not None and r.status == FAILED]
        if failed:  # one lifeline cannot go on: the run has failed, whatever the others do
            return self._meta(FAILED, failed[0].error)
        if all(r is not None and r.state == "end" for r in ends):
            return self._meta(OK)
        return None

    def _deadlock(self, control) -> bool:
        """Mattern's counting in two waves: the reports are ``quiet``, a probe wave asks every
        lifeline again, and every answer to it is quiet with the same counts."""
        reports = [self.reports.get(name) for name in self.lifelines]
        counts = quiet(reports)
        if counts is None:
            self.wave = None
            return False
        if self.wave is None:
            wave = next(self.waves)
            for name in self.lifelines:
                self._send(control, name, Probe(wave))
            self.wave = (wave, counts)
            return False
        wave, before = self.wave
        if counts != before:  # something happened since the wave left: start another
            self.wave = None
            return False
        if any(r.probe != wave for r in reports):
            return False  # not every answer is in yet
        self.wave = None
        return True

    def _died(self, name: str, code, why: str) -> dict:
        signal_number = -code if code is not None and code < 0 else None
        meta = self._meta(DIED, f"lifeline {name} died: {why}"
                          + (f" (signal {signal.Signals(signal_number).name})"
                             if signal_number else f" (exit status {code})" if code else ""))
        meta["died"] = {"lifeline": name, "exit": None if signal_number else code,
                        "signal": signal_number}
        return meta

    def _meta(self, status: str, error: str | None = None) -> dict:
        meta = {"choreography": self.plan.name, "seed": self.seed, "inputs": dict(self.inputs),
                "status": status, "run": self.run_id, "processes": True,
                "hosts": {name: self.placement.get(name, self.host) for name in self.lifelines}}
        if error:
            meta["error"] = error
        meta["results"] = self._results()
        rejected = {name: r.rejected for name, r in self.reports.items() if r.rejected}
        if rejected:
            meta["rejected_frames"] = rejected
        if self.refused:
            meta["rejected_control"] = dict(self.refused)
        return meta


def lifeline_command(name: str) -> list[str]:
    """``cpl lifeline NAME --stdin``: the ``cpl`` script installed beside this Python (so
    ``ps`` shows ``cpl lifeline NAME``; not a ``cpl`` found on PATH, which may be a shim
    or another install), else this Python running the same CLI."""
    installed = os.path.join(os.path.dirname(sys.executable), "cpl")
    head = [installed] if os.access(installed, os.X_OK) else [sys.executable, "-m", "runtime.cli"]
    return [*head, "lifeline", name, "--stdin"]
