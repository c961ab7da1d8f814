"""What a lifeline process needs to join a run, and the CURVE keys that protect it.

The supervisor writes one ``Connection`` per lifeline: the run id, where the
supervisor listens, where to bind, the choreography, its inputs and the
fingerprint of that plan, the event log path, and — unless ``--insecure`` —
the lifeline's own CURVE key pair, the supervisor's public key and every
lifeline's public key.  A local child reads it from its standard input (a
pipe nobody else can read); a lifeline on another host reads it from a
connection file only its owner can read, as Jupyter kernels do.  Secret keys
are never on a command line or in the environment.
"""

from __future__ import annotations

import json
import os
import threading

import attrs
import zmq
from zmq.utils import z85

from cpl.errors import EXIT_USAGE, CplError

_LONGEST = 16 << 20  # characters of a connection file: keys and addresses, a few kB a lifeline


class JoinError(CplError):
    """A connection file or stdin blob that cannot be used (exit 2)."""

    exit_code = EXIT_USAGE

    def for_cli(self, command: str) -> str:
        return f"error: {self}"


@attrs.frozen
class Keys:
    """z85 CURVE keys: this lifeline's pair, the supervisor's and every lifeline's public key."""

    public: str
    secret: str
    supervisor: str
    lifelines: dict = attrs.field(eq=False)  # name -> public key

    @staticmethod
    def pair() -> tuple[str, str]:
        public, secret = zmq.curve_keypair()
        return public.decode("ascii"), secret.decode("ascii")

    @classmethod
    def for_run(cls, lifelines, own: dict[str, str]) -> dict[str, Keys]:
        """Every lifeline's keys, and the supervisor's (``""``): a pair made here for each,
        but for the lifelines that made their own where they run (``own``: only their
        public key came here, their ``secret`` is ``""``)."""
        pairs = {name: cls.pair() for name in ("", *lifelines) if name not in own}
        public = {name: own[name] if name in own else pairs[name][0] for name in lifelines}
        return {name: cls(public[name] if name else pairs[""][0],
                          pairs[name][1] if name in pairs else "", pairs[""][0], public)
                for name in ("", *lifelines)}


@attrs.frozen
class Connection:
    run: str
    lifeline: str
    supervisor: str  # tcp://HOST:PORT of the supervisor's control socket
    host: str  # the address this lifeline binds its inbox on
    choreography: str  # path of the CHOREO.py
    choreography_name: str | None  # which choreography in that file (--name)
    inputs: dict = attrs.field(eq=False)
    seed: int
    fingerprint: str  # of the plan the supervisor loaded (choreo.fingerprint): ours must match
    log: str  # this lifeline's event log (JSON Lines, one event per line); "": shipped
    keys: Keys | None  # None: --insecure

    def to_json(self) -> str:
        return json.dumps(attrs.asdict(self))

    @classmethod
    def from_json(cls, text: str, origin: str = "connection") -> "Connection":
        try:
            data = json.loads(text)
            keys = data.pop("keys")
            connection = cls(**data, keys=Keys(**keys) if keys is not None else None)
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise JoinError(f"{origin}: not a cpl connection ({error})") from None
        for field in ("run", "lifeline", "supervisor", "host", "choreography", "fingerprint",
                      "log"):
            if not isinstance(getattr(connection, field), str):
                raise JoinError(f"{origin}: {field!r} must be text")
        return connection

    @classmethod
    def read(cls, path: str, lifeline: str) -> "Connection":
        """``lifeline``'s connection from a host's connection file (``write_connections``)."""
        try:
            if os.path.exists(path) and not os.path.isfile(path):  # a FIFO waits, /dev/zero
                raise JoinError(f"{path}: a connection file is a regular file; this is not")
            if os.stat(path).st_mode & 0o077:
                raise JoinError(f"{path}: a connection file holds secret keys and must be "
                                f"readable by its owner only (chmod 600 {path})")
            with open(path, encoding="utf-8") as handle:
                text = handle.read(_LONGEST + 1)
            if len(text) > _LONGEST:
                raise JoinError(f"{path}: longer than a connection file can be "
                                f"({_LONGEST >> 20} MiB)")
            data = json.loads(text)
        except OSError as error:
            raise JoinError(f"{path}: cannot read the connection file: {error.strerror}") from None
        except ValueError as error:
            raise JoinError(f"{path}: not a cpl connection file ({error})") from None
        entries = data.get("lifelines") if isinstance(data, dict) else None
        if not isinstance(entries, dict) or lifeline not in entries:
            known = ", ".join(entries) if isinstance(entries, dict) else "none"
            raise JoinError(f"{path}: no connection for lifeline {lifeline!r} (it has {known})")
        return cls.from_json(json.dumps(entries[lifeline]), path)


