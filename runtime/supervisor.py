"""``cpl run`` over processes: one OS process per lifeline, owned in one visible scope.

The supervisor binds a ROUTER control socket, starts ``cpl lifeline NAME``
for every lifeline inside a :class:`Children` block — which, however the
block is left, stops every child it started (SIGTERM, then SIGKILL) — hands
each child its connection through a private pipe, waits for every
``hello``, sends ``start`` with all inbox addresses, and then watches:

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

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import msgpack
import zmq

from choreo.status import DEADLOCK, DIED, FAILED, INTERRUPTED, OK, TIMEOUT, run_meta
from .connection import (Connection, Keys, KeyRing, authenticator, secure_server,
                         write_connections)
from .merge import merge, read_log

HELLO_TIMEOUT = 60.0  # seconds for every lifeline to load its choreography and say hello
JOIN_TIMEOUT = 300.0  # the same when lifelines are started by hand on other hosts
SILENCE = 5.0  # seconds without a heartbeat: the lifeline is dead
BEAT = 0.5  # seconds between the supervisor's pings (a lifeline that hears none, leaves)
STOP_GRACE = 5.0  # seconds a stopped child has to exit before it is killed


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
        self.reports: dict[str, dict] = {}
        self.beats: dict[str, float] = {}
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
                    _send(control, name, t="stop")
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
                          self.choreography, self.name, self.inputs, self.seed,
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
        probe = None  # (wave number, the reports it must confirm)
        pinged = started
        try:
            while True:
                if control.poll(100):
                    self._hear(control, endpoints)
                if len(endpoints) == len(self.lifelines) and not self.started:
                    for name in self.lifelines:
                        _send(control, name, t="start", endpoints=endpoints)
                    self.started = True
                now = time.monotonic()
                if self.started and now - pinged > BEAT:  # we live: lifelines wait for us
                    for name in self.lifelines:
                        _send(control, name, t="ping")
                    pinged = now
                ended = self._ended(children, endpoints, started, now)
                if ended is not None:
                    return ended
                if deadline is not None and now > deadline:
                    return self._meta(TIMEOUT, f"stopped after {self.timeout:g} s (--timeout)")
                probe = self._deadlock(control, probe)
                if probe == "deadlock":
                    waits = [w for r in self.reports.values() for w in r.get("waiting", ())]
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
                                                  if r.get("final")}
            if finished >= set(self.lifelines):
                break
            if control.poll(50):
                self._hear(control, {})
        children.wait(max(0.0, deadline - time.monotonic()))

    def _results(self) -> dict:
        return {name: self.reports[name].get("results", {}) for name in self.lifelines
                if name in self.reports}

    def _hear(self, control, endpoints: dict) -> None:
        while True:
            try:
                identity, frame = control.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            except ValueError:
                continue
            name = identity.decode("utf-8", "replace").split("\x00")[0]
            if name not in self.lifelines:
                continue
            self.beats[name] = time.monotonic()
            if frame == b"beat":
                continue
            try:
                said = msgpack.unpackb(frame, raw=False)
            except Exception:  # noqa: BLE001 - counted as silence, not trusted
                continue
            kind = said.get("t") if isinstance(said, dict) else None
            if kind == "hello":
                endpoints[name] = said.get("endpoint")
            elif kind == "state" and _report_shaped(said):
                self.reports[name] = said
            elif kind == "log" and name in self.placement:
                with open(self._log(name), "a", encoding="utf-8") as log:
                    log.writelines(f"{line}\n" for line in said.get("lines", ())
                                   if isinstance(line, str) and "\n" not in line)

    def _ended(self, children: Children, endpoints, started: float, now: float):
        for name, code in children.exited().items():
            if self.reports.get(name, {}).get("state") != "end" or code != 0:
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
        ends = [self.reports.get(name, {}) for name in self.lifelines]
        failed = [r for r in ends if r.get("status") == FAILED]
        if failed:  # one lifeline cannot go on: the run has failed, whatever the others do
            return self._meta(FAILED, failed[0].get("error"))
        if all(r.get("state") == "end" for r in ends):
            return self._meta(OK)
        return None

    def _deadlock(self, control, probe):
        """Mattern's counting, two waves: all idle or ended, as many received as sent, and a
        probe wave that finds the same counts again."""
        reports = [self.reports.get(name) for name in self.lifelines]
        quiet = all(r is not None and r["state"] in ("idle", "end") for r in reports) and \
            any(r["state"] == "idle" for r in reports) and \
            sum(r["sent"] for r in reports) == sum(r["received"] for r in reports)
        if not quiet:
            return None
        counts = [(r["sent"], r["received"]) for r in reports]
        if probe is None:
            wave = int(time.monotonic() * 1000)
            for name in self.lifelines:
                _send(control, name, t="probe", n=wave)
            return (wave, counts)
        wave, before = probe
        answered = all(r.get("probe") == wave for r in reports)
        if answered and before == counts:
            return "deadlock"
        return probe if not answered else None

    def _died(self, name: str, code, why: str) -> dict:
        signal_number = -code if code is not None and code < 0 else None
        meta = self._meta(DIED, f"lifeline {name} died: {why}"
                          + (f" (signal {signal.Signals(signal_number).name})"
                             if signal_number else f" (exit status {code})" if code else ""))
        meta["died"] = {"lifeline": name, "exit": None if signal_number else code,
                        "signal": signal_number}
        return meta

    def _meta(self, status: str, error: str | None = None) -> dict:
        meta = run_meta(self.plan.name, self.seed, self.inputs, status, error, run=self.run_id,
                        processes=True, hosts={name: self.placement.get(name, self.host)
                                               for name in self.lifelines})
        meta["results"] = self._results()
        rejected = {name: r["rejected"] for name, r in self.reports.items() if r.get("rejected")}
        if rejected:
            meta["rejected_frames"] = rejected
        return meta


def lifeline_command(name: str) -> list[str]:
    """``cpl lifeline NAME --stdin``: the ``cpl`` script installed beside this Python (so
    ``ps`` shows ``cpl lifeline NAME``; not a ``cpl`` found on PATH, which may be a shim
    or another install), else this Python running the same CLI."""
    installed = os.path.join(os.path.dirname(sys.executable), "cpl")
    head = [installed] if os.access(installed, os.X_OK) else [sys.executable, "-m", "runtime.cli"]
    return [*head, "lifeline", name, "--stdin"]


def _report_shaped(said: dict) -> bool:
    """A lifeline's state report as the deadlock counting and the results need it (with
    ``--insecure`` anyone on the network can reach the control socket)."""
    return (said.get("state") in ("idle", "busy", "end") and type(said.get("sent")) is int
            and type(said.get("received")) is int and isinstance(said.get("results"), dict)
            and isinstance(said.get("waiting"), list)
            and all(isinstance(w, str) for w in said["waiting"])
            and isinstance(said.get("rejected", {}), dict)
            and (said.get("error") is None or isinstance(said.get("error"), str)))


def _send(control, name: str, **fields) -> None:
    try:
        control.send_multipart([name.encode("utf-8"), msgpack.packb(fields, use_bin_type=True)],
                               zmq.NOBLOCK)
    except zmq.ZMQError:
        pass

