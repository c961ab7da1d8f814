"""Every resource of a run over processes is released on every path.

``cpl run`` runs here, in the test's own process, so that what it leaves
behind can be seen: an exception (a bug of ours) or a Ctrl-C is injected at
one stage of the run — once the ZeroMQ context and its ZAP handler exist,
after the control socket is bound, after the first lifeline is launched, while
the run goes on, while the lifelines say their last words, while the logs are
merged — and then ``cpl run`` must have returned (within a bound), with every
lifeline process gone, no socket, pipe, thread or file of the run left (its
temp folder, the ``--hosts`` connection files) nor left to the garbage
collector (a ``ResourceWarning``), and a trace that says the run was
``interrupted`` or ``failed``.  The lifelines are real processes, tagged
(``runtime_util``) so that any left behind is found.
"""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
import warnings

import pytest
import zmq

import runtime.supervisor.following as following
import runtime.supervisor.launchers as launchers
import runtime.supervisor.supervisor as supervisor
from cpl.trace import load_trace
from cpl_cli import main
from runtime_util import ROOT, TAG, kill_tagged, tagged, wait_until

LOOP = str(ROOT / "bench" / "stops_loop.py")  # A and B in a long busy loop
BOUND = 20.0  # seconds for one run, whatever is injected


class Injected(Exception):
    """The fault a test injects (a bug of ours, as cpl run sees it)."""


def _fault(kind: str):
    # ctrl-c: counted by cpl run (runtime.supervisor.interrupts), acted on where it is safe
    if kind == "ctrl-c":
        signal.raise_signal(signal.SIGINT)
        return
    raise Injected("injected")


def _after(original, kind: str, when=lambda *args: True):
    """``original``, then the fault once ``when(*its arguments)`` holds."""
    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        if when(*args):
            _fault(kind)
        return result
    return wrapped


def _inject(monkeypatch, stage: str, kind: str) -> None:
    if stage == "context":  # the context made and its ZAP handler started: the next socket
        original_socket = zmq.Context.socket

        def socket(context, kind_of_socket, *args, **kwargs):
            if kind_of_socket == zmq.ROUTER:
                _fault(kind)
            return original_socket(context, kind_of_socket, *args, **kwargs)
        monkeypatch.setattr(zmq.Context, "socket", socket)
    elif stage == "bind":
        monkeypatch.setattr(zmq.Socket, "bind_to_random_port",
                            _after(zmq.Socket.bind_to_random_port, kind))
    elif stage == "launch":  # the local lifelines started (and the hosts' files written)
        monkeypatch.setattr(launchers.LocalProcesses, "launch",
                            _after(launchers.LocalProcesses.launch, kind))
    elif stage == "watch":  # the run just started, or still starting, or waiting for a join
        began = time.monotonic()
        monkeypatch.setattr(supervisor.Supervisor, "_ended", _after(
            supervisor.Supervisor._ended, kind,
            lambda run, now: run.started_at is not None or now - began > 0.6))
    elif stage == "last words":  # stop said, the lifelines still there
        def last_words(run, control, deadline, hurry):
            _fault(kind)
        monkeypatch.setattr(supervisor.Supervisor, "_last_words", last_words)
    elif stage == "merge":  # once the first event is in the trace
        original = following.Merging.__init__

        def merging(self, lifelines, write, sources):
            def write_then_fail(event):
                write(event)
                if not self.count:
                    _fault(kind)
            original(self, lifelines, write_then_fail, sources)
        monkeypatch.setattr(following.Merging, "__init__", merging)


def _held() -> dict[str, str]:
    """This process's descriptors that are sockets, pipes or anonymous inodes (ZeroMQ's
    signalers, epoll), by number."""
    held = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(("socket:", "pipe:", "anon_inode:")):
            held[fd] = target
    return held


STAGES = ["context", "bind", "launch", "watch", "last words", "merge"]
CASES = [("local", stage, kind) for stage in STAGES for kind in ("error", "ctrl-c")] + \
    [("hosts", stage, kind) for stage in ("launch", "watch", "last words")
     for kind in ("error", "ctrl-c")]


@pytest.mark.parametrize("placed, stage, kind", CASES,
                         ids=[f"{p}-{s.replace(' ', '-')}-{k}" for p, s, k in CASES])
def test_a_fault_at_any_stage_leaves_nothing_behind_and_the_trace_says_so(
        tmp_path, monkeypatch, placed, stage, kind):
    trace_path = tmp_path / "t.jsonl"
    work, temp = tmp_path / "work", tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    args = ["run", LOOP, "--trace", str(trace_path)]
    if placed == "hosts":  # B placed on another host, never joining: A waits with us
        (tmp_path / "hosts.json").write_text('{"hosts": {"127.0.0.2": ["B"]}}')
        args += ["--hosts", str(tmp_path / "hosts.json"), "--join-timeout", "1"]
    else:
        args += ["--timeout", "1.5"]
    tag = f"scope-{os.getpid()}-{placed}-{stage}-{kind}".replace(" ", "-")
    monkeypatch.setenv(TAG, tag)  # every lifeline started inherits it
    monkeypatch.chdir(work)  # where --hosts writes its connection files
    monkeypatch.setattr("tempfile.tempdir", str(temp))  # where the run's folder goes
    threads, held = set(threading.enumerate()), _held()
    _inject(monkeypatch, stage, kind)
    started = time.monotonic()
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always", ResourceWarning)
            code = main(args)
            took = time.monotonic() - started
            gc.collect()  # what was dropped unclosed (socket, context, Popen, folder) says so
        left = wait_until(lambda: not tagged(tag), 2.0) or tagged(tag)
    finally:
        kill_tagged(tag)
    assert [str(w.message) for w in warned if w.category is ResourceWarning] == []
    # Ctrl-C once the run has ended (it timed out, or B never joined) only hurries its stop
    late = kind == "ctrl-c" and stage == "last words"
    meta = load_trace(trace_path).meta
    cut = stage == "merge" and kind == "ctrl-c" and meta.get("unmerged")
    assert code == (1 if late or cut else 130 if kind == "ctrl-c" else 1)
    assert took < BOUND
    assert left is True, f"lifelines left behind: {left}"
    assert set(threading.enumerate()) == threads
    assert _held() == held, "sockets, pipes or ZeroMQ descriptors left open"
    assert list(temp.iterdir()) == [] and list(work.iterdir()) == []
    status = ("not joined" if placed == "hosts" else "timeout") if late else \
        "interrupted" if kind == "ctrl-c" else "failed"
    if stage == "merge" and kind == "ctrl-c" and meta.get("unmerged"):
        status = "timeout"  # a slow start: nothing merged before the end, then Ctrl-C in
        # the last merge cut it short (a test of its own: test_runtime_stops)
    assert meta["status"] == status, meta
