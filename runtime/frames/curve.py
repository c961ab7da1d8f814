"""The CURVE keys that protect a run: who holds which, and who may connect.

Every lifeline and the supervisor has its own key pair; a socket others connect to
is a CURVE server, and a ZAP handler (:class:`Zap`) lets in only this run's keys,
naming each frame's sender by its key's owner.
"""

from __future__ import annotations

import os
import threading

import attrs
import zmq
from zmq.utils import z85


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
