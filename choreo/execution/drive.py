"""The one loop that drives Runners: pick an event, run its action, fire it, hand it on.

Every driver of :class:`~choreo.execution.runner.Runner` objects — the seeded
simulator over all lifelines, a lifeline process over its own threads, a
test — does the same thing, written once as :meth:`Driver.run`: while some
event can happen, ``pick`` one of the enabled options, run its action phase
(call the action; await its value if it returns an awaitable), fire it, give
the event to ``emit`` and the message to its receiver: into the receiver's
inbox at once if it is driven here too, else to ``post``.  What differs
between drivers is a parameter, not a branch of the loop:

* ``pick(options)``: the scheduler — a seeded choice over every lifeline's
  events, one lifeline's own seeded choice among its threads, the first;
* ``background``: ``None``, and an action's awaitable is *yielded* to whoever
  iterates the run (:func:`complete`, :func:`complete_async`), who awaits it
  and sends its value back: the run waits.  Or a
  :class:`~choreo.execution.actions.Background`: the action runs there, seeing a
  snapshot of the store, while the lifeline's other threads go on; its own
  thread sits out, and its event is taken once the value is there;
* ``until(steps)``, before each step: true stops the run there; it may also
  raise (Ctrl-C, a deadline).  The simulator checks its limits in it, a
  lifeline process reads its sockets.  A message it delivers to a runner is
  among that runner's options from its next step on, or the next run: a
  runner is asked again after each of its steps and when a run starts.
"""

from __future__ import annotations

from inspect import isawaitable
from typing import Callable

from .actions import bounded, own

# What an action returns that cannot be awaitable, told by its type alone: ``isawaitable``
# asks an ABC, 0.5 µs an action (bench/runner_steps.py).  Exact types: a subclass may be.
_PLAIN = frozenset((type(None), bool, int, float, str, dict, list, tuple))


