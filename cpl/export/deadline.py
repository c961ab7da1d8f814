"""One deadline for a whole HTTP request: urllib's own timeout bounds each socket operation.

A collector that answers one byte every few seconds never lets a read time out,
so ``cpl export --timeout 3`` would wait for as long as it trickles.  A
``Deadline`` watches every socket its request opens (the TCP connection, and the
TLS socket over it before its handshake) and, when its time is up, shuts them
down from a timer thread: the read blocked in them returns at once, and
``passed`` says why.  Shutting a socket down, not closing it, leaves its file
descriptor to the thread that owns it, so no other file can take its number.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.request

SOONEST = 0.001  # seconds: a socket timeout of 0 would make it non-blocking


class Deadline:
    """``with Deadline(seconds) as deadline``: the sockets ``watch``ed inside are shut down
    when ``seconds`` have passed (``passed`` is then true), never after the block ends."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self.passed = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._over = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> "Deadline":
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._over = True
        self._timer.cancel()

    def left(self) -> float:
        """Seconds left (at least ``SOONEST``): a connect's own timeout."""
        return max(self.at - time.monotonic(), SOONEST)

    def watch(self, sock):
        """Shut ``sock`` down when the time is up (at once if it is up already)."""
        with self._lock:
            self._sockets.append(sock)
            late = self.passed and not self._over
        if late:
            _shut(sock)
        return sock

    def _expire(self) -> None:
        with self._lock:
            if self._over:
                return
            self.passed = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock) -> None:
    try:  # the plain socket's shutdown, also for a TLS one (its own would drop its state)
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # closed already, or detached into the TLS socket watched instead
        pass


def _connection(base, deadline: Deadline):
    """``base`` (an ``http.client`` connection class) whose sockets ``deadline`` watches."""

    class Bounded(base):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._create_connection = lambda *a, **k: deadline.watch(
                socket.create_connection(*a, **k))

        def connect(self):
            self.timeout = deadline.left()  # no operation waits past the deadline
            super().connect()
            deadline.watch(self.sock)

    return Bounded


class _HTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline):
        super().__init__()
        self.deadline = deadline

    def http_open(self, req):
        return self.do_open(_connection(http.client.HTTPConnection, self.deadline), req)


def bounded_opener(deadline: Deadline) -> urllib.request.OpenerDirector:
    """urllib's opener (proxies from the environment, redirects, errors as usual) whose
    connections ``deadline`` watches."""
    handlers: list = [_HTTP(deadline)]
    if hasattr(http.client, "HTTPSConnection"):
        handlers.append(_https(deadline))
    return urllib.request.build_opener(*handlers)


def _https(deadline: Deadline):
    import ssl

    class Watched(ssl.SSLSocket):
        """A TLS socket watched from before its handshake: a trickled handshake ends too."""

        def do_handshake(self, *args, **kwargs):
            deadline.watch(self)
            return super().do_handshake(*args, **kwargs)

    context = ssl.create_default_context()  # what urllib uses when given none
    context.sslsocket_class = Watched

    class HTTPS(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(_connection(http.client.HTTPSConnection, deadline), req,
                                context=context)

    return HTTPS(context=context)
