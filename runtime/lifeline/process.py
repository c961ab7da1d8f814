"""One lifeline as an OS process: the Runner the simulator drives, driven over ZeroMQ.

Sockets, and why: each lifeline binds one PULL socket, its inbox, and
connects one PUSH socket to the inbox of every lifeline it sends to.
Messages need no reply and no routing by identity, a PULL fair-queues the
frames of all its peers, and a PUSH queues until its peer is there, so no
start-up order matters.  Control with the supervisor (:mod:`runtime.frames.control`)
is a DEALER to the supervisor's ROUTER: ``Hello``/``Start`` at the
rendezvous, ``State``/``Probe`` for deadlock detection, ``Stop`` to finish,
and heartbeats both ways — from a thread of their own, so a long synchronous
action does not look like a dead process (one holding the interpreter's lock
throughout is ``unresponsive``).  With CURVE (the default) the
inbox accepts only this run's keys and the ZAP handler names each frame's
real sender, which must match the frame's ``sender``.

Every event is in this lifeline's log as it happens (:mod:`runtime.lifeline.eventlog`:
a memory-mapped file, before any message that makes it visible leaves), so a
crash or ``kill -9`` loses nothing already done; the supervisor merges the
logs into the run's trace.  The Runner is driven by
the loop every driver shares (:class:`choreo.execution.drive.Driver`), synchronous;
an async action runs on an event loop in a thread of its own
(``Background``) while the lifeline's other threads go on, and its event
happens when it is done.  It sees the store as it was when it started.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time

import zmq

from choreo import load_one
from choreo.execution import (
    Background, Interrupted, fingerprint, Driver, complete, Undeliverable, prepare, RunFailure,
    die_with_parent,
)
from choreo.analysis import expected_messages, recipients
from .eventlog import EventLog, ShippedLog
from runtime.frames import (
    Ticket, KeyRing, authenticator, secure_client, secure_server, BEAT, FROM_SUPERVISOR, IDLE,
    SHIPPING, SUPERVISOR_SILENCE, Beat, Hello, Probe, Start, State, Stop, decode, routing_id,
    send, MAX_FRAME, MAX_PARTS, FrameRejected, FrameTooLarge, Inbound, encode,
)
from .outgoing import LATE, Outgoing

_EVENTS, _POLLIN = int(zmq.EVENTS), int(zmq.POLLIN)  # plain ints: enum flags cost per call
READ_EVERY = 8  # steps between two reads of the sockets in a burst of steps
REFUSALS_SHOWN = 3  # refused frames of one reason said on stderr; the rest only counted


class LifelineProcess:
    """One lifeline of a run, serving its Runner over ZeroMQ (the DSL's ``Lifeline`` is the
    choreography's handle of the same name)."""

    def __init__(self, ticket: Ticket, plan=None):
        self.ticket = ticket
        if plan is None:  # loaded here: the fingerprint says whether it is the run's plan
            choreography = load_one(ticket.choreography, ticket.choreography_name)
            self.fingerprint = fingerprint(choreography, ticket.inputs, ticket.seed)
            plan = prepare(choreography)
        else:  # the supervisor's own, prepared before it forked us (runtime.supervisor.zygote)
            self.fingerprint = ticket.fingerprint
        inputs = plan.inputs(values=ticket.inputs)
        name = ticket.lifeline
        self.runner = plan.runner(name, plan.stores(inputs)[name], ticket.seed)
        self.schedule = random.Random(f"{ticket.seed}:{name}:threads")
        self.inbound = Inbound(ticket.run, name, plan.lifelines,
                               expected_messages(plan.projection.program(name)),
                               plan.monitors.carried, plan.monitors.shape,
                               plan.choreography.variables)
        self.choreography = plan.choreography  # its results declaration: what is reported
        self.recipients = recipients(plan.projection.program(name)) - {name}
        self.received = 0
        self.stopping = False
        self.status, self.error = "running", None
        self.last_word = time.monotonic()  # the supervisor's latest frame
        self.log = EventLog(ticket.log) if ticket.log else ShippedLog()
        self.actions: Background | None = None  # runs async actions, while serving
        self.under_way: dict = {}  # thread -> (option, its action's future): the Driver's
        self.outgoing: Outgoing | None = None  # frames sent, not yet handed to ZeroMQ

    def serve(self) -> int:
        context = zmq.Context()
        keys = self.ticket.keys
        auth = authenticator(context, KeyRing(keys.lifelines)) if keys else None
        sockets = []

        def socket(kind):
            made = context.socket(kind)
            made.linger = 0
            sockets.append(made)
            return made
        if threading.current_thread() is threading.main_thread():  # not in a Ray actor's
            # thread, where the worker process is Ray's and handlers cannot be set
            signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stopping", True))
            signal.signal(signal.SIGINT, _interrupted)  # a KeyboardInterrupt of an action's
            # own is then its failure (choreo.execution.actions.own), not a stop
        try:
            inbox = socket(zmq.PULL)
            secure_server(inbox, keys)
            inbox.maxmsgsize = MAX_FRAME
            port = inbox.bind_to_random_port(f"tcp://{self.ticket.host}")
            control = socket(zmq.DEALER)
            control.linger = 2000  # a shipped log's last lines still leave after stop
            control.sndhwm = SHIPPING  # a slow supervisor holds a shipper back, soon
            control.identity = routing_id(self.ticket.lifeline)
            secure_client(control, keys, keys.supervisor if keys else None)
            control.connect(self.ticket.supervisor)
            send(control, Hello(f"tcp://{self.ticket.host}:{port}", self.fingerprint))
            if self.fingerprint != self.ticket.fingerprint:
                print(f"cpl lifeline {self.ticket.lifeline}: the plan loaded here "
                      f"({self.fingerprint}) differs from the run's ({self.ticket.fingerprint}): "
                      f"is {self.ticket.choreography} the supervisor's file, unchanged?",
                      file=sys.stderr)
                return 1
            endpoints = self._await_start(control)
            if endpoints is None:
                return 1
            outboxes = {}  # a socket (and a CURVE handshake) only where messages can go
            for peer, endpoint in endpoints.items():
                if peer in self.recipients:
                    outboxes[peer] = socket(zmq.PUSH)
                    secure_client(outboxes[peer], keys, keys.lifelines[peer] if keys else None)
                    outboxes[peer].connect(endpoint)
            beats = _Heartbeat(context, self.ticket)
            try:
                with Background() as self.actions:
                    try:
                        self._run(inbox, control, outboxes)
                    finally:
                        if self.outgoing is not None:
                            self.outgoing.close()  # its thread ends before the sockets close
                self.log.ship(control)
                self._report(control, "end", final=True)  # results as they are at the stop
            finally:
                beats.stop()
            return 0
        finally:
            self.log.close()  # a shipped log sends its last lines before the sockets close
            for made in sockets:
                made.close()
            if auth is not None:
                auth.stop()
            context.term()

    def _await_start(self, control):
        """``start``'s inboxes; None if stopped or if the supervisor (it pings from our hello
        on) is silent for ``SUPERVISOR_SILENCE``.  Polled a beat at a time (SIGTERM)."""
        while not self.stopping:
            if control.poll(int(BEAT * 1000)):
                self.last_word = time.monotonic()
                order = decode(control.recv(), FROM_SUPERVISOR)
                if isinstance(order, Start):
                    return order.endpoints
                self.stopping |= isinstance(order, Stop)
            elif time.monotonic() - self.last_word > SUPERVISOR_SILENCE:
                print(f"cpl lifeline {self.ticket.lifeline}: no answer from the supervisor at "
                      f"{self.ticket.supervisor}", file=sys.stderr)
                return None
        return None

    def _run(self, inbox, control, outboxes) -> None:
        runner, reported = self.runner, None
        poller = zmq.Poller()
        poller.register(inbox, zmq.POLLIN)
        poller.register(control, zmq.POLLIN)
        poller.register(self.actions.wake_fd, zmq.POLLIN)
        shipped = isinstance(self.log, ShippedLog)  # its frames leave after its log lines
        self._control = control
        self._readable = [(inbox, _POLLIN), (control, _POLLIN)]
        self.outgoing = Outgoing(lambda: self.stopping, lambda socket: self._make_room(
            socket, inbox, control), late=None if shipped else LATE)
        flush = self._flush if shipped else None
        driver = Driver([runner], self._pick, self.log.write,
                        self._poster(outboxes), background=self.actions,
                        before_action=flush)
        self.under_way = driver.under_way

        def between(steps: int) -> bool:
            """Between two steps: every ``READ_EVERY`` steps, read the sockets (messages,
            orders); a stop ends the run."""
            if not steps % READ_EVERY:
                self._drain(inbox, control)
            return self.stopping
        while not self.stopping:
            self._drain(inbox, control)
            if self.stopping:
                break
            if self.status == "running":
                try:
                    complete(driver.run(between))  # until nothing can happen now, or a stop
                except RunFailure as failure:
                    self.status, self.error = "failed", failure.render()
                self._flush()  # before any wait: nothing more to do now
                if self.stopping:
                    break
            self.actions.drain()  # a late wake must not keep the polls below from sleeping
            if self.under_way and self.status == "running":  # busy, not idle: wait for them
                if time.monotonic() - self.last_word > SUPERVISOR_SILENCE:
                    return
                if not any(future.done() for _, future in self.under_way.values()):
                    poller.poll(int(BEAT * 1000))
                continue
            if self.status == "running" and runner.done:
                self.status = "ok"
            state = ("idle" if self.status == "running" else "end", runner.sent, self.received)
            self.log.ship(control)
            if state[0] == "end" and state != reported:
                self._report(control, "end")
                reported = state
            if time.monotonic() - self.last_word > SUPERVISOR_SILENCE:
                return  # the supervisor is gone: nobody will merge or stop us
            # Idle: say so only if it lasts, so a busy run sends no reports at all.
            quiet = IDLE if state != reported else BEAT
            if not poller.poll(int(quiet * 1000)) and state != reported:
                self._report(control, state[0])
                reported = state

    def _pick(self, options: list):
        """This lifeline's seeded choice among its threads' events."""
        return options[self.schedule.randrange(len(options))] if len(options) > 1 else options[0]

    def _poster(self, outboxes):
        """``post(message)``: queue its frame (its send is in the log already); frames
        ready together leave together (:mod:`runtime.lifeline.outgoing`).  A closure: once a
        message, every name it uses is bound here."""
        run, runner, put = self.ticket.run, self.runner, self.outgoing.put

        def post(message) -> None:
            try:
                frame = encode(run, message, runner.sent)
            except FrameTooLarge as error:  # the send happened; its message cannot travel
                raise RunFailure(self.ticket.lifeline, f"{self.ticket.lifeline}.{runner.taken}",
                                 str(error), kind="message", after=False) from None
            put(outboxes[message.receiver], frame)
        return post

    def _flush(self) -> None:
        """Send the queued frames, a shipped log's lines first (before they leave)."""
        if self.outgoing:
            self.log.ship(self._control)
            self.outgoing.flush()

    def _make_room(self, socket, inbox, control) -> None:
        """A peer's queue is full: keep taking ours meanwhile."""
        self._drain(inbox, control)
        socket.poll(100, zmq.POLLOUT)

    def _drain(self, inbox, control) -> None:
        """Take every frame waiting now: messages into the Runner's inbox, orders from the
        supervisor.  Frames that fail the checks are counted and dropped."""
        # One zmq_poll asks both sockets: a ZMQ_EVENTS each cost twice as much (pyzmq
        # looks the option up in an enum per call), a failed non-blocking recv four times
        for socket, _ in zmq.zmq_poll(self._readable, 0):
            if socket is inbox:
                self._take(inbox)
                while inbox.getsockopt(_EVENTS) & _POLLIN:  # once a message, not a frame
                    self._take(inbox)
                continue
            while control.getsockopt(_EVENTS) & _POLLIN:
                order = decode(control.recv(), FROM_SUPERVISOR)
                self.last_word = time.monotonic()
                if isinstance(order, Stop):
                    self.stopping = True
                elif isinstance(order, Probe):  # Mattern's wave: our state as of now
                    busy = self.status == "running" and (self.under_way
                                                         or self.runner.enabled())
                    self._report(control, "busy" if busy else "idle"
                                 if self.status == "running" else "end", probe=order.wave)

    def _take(self, inbox) -> None:
        """One ZeroMQ message from the inbox: its parts, each a frame checked on its own
        (a peer sends the frames ready together as one message, runtime.lifeline.outgoing), all
        there at once (ZeroMQ delivers a message whole), from one peer (one ``User-Id``).
        A message of more than ``MAX_PARTS`` parts is refused whole, no part of it checked."""
        part = inbox.recv(copy=False)
        signer = part.get("User-Id") if self.ticket.keys is not None else None
        if not part.more:
            return self._accept((part.bytes,), signer)
        frames, count = [part.bytes], 1
        while part.more:
            part = inbox.recv(copy=False)
            count += 1
            if count <= MAX_PARTS:
                frames.append(part.bytes)
        if count > MAX_PARTS:
            self.inbound.rejected["parts"] += count
            return self._tell_refused(FrameRejected(
                "parts", f"a message of {count} parts from {signer or 'a peer'} (a lifeline "
                f"sends at most {MAX_PARTS} at once): all refused"), count)
        self._accept(frames, signer)

    def _accept(self, frames, signer: str | None) -> None:
        """Check each frame, deliver what passes (the Runner takes no step meanwhile)."""
        check, deliver, taken = self.inbound.check, self.runner.deliver, self.runner.taken
        for frame in frames:
            try:
                message = check(frame, taken, signer)
                try:
                    deliver(message)
                except Undeliverable as error:  # a second copy of a message still waiting
                    self.inbound.rejected[error.reason] += 1
                    raise FrameRejected(error.reason, str(error)) from None
            except FrameRejected as rejected:
                self._tell_refused(rejected)
                continue
            self.received += 1

    def _tell_refused(self, rejected: FrameRejected, count: int = 1) -> None:
        """Say the first few refusals of each reason; count the rest (a peer holding
        the run's keys must not be able to flood standard error).  ``count``: frames
        the refusal covers, counted already."""
        shown = self.inbound.rejected[rejected.reason]
        if shown - count < REFUSALS_SHOWN:
            print(f"cpl lifeline {self.ticket.lifeline}: refused a frame: {rejected}",
                  file=sys.stderr)
        if shown - count < REFUSALS_SHOWN <= shown:
            print(f"cpl lifeline {self.ticket.lifeline}: further frames refused as "
                  f"{rejected.reason!r} are counted (the trace's meta.rejected_frames), "
                  "not shown", file=sys.stderr)

    def _report(self, control, state: str, probe=None, final: bool = False) -> None:
        store = self.runner.store
        results = self.choreography.reported(self.ticket.lifeline, store)
        send(control, State(state, self.status, self.error, self.runner.sent, self.received,
                            self.runner.taken, results, self.runner.waiting(),
                            dict(self.inbound.rejected), probe, final))


class _Heartbeat:
    """A thread that tells the supervisor this process lives, whatever the run is doing."""

    def __init__(self, context, ticket: Ticket):
        self._stop = threading.Event()
        self._socket = context.socket(zmq.DEALER)
        self._socket.linger = 0
        self._socket.identity = routing_id(ticket.lifeline)
        keys = ticket.keys
        secure_client(self._socket, keys, keys.supervisor if keys else None)
        self._socket.connect(ticket.supervisor)
        self._thread = threading.Thread(target=self._beat, name="cpl-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(BEAT):
            send(self._socket, Beat())

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._socket.close(0)


def _interrupted(*_) -> None:
    raise Interrupted


def main(ticket: Ticket, watch_stdin: bool, plan=None) -> int:
    """Run the lifeline; with ``watch_stdin`` it dies with the supervisor (at once on Linux,
    else at the end of standard input, the supervisor's pipe), and the supervisor's keeper
    kills its process group (:mod:`choreo.execution.lineage`): a supervisor killed with -9 leaves
    nothing behind."""
    if watch_stdin:  # started by cpl run: its child, leading a process group of its own
        die_with_parent()
        threading.Thread(target=_exit_on_eof, name="cpl-parent", daemon=True).start()
    return LifelineProcess(ticket, plan).serve()


def _exit_on_eof() -> None:
    while os.read(0, 1 << 12):  # raw reads: a daemon thread must not hold sys.stdin's lock
        pass
    os._exit(3)
