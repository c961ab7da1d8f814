"""One lifeline as an OS process: the Runner the simulator drives, driven over ZeroMQ.

Sockets, and why: each lifeline binds one PULL socket, its inbox, and
connects one PUSH socket to the inbox of every lifeline it sends to.
Messages need no reply and no routing by identity, a PULL fair-queues the
frames of all its peers, and a PUSH queues until its peer is there, so no
start-up order matters.  Control with the supervisor is a DEALER (identity:
the lifeline's name) to the supervisor's ROUTER: ``hello``/``start`` at the
rendezvous, ``idle``/``probe`` for deadlock detection, ``end``/``stop`` to
finish, and heartbeats both ways — from a thread of their own, so a long
synchronous action does not look like a dead process.  With CURVE (the
default) the inbox accepts only this run's keys and the ZAP handler names
each frame's real sender, which must match the frame's ``sender``.

Every event is appended to this lifeline's log as it happens (one JSON line,
written through to the operating system before any message that makes it
visible leaves), so a crash or ``kill -9`` loses nothing already done; the
supervisor merges the logs into the run's trace.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import random
import sys
import threading
import time

import msgpack
import zmq
import zmq.asyncio

from choreo import load_one
from choreo.machine import Message, calls, expected_messages
from choreo.plan import prepare
from choreo.status import RunFailure
from .connection import Connection, KeyRing, authenticator, secure_client, secure_server
from .wire import MAX_FRAME, FrameRejected, Inbound, encode

BEAT = 0.5  # seconds between heartbeats
SUPERVISOR_SILENCE = 10.0  # seconds without a word from the supervisor: it is gone


class EventLog:
    """This lifeline's events, one JSON line each, written through as they happen."""

    def __init__(self, path: str):
        self._handle = open(path, "w", encoding="utf-8", buffering=1 << 16)
        self._pending = 0

    def write(self, event) -> None:
        data = event.to_dict()
        data["time"] = round(time.time(), 6)  # the merge orders concurrent events by it
        self._handle.write(json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n")
        self._pending += 1

    def flush(self) -> None:
        """To the operating system: survives the process, not the machine."""
        if self._pending:
            self._handle.flush()
            self._pending = 0

    def close(self) -> None:
        self.flush()
        self._handle.close()


def send_control(socket, **fields) -> None:
    socket.send(msgpack.packb(fields, use_bin_type=True), zmq.NOBLOCK)


class Lifeline:
    def __init__(self, connection: Connection):
        self.c = connection
        plan = prepare(load_one(connection.choreography, connection.name))
        inputs = plan.inputs(values=connection.inputs)
        name = connection.lifeline
        self.runner = plan.runner(name, plan.stores(inputs)[name], connection.seed)
        self.schedule = random.Random(f"{connection.seed}:{name}:threads")
        self.inbound = Inbound(connection.run, name, plan.lifelines,
                               expected_messages(plan.projection.program(name)),
                               len(plan.lifelines))
        self.expected = plan.choreography.results.get(name) or tuple(self.runner.store)
        self.received = 0
        self.stopping = False
        self.status, self.error = "running", None
        self.last_word = time.monotonic()  # the supervisor's latest frame
        self.log = EventLog(connection.log)

    async def serve(self) -> int:
        sync_context = zmq.Context()
        context = zmq.asyncio.Context.shadow(sync_context)
        keys = self.c.keys
        auth = authenticator(sync_context, KeyRing(keys.lifelines)) if keys else None
        sockets = []

        def socket(kind):
            made = context.socket(kind)
            made.linger = 0
            sockets.append(made)
            return made
        try:
            inbox = socket(zmq.PULL)
            secure_server(inbox, keys)
            inbox.maxmsgsize = MAX_FRAME
            port = inbox.bind_to_random_port(f"tcp://{self.c.host}")
            control = socket(zmq.DEALER)
            control.identity = self.c.lifeline.encode("utf-8")
            secure_client(control, keys, keys.supervisor if keys else None)
            control.connect(self.c.supervisor)
            send_control(control, t="hello", endpoint=f"tcp://{self.c.host}:{port}")
            endpoints = await self._await_start(control)
            if endpoints is None:
                return 1
            outboxes = {}
            for peer, endpoint in endpoints.items():
                if peer != self.c.lifeline:
                    outboxes[peer] = socket(zmq.PUSH)
                    secure_client(outboxes[peer], keys, keys.lifelines[peer] if keys else None)
                    outboxes[peer].connect(endpoint)
            beats = _Heartbeat(sync_context, self.c)
            try:
                await self._run(inbox, control, outboxes)
            finally:
                beats.stop()
            return 0
        finally:
            self.log.close()
            for made in sockets:
                made.close(0)
            if auth is not None:
                auth.stop()
            sync_context.term()

    async def _await_start(self, control):
        while True:
            if await control.poll(int(SUPERVISOR_SILENCE * 1000)) == 0:
                print(f"cpl lifeline {self.c.lifeline}: no answer from the supervisor at "
                      f"{self.c.supervisor}", file=sys.stderr)
                return None
            order = msgpack.unpackb(await control.recv(), raw=False)
            if order.get("t") == "start":
                return order["endpoints"]
            if order.get("t") == "stop":
                return None

    async def _run(self, inbox, control, outboxes) -> None:
        runner, reported = self.runner, None
        poller = zmq.asyncio.Poller()
        poller.register(inbox, zmq.POLLIN)
        poller.register(control, zmq.POLLIN)
        while not self.stopping:
            self._drain(inbox, control)
            if self.stopping:
                break
            options = runner.enabled() if self.status == "running" else []
            if options:
                await self._take(options, outboxes)
                continue
            self.log.flush()
            if self.status == "running" and runner.done:
                self.status = "ok"
            state = ("idle" if self.status == "running" else "end", runner.sent, self.received)
            if state != reported:
                self._report(control, state[0])
                reported = state
            if time.monotonic() - self.last_word > SUPERVISOR_SILENCE:
                return  # the supervisor is gone: nobody will merge or stop us
            await poller.poll(int(BEAT * 1000))

    async def _take(self, options, outboxes) -> None:
        runner = self.runner
        option = options[self.schedule.randrange(len(options))] if len(options) > 1 else options[0]
        try:
            value = None
            if calls(option):
                value = runner.start(option)
                if inspect.isawaitable(value):
                    try:
                        value = await value
                    except (Exception, SystemExit) as failure:
                        raise runner.action_failed(option, failure) from None
            event, message = runner.fire(option, value)
        except RunFailure as failure:
            self.status, self.error = "failed", failure.render()
            return
        self.log.write(event)
        if message is not None:
            self.log.flush()  # the send is on disk before anyone can see its message
            await outboxes[message.receiver].send(encode(self.c.run, message, runner.sent))

    def _drain(self, inbox, control) -> None:
        """Take every frame waiting now: messages into the Runner's inbox, orders from the
        supervisor.  Frames that fail the checks are counted and dropped."""
        while True:
            try:
                frame = inbox.recv(zmq.NOBLOCK, copy=False).result()
            except zmq.Again:
                break
            self._accept(frame)
        while True:
            try:
                order = msgpack.unpackb(control.recv(zmq.NOBLOCK).result(), raw=False)
            except zmq.Again:
                break
            except Exception:  # noqa: BLE001 - only the supervisor talks here (CURVE)
                continue
            self.last_word = time.monotonic()
            kind = order.get("t") if isinstance(order, dict) else None
            if kind == "stop":
                self.stopping = True
            elif kind == "probe":
                self._report(control, "idle" if not self.runner.enabled() and
                             self.status == "running" else
                             "end" if self.status != "running" else "busy",
                             probe=order.get("n"))

    def _accept(self, frame) -> None:
        try:
            key, sender, values, metadata, label, outcome, msg_id = \
                self.inbound.check(frame.bytes, self.runner.taken)
            if self.c.keys is not None and frame.get("User-Id") != sender:
                self.inbound.rejected["impostor"] += 1
                raise FrameRejected("impostor", f"signed by {frame.get('User-Id')!r}, "
                                    f"claims to be {sender!r}")
            self.runner.deliver(Message(key, sender, self.c.lifeline, values, metadata, label,
                                        outcome, msg_id))
        except (FrameRejected, ValueError) as rejected:
            print(f"cpl lifeline {self.c.lifeline}: refused a frame: {rejected}",
                  file=sys.stderr)
            return
        self.received += 1

    def _report(self, control, state: str, probe=None) -> None:
        results = {x: self.runner.store[x] for x in self.expected if x in self.runner.store}
        send_control(control, t="state", state=state, status=self.status, error=self.error,
                     sent=self.runner.sent, received=self.received, taken=self.runner.taken,
                     results=results, waiting=self.runner.waiting(),
                     rejected=dict(self.inbound.rejected), probe=probe)


class _Heartbeat:
    """A thread that tells the supervisor this process lives, whatever the run is doing."""

    def __init__(self, context, connection: Connection):
        self._stop = threading.Event()
        self._socket = context.socket(zmq.DEALER)
        self._socket.linger = 0
        self._socket.identity = f"{connection.lifeline}\x00beat".encode("utf-8")
        keys = connection.keys
        secure_client(self._socket, keys, keys.supervisor if keys else None)
        self._socket.connect(connection.supervisor)
        self._thread = threading.Thread(target=self._beat, name="cpl-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(BEAT):
            try:
                self._socket.send(b"beat", zmq.NOBLOCK)
            except zmq.ZMQError:
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close(0)


def main(connection: Connection, watch_stdin: bool) -> int:
    """Run the lifeline; with ``watch_stdin`` the end of standard input (the supervisor's
    pipe) ends the process: a supervisor killed with -9 leaves no lifeline behind."""
    if watch_stdin:
        threading.Thread(target=_exit_on_eof, name="cpl-parent", daemon=True).start()
    return asyncio.run(Lifeline(connection).serve())


def _exit_on_eof() -> None:
    while os.read(0, 1 << 12):  # raw reads: a daemon thread must not hold sys.stdin's lock
        pass
    os._exit(3)
