"""Where a lifeline runs: the seam between a run's supervisor and the places of its lifelines.

The supervisor speaks to every lifeline only over its control socket (the
lifeline says ``hello`` with its inbox, hears ``start``, ``ping``, ``stop``,
reports its state); *how* a lifeline comes to exist is a :class:`Launcher`'s
business.  A launcher starts (or invites) the lifelines it places, hands each
its :class:`~runtime.frames.ticket.Ticket`, and reports the deaths it can
see.  Local child processes (:class:`LocalProcesses`) and lifelines started by
hand on other hosts (:class:`Joins`, ``cpl run --hosts``) are two launchers;
actors on a Ray cluster (:mod:`runtime.supervisor.ray_launcher`) are a third, started from
the same connections, without a change to the control protocol.

What every launcher guarantees (the supervisor relies on nothing else):

* ``ready(plan)``, called once when the launcher is entered, before the
  supervisor makes its ZeroMQ context or starts a thread: what needs a
  process of one thread happens there (``LocalProcesses`` forks its lifelines
  from the prepared plan, :mod:`runtime.supervisor.zygote`).
* ``public_keys()``, called once before ``launch``, names the lifelines that
  make their own CURVE key pair where they run, with their public keys: their
  secret keys never travel, and their connections carry none (``secret`` is
  ``""``).  The supervisor makes the others' pairs.  A launcher that cannot
  bring its lifelines that far raises :class:`Unlaunched`.
* ``launch(drafts)`` starts or invites each of ``lifelines`` and returns the
  connections it handed them.  It may change two fields of a draft: ``host``,
  the address the lifeline binds its inbox on, and ``log``: a path on the
  supervisor's disk (the draft's) or ``""`` for a lifeline that ships its log
  lines over the control socket (one on another machine).
* Each lifeline has ``patience`` seconds from its launch to say ``hello``;
  after that the run ends ``not joined``.
* ``ended()`` names the lifelines known to have ended, with their exit status
  (negative: the signal that ended them; ``None``: unknown).  A death the
  launcher can observe is reported within two heartbeats (``2 * BEAT`` of
  the supervisor) of it; one it cannot (a host it does not own) is left to the
  supervisor's heartbeat silence.
* ``why(name)`` says how an ended lifeline ended when the launcher knows more
  than an exit status (a Ray actor's death); ``places()`` where each lifeline
  runs, for the trace's ``meta.nodes``.
* ``alive(name)`` says whether the process is there, when the launcher can see
  it: a silent lifeline whose process is alive is busy or stopped
  (``unresponsive``), not dead.
* ``stop()`` comes once the supervisor said ``stop`` and heard the last words
  it could (a lifeline held by a blocking action says none): it ends at once,
  by force, every lifeline it can, so that none writes its log any more.
* ``hold(held)`` pauses (``True``) or resumes the lifelines it can, while the
  supervisor's merge of their logs catches up with them (``LocalProcesses``:
  SIGSTOP and SIGCONT to their process groups); others go on.
* ``close()`` — also leaving the ``with`` block, on every path — ends by force
  what still runs and releases what the launcher holds (pipes, files).  No
  lifeline outlives the run: one the launcher cannot end ends itself when it
  hears ``stop`` or, failing that, when the supervisor has been silent for
  ``runtime.frames.control.SUPERVISOR_SILENCE``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

import attrs

from runtime.frames import Ticket, write_connection_file, HELLO_TIMEOUT, JOIN_TIMEOUT
from choreo.execution import Keeper, kill_group



class Unlaunched(Exception):
    """Lifelines a launcher could not bring up: ``late`` were not placed within ``waited``
    seconds (the run ends ``not joined``), or ``dead`` (lifeline -> how) died first."""

    def __init__(self, late=(), waited: float = 0.0, dead: dict | None = None):
        super().__init__(late, waited, dead)
        self.late, self.waited, self.dead = list(late), waited, dict(dead or {})


class Launcher:
    """Starts the lifelines it places somewhere; see the module for what it guarantees."""

    lifelines: tuple[str, ...] = ()
    patience: float = HELLO_TIMEOUT

    def ready(self, plan) -> None:
        pass

    def public_keys(self) -> dict[str, str]:
        return {}

    def launch(self, drafts: dict[str, Ticket]) -> dict[str, Ticket]:
        raise NotImplementedError

    def ended(self) -> dict[str, int | None]:
        return {}

    def why(self, name: str) -> str | None:
        return None

    def places(self) -> dict[str, dict]:
        return {}

    def alive(self, name: str) -> bool | None:
        """Whether ``name``'s process is there (running, or stopped by a signal); None: this
        launcher cannot see it."""
        return None

    def hold(self, held: bool) -> None:
        pass

    def stop(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalProcesses(Launcher):
    """Lifeline processes on this host, each in its own session and process group (a
    terminal's Ctrl-C reaches the supervisor only; the group is killed with the
    lifeline): forked from the supervisor once it has prepared the plan
    (:mod:`runtime.supervisor.zygote`) where that is safe, else ``cpl lifeline NAME --stdin``
    commands.  The connection goes through the child's standard input, which stays
    open: its end (the supervisor gone, even killed with -9) ends the child."""

    def __init__(self, lifelines):
        self.lifelines = tuple(lifelines)
        self.processes: dict = {}  # lifeline -> its subprocess.Popen or zygote.Forked
        self.keeper: Keeper | None = None  # kills the groups even if we are killed

    def ready(self, plan) -> None:
        """Fork every lifeline now, while this process has one thread, unless a caller
        replaced ``lifeline_command`` (a bench that profiles the command) or it cannot."""
        from . import zygote
        if lifeline_command is not _LIFELINE_COMMAND or not zygote.forkable():
            return
        from runtime.lifeline import main  # noqa: F401 - imported once, not in every fork
        for name in self.lifelines:
            self.processes[name] = zygote.fork_lifeline(name, plan)
        self._keep()

    def _keep(self) -> None:
        """The keeper, started once the lifelines are forked (none holds its pipe)."""
        if self.keeper is None:
            self.keeper = Keeper()
            for process in self.processes.values():
                self.keeper.keep(process.pid)

    def launch(self, drafts: dict[str, Ticket]) -> dict[str, Ticket]:
        self._keep()
        for name, connection in drafts.items():
            process = self.processes.get(name)
            if process is None:
                process = subprocess.Popen(lifeline_command(name), stdin=subprocess.PIPE,
                                           start_new_session=True)
                self.processes[name] = process
                self.keeper.keep(process.pid)
            with contextlib.suppress(BrokenPipeError):  # it died at once: ended() says so
                process.stdin.write(connection.to_json().encode("utf-8") + b"\n")
                process.stdin.flush()
        return drafts

    def ended(self) -> dict[str, int | None]:
        return {name: p.returncode for name, p in self.processes.items() if p.poll() is not None}

    def alive(self, name: str) -> bool | None:
        process = self.processes.get(name)
        return None if process is None else process.poll() is None

    def hold(self, held: bool) -> None:
        """Pause (SIGSTOP) or resume (SIGCONT) every child's process group: what its actions
        started pauses with it."""
        for process in self.processes.values():
            if process.returncode is None:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, signal.SIGSTOP if held else signal.SIGCONT)

    def stop(self) -> None:
        """SIGKILL every child's process group — the child if it still runs, and what its
        actions started (``choreo.execution.lineage``) — then reap them all (a lifeline's
        log is on disk event by event: nothing done is lost)."""
        for process in self.processes.values():
            kill_group(process.pid)
            if process.returncode is None:
                process.kill()  # a fork that has not made its own group yet
        for process in self.processes.values():
            process.wait()

    def close(self) -> None:
        self.stop()
        for process in self.processes.values():
            with contextlib.suppress(OSError):
                process.stdin.close()
        if self.keeper is not None:
            self.keeper.close()


class Joins(Launcher):
    """Lifelines started by hand (or ssh, systemd, a container) on other hosts: one
    connection file per host, readable by its owner only, and the command to run there
    printed on standard error.  Each lifeline binds its inbox on its host and ships its
    log.  Nothing here can see or end those processes: they end on ``stop``, or when the
    supervisor falls silent."""

    def __init__(self, placement: dict[str, str], patience: float = JOIN_TIMEOUT,
                 folder: str = "."):
        self.placement = dict(placement)  # lifeline -> host
        self.lifelines = tuple(placement)
        self.patience = patience
        self.folder = folder
        self.files: list[str] = []

    def launch(self, drafts: dict[str, Ticket]) -> dict[str, Ticket]:
        placed = {name: attrs.evolve(draft, host=self.placement[name], log="")
                  for name, draft in drafts.items()}
        hosts: dict[str, list[Ticket]] = {}
        for connection in placed.values():
            hosts.setdefault(connection.host, []).append(connection)
        print(f"cpl run: waiting {self.patience:g} s for {len(hosts)} host(s); copy each "
              f"connection file there (it holds secret keys: keep it private) and run:",
              file=sys.stderr)
        for host, connections in hosts.items():
            path = os.path.abspath(os.path.join(
                self.folder, f"cpl-{connections[0].run[:8]}-{host}.json"))
            self.files.append(path)
            write_connection_file(path, connections)
            for connection in connections:
                print(f"  on {host}: cpl lifeline {connection.lifeline} --join "
                      f"{connection.supervisor} --connection {path}", file=sys.stderr, flush=True)
        return placed

    def close(self) -> None:
        for path in self.files:  # their keys are of no use after the run
            with contextlib.suppress(OSError):
                os.remove(path)


def launchers_for(lifelines, placement: dict[str, str],
                  join_timeout: float | None = None) -> list[Launcher]:
    """The lifelines ``placement`` maps to other hosts join by hand (within ``join_timeout``
    seconds, default ``JOIN_TIMEOUT``); the others run here."""
    local = [name for name in lifelines if name not in placement]
    patience = JOIN_TIMEOUT if join_timeout is None else join_timeout
    return ([Joins(placement, patience)] if placement else []) + \
        ([LocalProcesses(local)] if local else [])  # the commands printed first


def lifeline_command(name: str) -> list[str]:
    """``cpl lifeline NAME --stdin``: the ``cpl`` script installed beside this Python (so
    ``ps`` shows ``cpl lifeline NAME``; not a ``cpl`` found on PATH, which may be a shim
    or another install), else this Python running the same CLI."""
    installed = os.path.join(os.path.dirname(sys.executable), "cpl")
    head = [installed] if os.access(installed, os.X_OK) else [sys.executable, "-m", "cpl_cli"]
    return [*head, "lifeline", name, "--stdin"]


_LIFELINE_COMMAND = lifeline_command  # replaced by a caller (a bench): its command runs