def write_connections(path: str, connections) -> None:
    """One host's connection file, readable by its owner only (created with mode 0600)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"lifelines": {c.lifeline: json.loads(c.to_json()) for c in connections}},
                  handle)


def secure_server(socket, keys: Keys | None) -> None:
    """A socket others connect to: CURVE server with this lifeline's (or supervisor's) pair."""
    if keys is not None:
        socket.curve_secretkey = keys.secret.encode("ascii")
        socket.curve_publickey = keys.public.encode("ascii")
        socket.curve_server = True


def secure_client(socket, keys: Keys | None, server_public: str | None) -> None:
    """A socket that connects to a CURVE server whose public key is ``server_public``."""
    if keys is not None:
        socket.curve_secretkey = keys.secret.encode("ascii")
        socket.curve_publickey = keys.public.encode("ascii")
        socket.curve_serverkey = server_public.encode("ascii")


class KeyRing:
    """ZAP credentials: only this run's keys connect, and each is named by its owner,
    so a frame's ``User-Id`` tells the receiver which lifeline really sent it."""

    def __init__(self, keys: dict[str, str]):
        self.owner = {public.encode("ascii"): name for name, public in keys.items()}

    def callback(self, domain, key: bytes) -> bool:
        return key in self.owner


def authenticator(context, ring: KeyRing) -> "Zap":
    """Start a ZAP handler on ``context`` that accepts ``ring``'s keys only."""
    return Zap(context, ring)


class Zap:
    """A ZAP handler (ZeroMQ RFC 27) in a thread of its own: a CURVE client whose public
    key ``ring`` holds is accepted and named by its owner (its frames' ``User-Id``);
    anything else is refused.  Bound before it returns, so no CURVE server socket of
    ``context`` ever handshakes without it.  Ours rather than ``zmq.auth``'s, whose
    thread runs an asyncio loop: importing asyncio alone cost every ``cpl run`` ~20 ms
    of start-up, and every lifeline a loop."""

    _ENDPOINT = "inproc://zeromq.zap.01"  # where libzmq asks (RFC 27)

    def __init__(self, context, ring: KeyRing):
        self._ring = ring
        self._requests = context.socket(zmq.REP)
        self._requests.linger = 0
        self._requests.bind(self._ENDPOINT)
        wake = f"inproc://cpl-zap-{id(self):x}-{os.getpid()}"
        self._asleep, self._waker = context.socket(zmq.PAIR), context.socket(zmq.PAIR)
        self._asleep.linger = self._waker.linger = 0
        self._asleep.bind(wake)
        self._waker.connect(wake)
        self._thread = threading.Thread(target=self._serve, name="cpl-zap", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._requests, zmq.POLLIN)
        poller.register(self._asleep, zmq.POLLIN)
        try:
            while True:
                ready = dict(poller.poll())
                if self._asleep in ready:
                    return
                if self._requests in ready:
                    self._requests.send_multipart(self._answer(self._requests.recv_multipart()))
        except zmq.ContextTerminated:  # the context ended without stop(): nothing to answer
            pass
        finally:
            self._requests.close()
            self._asleep.close()

    def _answer(self, request: list) -> list:
        """``200`` and the owner's name for a CURVE key of the ring; ``400`` otherwise."""
        version, ident = (request + [b"", b""])[:2]
        if version != b"1.0":
            return [b"1.0", ident, b"500", b"unsupported ZAP version", b"", b""]
        mechanism, credentials = (request[5], request[6:]) if len(request) >= 6 else (b"", [])
        if mechanism == b"CURVE" and len(credentials) == 1 and len(credentials[0]) == 32:
            owner = self._ring.owner.get(z85.encode(credentials[0]))
            if owner is not None:
                return [b"1.0", ident, b"200", b"OK", owner.encode("utf-8"), b""]
        return [b"1.0", ident, b"400", b"unknown key", b"", b""]

    def stop(self) -> None:
        """Wake the thread, wait for it: its sockets are closed when this returns."""
        if self._thread.is_alive():
            self._waker.send(b"")
            self._thread.join()
        self._waker.close()