class Driver:
    """Runners of one plan (a whole simulated run's, or one lifeline's), driven together.

    ``post(message)`` takes each message for a runner not driven here (None: every
    receiver is); ``sent(message, steps)``, if given, hears of each message delivered
    here as it is sent (a scheduler that prefers the newest message needs the order);
    ``before_action()``, if given, is called before each action (an ``emit`` that batches
    its writes hands them on: the action may never return)."""

    def __init__(self, runners, pick: Callable, emit: Callable, post: Callable | None = None,
                 *, background=None, sent: Callable | None = None,
                 before_action: Callable | None = None):
        self.runners = tuple(runners)
        self.pick, self.emit, self.post, self.sent = pick, emit, post, sent
        self.before_action = before_action
        self.background = background
        self.under_way: dict = {}  # thread -> (its option, its action's future), in start order
        self.acting = False  # calling an action, or awaiting it in-line
        self.steps = 0  # events taken so far
        self._here = {runner.name: runner for runner in self.runners}
        # Fixed per driver, not worked out per run: a lifeline process starts a run whenever
        # a message comes to an idle runner, so once a message at worst (bench/runner_steps.py)
        self._width = max(runner.index for runner in self.runners) + 1
        self._only = self.runners[0].index if len(self.runners) == 1 else None  # a lifeline's

    def run(self, until: Callable[[int], bool] | None = None):
        """Take events until none can happen now (returns False) or ``until(steps)`` is true
        (returns True).  A generator: it yields the awaitable of an action awaited in-line
        and takes back its value, or the exception it raised (then a ``RunFailure``)."""
        pick, emit, post, sent, here = self.pick, self.emit, self.post, self.sent, self._here
        background, under_way, before = self.background, self.under_way, self.before_action
        snapshot = background is not None
        # Each runner's options, asked again only of the runners a step changed: the one
        # that fired and the receiver of its message (a step, bench/simulate_runs.py).  At the
        # runner's place in the plan: a list is cheaper to refresh than a dict (same bench).
        lists, only = [()] * self._width, self._only
        # A lone runner without atomic blocks (a lifeline process, mostly): its options are
        # worked out at the top of each step instead, and the commonest case — one thread,
        # its next event not a receive — needs no ``enabled`` scan: it is that thread's
        # event (what ``enabled`` would give, computed at the same moment: after the last
        # step's emit and post, before ``until``).
        lone = self.runners[0] if only is not None and not self.runners[0].atomic else None
        if lone is None:
            for runner in self.runners:
                lists[runner.index] = runner.enabled()
        steps = self.steps
        try:
            while True:
                if under_way and (done := self._finished()) is not None:
                    option, value = done
                    runner = option[0]
                else:
                    if lone is not None:
                        threads = lone.threads
                        if len(threads) != 1 or (want := (thread := threads[0]).want) is None:
                            options = lone.enabled()
                        elif want[0] != "recv":
                            options = [(lone, thread, None)]
                        else:  # enabled() of one thread, inlined: the messages it accepts
                            options = []
                            inbox = lone.inbox
                            for key in want[1]:
                                message = inbox.get(key)
                                if message is not None:
                                    options.append((lone, thread, message))
                    elif only is not None:
                        options = lists[only]  # a new list each step: nobody else holds it
                    else:
                        options = []
                        for some in lists:
                            options += some
                    if under_way:
                        options = [o for o in options if o[1] not in under_way]
                    if not options:
                        return False
                    if until is not None and until(steps):
                        return True
                    option = pick(options)
                    runner, thread, _ = option
                    value, want = None, thread.want
                    if want[0] == "act" and want[1].fn is not None:  # machine.calls, inlined
                        if before is not None:
                            before()
                        self.acting = True
                        value = runner.start(option, snapshot)
                        if type(value) not in _PLAIN and isawaitable(value):
                            if background is not None:
                                under_way[thread] = option, background.submit(value)
                                self.acting = False
                                continue
                            try:
                                value = yield value
                            except BaseException as failure:  # noqa: BLE001 - see own()
                                if not own(failure):
                                    raise
                                raise runner.action_failed(option, failure) from None
                        self.acting = False
                event, message = runner.fire(option, value)
                emit(event)
                steps += 1
                if message is not None:
                    receiver = here.get(message.receiver)
                    if receiver is None:
                        post(message)
                    else:
                        if sent is not None:
                            sent(message, steps)
                        receiver.deliver(message)
                        if lone is None:
                            lists[receiver.index] = receiver.enabled()
                if lone is None:
                    lists[runner.index] = runner.enabled()
        finally:
            self.steps = steps

    def _finished(self) -> tuple | None:
        """(option, value) of the first action under way (in start order) that is done."""
        for thread, (option, future) in self.under_way.items():
            if future.done():
                del self.under_way[thread]
                try:
                    return option, future.result()
                except BaseException as failure:  # noqa: BLE001 - see own()
                    if not own(failure):
                        raise
                    raise option[0].action_failed(option, failure) from None
        return None


def complete(steps, wait: Callable | None = None):
    """Iterate a run (:meth:`Driver.run`, or a generator built on it) to its end and return
    its value, awaiting what it yields with ``wait(awaitable)``; ``None``: nothing is
    awaited in-line (a driver with a ``background``)."""
    try:
        pending = next(steps)
        while True:
            try:
                value = wait(pending)
            except BaseException as error:  # noqa: BLE001 - thrown back into the run
                pending = steps.throw(error)
            else:
                pending = steps.send(value)
    except StopIteration as stop:
        return stop.value


async def complete_async(steps, deadline: float | None = None):
    """:func:`complete` on the running event loop, each await bounded by ``deadline``."""
    import asyncio  # loaded, since a loop runs us; not at the top: a lifeline never needs it
    try:
        pending = next(steps)  # StopIteration at once: a run with no async action
        while True:
            try:
                value = await bounded(pending, deadline)
            except asyncio.CancelledError:
                steps.close()
                raise
            except BaseException as error:  # noqa: BLE001 - the run decides what it means
                pending = steps.throw(error)
            else:
                pending = steps.send(value)
    except StopIteration as stop:
        return stop.value
