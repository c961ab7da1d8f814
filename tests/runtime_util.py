"""Helpers for the runtime tests: real ``cpl`` processes, the processes a test left behind,
traces re-checked against the semantics, and a harness that plays the supervisor and the
peers of one live ``cpl lifeline`` process.

Every process a test starts carries ``CPL_TEST_TAG=<uuid>`` in its environment, which its
children inherit: ``/proc/PID/environ`` then finds every process of one test — the
lifelines included, even after their supervisor died and they were re-parented — and
nothing anybody else runs on this machine.  Tests end only those, by pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import msgpack
import zmq

from choreo import load_one
from choreo.execution.drive import Driver, complete
from choreo.execution.fingerprint import fingerprint
from choreo.execution.plan import prepare
from cpl.monitor import offline
from cpl.semantics import reference
from runtime.frames import control
from runtime.frames import Ticket, Keys, KeyRing, authenticator, secure_client, \
    secure_server
from runtime.frames.wire import encode

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
_installed = shutil.which("cpl")
CPL = [_installed] if _installed else [sys.executable, "-m", "cpl_cli"]
TAG = "CPL_TEST_TAG"


# ------------------------------------------------------------------ processes

def tagged_env(tag: str) -> dict:
    env = dict(os.environ, **{TAG: tag})
    env.pop("CPL_LLM_BACKEND", None)  # the deterministic mock backend
    return env


def tagged(tag: str) -> dict[int, str]:
    """pid -> command line of every live (not zombie) process carrying ``tag``."""
    needle = f"{TAG}={tag}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environ = handle.read()
            if needle not in environ.split(b"\0"):
                continue
            with open(f"/proc/{entry}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
            if state in (b"Z", b"X"):
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                found[int(entry)] = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
    return found


def holding(folder: str) -> dict[int, str]:
    """pid -> command line of every live process but this one with its working folder or
    an open file inside ``folder``: the processes a program started there, even those that
    renamed themselves (setproctitle overwrites what ``/proc/PID/environ`` shows, so
    ``tagged`` cannot see them: Ray's ``ray::DashboardAgent`` is one)."""
    inside = os.path.realpath(folder) + os.sep
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                if handle.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X"):
                    continue
            links = [os.readlink(f"/proc/{entry}/cwd")]
            for fd in os.listdir(f"/proc/{entry}/fd"):
                with contextlib.suppress(OSError):
                    links.append(os.readlink(f"/proc/{entry}/fd/{fd}"))
            if any((link + os.sep).startswith(inside) for link in links):
                with open(f"/proc/{entry}/cmdline", "rb") as handle:
                    found[int(entry)] = handle.read().replace(b"\0", b" ").decode(
                        errors="replace")
        except (OSError, IndexError):
            continue
    return found


def lifeline_processes(tag: str) -> dict[int, str]:
    return {pid: line for pid, line in tagged(tag).items() if " lifeline " in f" {line} "}


def kill_tagged(tag: str) -> list[str]:
    """SIGKILL every process of this test still alive; their command lines."""
    left = tagged(tag)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return list(left.values())


def wait_until(predicate, timeout: float, step: float = 0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


@contextlib.contextmanager
def ctrl_c_inherited():
    """Processes started in the block take Ctrl-C (SIGINT) as a terminal's job does, even
    when this one ignores it (a shell's background job does, and its children inherit
    that; a handler of ours is reset to the default in the child instead)."""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


class Cpl:
    """One ``cpl ...`` process of a test, in a process group of its own as a terminal's
    job: its output in files, every process it started killed (by pid, found by tag) when
    the block is left."""

    def __init__(self, folder: Path, *args: str):
        self.tag = uuid.uuid4().hex
        self.folder = Path(folder)
        self.out_path = self.folder / f"out.{self.tag[:8]}.txt"
        self.err_path = self.folder / f"err.{self.tag[:8]}.txt"
        self.temp = self.folder / f"tmp.{self.tag[:8]}"  # the run's own temp folders go here
        self.temp.mkdir()
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err, \
                ctrl_c_inherited():
            self.process = subprocess.Popen([*CPL, *args], stdout=out, stderr=err,
                                            stdin=subprocess.DEVNULL, cwd=self.folder,
                                            env=dict(tagged_env(self.tag), TMPDIR=str(self.temp)),
                                            start_new_session=True)
        self.started = time.monotonic()

    def logged(self) -> int:
        """How many events the run's lifelines have logged so far (their logs in the run's
        temp folder, or beside its trace), so a test can act once a run is really under way."""
        count = 0
        for log in [*self.temp.glob("cpl-run-*/*.jsonl"), *self.folder.glob("*.parts/*.jsonl")]:
            with contextlib.suppress(OSError), open(log, "rb") as handle:
                count += sum(1 for _ in handle)
        return count

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        kill_tagged(self.tag)

    def ctrl_c(self) -> None:
        """SIGINT to the whole process group, as a terminal's Ctrl-C."""
        os.killpg(self.process.pid, signal.SIGINT)

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"cpl did not end within {timeout} s; stderr:\n{self.err}") from None

    @property
    def out(self) -> str:
        return self.out_path.read_text(errors="replace")

    @property
    def err(self) -> str:
        return self.err_path.read_text(errors="replace")


def run_cpl(folder: Path, *args: str, timeout: float = 60.0) -> tuple[int, str, str, float]:
    """Run ``cpl args`` to its end: (exit code, stdout, stderr, seconds); asserts that no
    process of it is left behind."""
    with Cpl(folder, *args) as cpl:
        code = cpl.wait(timeout)
        seconds = time.monotonic() - cpl.started
        left = wait_until(lambda: not tagged(cpl.tag), 5.0) or tagged(cpl.tag)
        assert left is True or not left, f"processes left behind: {left}"
        return code, cpl.out, cpl.err, seconds


# ------------------------------------------------------------------ traces

def check_semantics(trace) -> int:
    """Every recorded decision equals the reference semantics and the online monitor's value
    over the recorded trace; returns how many decisions there were."""
    choices = [e for e in trace.events if e.kind == "choice"]
    assert all(e.guard is not None and e.outcome is not None for e in choices)
    rechecked = reference.recheck(trace)
    assert [e.id for e, _, _ in rechecked] == [e.id for e in choices]
    wrong = [(e.id, e.guard, recorded, computed) for e, recorded, computed in rechecked
             if recorded != computed]
    assert not wrong, f"decisions that differ from the reference semantics: {wrong[:5]}"
    groups = defaultdict(set)
    for e in choices:
        groups[(e.guard, e.lifeline)].add(e.id)
    for (guard, lifeline), ids in groups.items():
        values = {e.id: v for e, v in offline.evaluate_trace(trace, guard, lifeline) if e.id in ids}
        assert set(values) == ids
        wrong = [(e.id, e.outcome, values[e.id]) for e in choices
                 if e.id in ids and values[e.id] != e.outcome]
        assert not wrong, f"decisions the monitor computes otherwise: {wrong[:5]}"
    return len(choices)


def check_messages(trace) -> tuple[int, int]:
    """Every receive has its send; the sends without a receive are exactly
    ``meta.in_transit``.  Returns (sends, receives)."""
    sends = {e.msg: e for e in trace.events if e.kind == "send"}
    received = [e.msg for e in trace.events if e.kind == "recv"]
    assert len(set(received)) == len(received), "a message received twice"
    assert set(received) <= set(sends), set(received) - set(sends)
    assert sorted(set(sends) - set(received)) == sorted(trace.meta.get("in_transit", ()))
    return len(sends), len(received)


def check_results(trace) -> None:
    """``meta.results`` (what each process said at its end) are the stores the trace's
    updates lead to."""
    stores = {name: dict(trace.init.get(name, {})) if trace.init else {}
              for name in trace.lifelines}
    for e in trace.events:
        stores[e.lifeline].update(e.set)
    for name, results in trace.meta["results"].items():
        for variable, value in results.items():
            assert stores[name].get(variable) == value, (name, variable, value)


def events_per_lifeline(trace) -> Counter:
    return Counter(e.lifeline for e in trace.events)


# ------------------------------------------------------------------ a live lifeline

def first(options):
    """The scheduler of a test that wants one order only: the first option."""
    return options[0]


def drive_until_send(runner):
    """Fire the runner's (first) enabled events until it sends; the message, or None."""
    sent = []
    driver = Driver([runner], first, lambda event: None, sent.append)
    complete(driver.run(lambda steps: bool(sent)))
    return sent[0] if sent else None


class LiveLifeline:
    """One real ``cpl lifeline NAME --stdin`` process, with this test as its supervisor
    (a ROUTER control socket, CURVE server with the supervisor's keys and a ZAP handler
    naming each lifeline by its key) and as every other lifeline (their inboxes are
    bound here; ``peer(name)`` is a PUSH socket to the lifeline's inbox with ``name``'s
    keys)."""

    def __init__(self, folder: Path, source: str, me: str, *, secure: bool = True,
                 seed: int = 0, host: str = "127.0.0.1"):
        self.folder = Path(folder)
        self.path = self.folder / "choreography.py"
        self.path.write_text(source)
        self.plan = prepare(load_one(str(self.path), None))
        self.inputs = self.plan.inputs()
        self.stores = self.plan.stores(self.inputs)
        self.me, self.seed, self.host = me, seed, host
        self.run = uuid.uuid4().hex
        self.tag = uuid.uuid4().hex
        self.log_path = self.folder / f"{me}.jsonl"
        self.sockets = []
        self.context = zmq.Context()
        self.auth = None
        self.process = None
        self.route = None  # the lifeline's control socket, from its hello
        self.last = None  # its latest State
        self.wave = 0
        names = self.plan.lifelines
        if secure:
            pairs = {name: Keys.pair() for name in (*names, "")}
            public = {name: pair[0] for name, pair in pairs.items() if name}
            self.keys = {name: Keys(pairs[name][0], pairs[name][1], pairs[""][0], public)
                         for name in pairs}
            self.auth = authenticator(self.context, KeyRing(public))
        else:
            self.keys = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _socket(self, kind):
        made = self.context.socket(kind)
        made.linger = 0
        self.sockets.append(made)
        return made

    def _start(self) -> None:
        self.control = self._socket(zmq.ROUTER)
        secure_server(self.control, self.key(""))
        port = self.control.bind_to_random_port(f"tcp://{self.host}")
        self.connection = Ticket(self.run, self.me, f"tcp://{self.host}:{port}", self.host,
                                     str(self.path), None, self.inputs, self.seed,
                                     fingerprint(self.plan.choreography, self.inputs, self.seed),
                                     str(self.log_path), self.key(self.me))
        self.stderr_path = self.folder / f"{self.me}.stderr.txt"
        with open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                [*CPL, "lifeline", self.me, "--stdin"], stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=err, env=tagged_env(self.tag),
                start_new_session=True)
        self.process.stdin.write(self.connection.to_json().encode() + b"\n")
        self.process.stdin.flush()  # and kept open: its end would end the lifeline
        hello = self._hear(lambda said: isinstance(said, control.Hello), 30.0)
        self.endpoint = hello.endpoint
        assert self.endpoint.startswith(f"tcp://{self.host}:")
        endpoints = {self.me: self.endpoint}
        for name in self.plan.lifelines:  # the others' inboxes, where the lifeline's PUSHes go
            if name != self.me:
                inbox = self._socket(zmq.PULL)
                secure_server(inbox, self.key(name))
                endpoints[name] = f"tcp://{self.host}:{inbox.bind_to_random_port(f'tcp://{self.host}')}"
        self.order(control.Start(endpoints))

    def key(self, name: str):
        return self.keys[name] if self.keys else None

    def order(self, message) -> None:
        """Send the lifeline one ``runtime.frames.control`` message, as its supervisor."""
        control.send(self.control, message, self.route)

    def _hear(self, wanted, timeout: float):
        """The first control message from the lifeline for which ``wanted`` holds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"{self.me} exited with {self.process.returncode}; "
                                     f"stderr:\n{self.stderr}")
            if not self.control.poll(50):
                continue
            for heard in control.heard(self.control, self.plan.lifelines, self.keys is not None):
                assert isinstance(heard, control.Heard), heard  # a real lifeline sends none
                assert heard.lifeline == self.me, heard
                said = heard.message
                if isinstance(said, control.Hello):
                    self.route = heard.route
                if isinstance(said, control.State):
                    self.last = said
                if wanted(said):
                    return said
        raise AssertionError(f"nothing wanted from {self.me} within {timeout} s "
                             f"(last state {self.last}); stderr:\n{self.stderr}")

    def probe(self) -> control.State:
        """The lifeline's state now (a probe, answered after it drained its inbox)."""
        self.wave += 1
        wave = self.wave
        self.order(control.Probe(wave))
        return self._hear(lambda said: isinstance(said, control.State) and said.probe == wave,
                          10.0)

    def until(self, predicate, timeout: float = 10.0) -> control.State:
        """Probe until ``predicate(state)`` holds; the state (AssertionError if it never does)."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.probe()
            if predicate(state):
                return state
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.me} never reached the state wanted; last: {state}"
                                     f"\nstderr:\n{self.stderr}")
            time.sleep(0.02)

    def settled(self, predicate, quiet: float = 0.3) -> control.State:
        """``until(predicate)`` holds and the lifeline is not busy taking events, and still
        so after ``quiet`` seconds (nothing more came)."""
        first = self.until(lambda state: state.state != "busy" and predicate(state))
        time.sleep(quiet)
        again = self.probe()
        assert (again.received, again.taken, again.rejected) == \
            (first.received, first.taken, first.rejected), (first, again)
        return again

    def peer(self, name: str, keys: Keys | None = None):
        """A PUSH socket to the lifeline's inbox with the keys of ``name`` (or ``keys``)."""
        push = self._socket(zmq.PUSH)
        if self.keys is not None:
            secure_client(push, keys or self.keys[name], self.keys[self.me].public)
        push.connect(self.endpoint)
        return push

    def runner(self, name: str):
        return self.plan.runner(name, dict(self.stores[name]), self.seed)

    def frame(self, message, /, **changes) -> bytes:
        """The frame of ``message`` as the real sender sends it, fields replaced as asked
        (``version``, ``run``, ``sender``, ``seq``, ``kind``, ``ident``, ``path``, ``values``,
        ``label``, ``outcome``, ``meta``)."""
        return frame(self.run, message, **changes)

    def events(self) -> list[dict]:
        """The lifeline's log so far, ``time`` left out."""
        if not self.log_path.exists():
            return []
        lines = self.log_path.read_text().splitlines()
        return [{k: v for k, v in json.loads(line).items() if k != "time"} for line in lines]

    @property
    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def close(self) -> int | None:
        code = None
        try:
            if self.alive:
                self.order(control.Stop())
                try:
                    code = self.process.wait(5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(5)
            elif self.process is not None:
                code = self.process.returncode
        finally:
            if self.process is not None and self.process.stdin:
                try:
                    self.process.stdin.close()
                except OSError:
                    pass
            kill_tagged(self.tag)
            for made in self.sockets:
                made.close(0)
            if self.auth is not None:
                self.auth.stop()
            self.context.term()
        return code


FIELDS = ("version", "run", "sender", "seq", "kind", "ident", "path", "values", "label",
          "outcome", "meta")  # a frame's fields, in order


def frame(run: str, message, /, **changes) -> bytes:
    """The frame of ``message`` in ``run`` as the real sender sends it, the fields named in
    ``changes`` (of ``FIELDS``) replaced."""
    seq = int(message.msg_id.rsplit(":", 1)[1])
    fields = list(msgpack.unpackb(encode(run, message, seq), raw=False))
    for name, value in changes.items():
        fields[FIELDS.index(name)] = value
    return msgpack.packb(fields, use_bin_type=True)


def reference_events(plan, me: str, seed: int, messages) -> list[dict]:
    """What lifeline ``me`` logs when exactly ``messages`` arrive (in this order): its own
    Runner driven here, each event as the lifeline's log writes it."""
    stores = plan.stores(plan.inputs())
    runner = plan.runner(me, dict(stores[me]), seed)
    events = []
    driver = Driver([runner], first, lambda event: events.append(
        json.loads(json.dumps(event.to_dict()))), lambda message: None)
    for message in messages:
        runner.deliver(message)
        complete(driver.run())
    return events


def listening(pids) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that one of ``pids`` holds."""
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    found = set()
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:
                continue
            address, port = local.split(":")
            if width == 8:
                shown = ".".join(str(int(address[i:i + 2], 16)) for i in (6, 4, 2, 0))
            else:
                shown = address
            found.add((shown, int(port, 16)))
    return found
