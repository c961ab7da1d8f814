"""The memory-mapped event log and the outgoing frame queue."""

from __future__ import annotations

import os
import resource
import signal
import threading
import time

import pytest
import zmq

from cpl.trace import read_log
from cpl.trace.msc import Event
from runtime.lifeline.eventlog import EventLog
from runtime.lifeline.outgoing import LATE, Outgoing


def _event(index: int, text: str = "x") -> Event:
    return Event(f"A.{index}", "A", "send", to="B", msg=f"A:{index}",
                 set={"n": index, "s": text}, label="data")


def _lines(path) -> int:
    with open(path, "rb") as handle:  # as tests/test_runtime_recovery.py counts events
        return sum(1 for _ in handle)


def test_the_log_reads_back_as_the_events_while_written_and_after_closing(tmp_path):
    path = tmp_path / "0.jsonl"
    log = EventLog(str(path), window=4096)  # windows move many times
    assert _lines(path) == 0
    texts = ["é\n\u0000\"", "\u2028", "x" * 9000]  # escapes, a line longer than the window
    for index in range(1, 301):
        log.write(_event(index, texts[index % 3]))
        if index in (1, 2, 150):
            assert [e["id"] for e in read_log(str(path), "A")] == \
                [f"A.{i}" for i in range(1, index + 1)]
            assert _lines(path) == index
    events = list(read_log(str(path), "A"))
    assert [e["set"]["s"] for e in events] == [texts[i % 3] for i in range(1, 301)]
    assert all(set(e) == {"id", "lifeline", "kind", "to", "msg", "set", "label", "time"}
               for e in events)
    log.close()
    assert list(read_log(str(path), "A")) == events and _lines(path) == 300
    assert path.read_bytes().endswith(b"}")  # cut to its lines: no spaces left


def test_a_killed_writer_leaves_only_whole_events_as_many_as_lines(tmp_path):
    """Killed with -9 at random moments while writing as fast as it can: every time, the
    events read back are exactly the lines, in order, and none is cut."""
    for attempt in range(8):
        path = tmp_path / f"{attempt}.jsonl"
        child = os.fork()
        if child == 0:  # pragma: no cover - the child is killed
            log = EventLog(str(path), window=8192)
            index = 0
            while True:
                index += 1
                log.write(_event(index, "y" * (index % 200)))
        time.sleep(0.05 + 0.03 * attempt)
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        events = list(read_log(str(path), "A"))
        assert len(events) == _lines(path) > 0
        assert [e["id"] for e in events] == [f"A.{i}" for i in range(1, len(events) + 1)]


def test_near_a_file_size_limit_the_log_grows_by_the_line_then_fails_as_write_did(tmp_path):
    path = tmp_path / "0.jsonl"
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    log = EventLog(str(path))  # a 1 MiB window would not fit under 20,000 bytes
    try:
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, hard))
        with pytest.raises(OSError):
            for index in range(1, 10_000):
                log.write(_event(index))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    written = list(read_log(str(path), "A"))
    assert 100 < len(written) == _lines(path) and os.path.getsize(path) <= 20_000
    log.close()


@pytest.fixture
def pair():
    context = zmq.Context()
    pull, push = context.socket(zmq.PULL), context.socket(zmq.PUSH)
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    push.connect(f"tcp://127.0.0.1:{port}")
    yield pull, push
    pull.close(0)
    push.close(0)
    context.term()


def test_queued_frames_leave_together_in_order_each_a_part(pair):
    pull, push = pair
    queue = Outgoing(lambda: False, lambda socket: None, late=None)
    for index in range(5):
        queue.put(push, b"frame %d" % index)
    assert not pull.poll(50)  # nothing leaves before a flush (no thread: late=None)
    queue.flush()
    assert pull.poll(2000)
    assert pull.recv_multipart() == [b"frame %d" % index for index in range(5)]
    queue.close()


def test_a_frame_never_waits_behind_a_long_action(pair):
    """The lifeline's thread queues a frame, then runs a long action: the queue's own
    thread sends the frame after about ``LATE``, not after the action."""
    pull, push = pair
    queue = Outgoing(lambda: False, lambda socket: None)
    try:
        queue.put(push, b"before the action")
        began = time.monotonic()
        acting = threading.Thread(target=time.sleep, args=(2.0,))  # the long call
        acting.start()
        assert pull.poll(1500), "the frame waited for the action"
        assert pull.recv() == b"before the action"
        assert time.monotonic() - began < 1.0 + LATE
        acting.join()
    finally:
        queue.close()


@pytest.mark.parametrize("closed", [False, True], ids=["killed", "closed"])
def test_a_log_read_while_written_gives_what_it_holds_once_written(tmp_path, closed):
    """The supervisor merges the logs as the lifelines write them (``LogTail``): read
    concurrently with a writer as fast as it can go (windows moving, lines longer than a
    read), then after the writer is killed or closes its log, the events taken are
    exactly those ``read_log`` finds once the writer has stopped, in order, none cut."""
    from cpl.trace.merge import LogTail
    path = tmp_path / "0.jsonl"
    child = os.fork()
    if child == 0:  # pragma: no cover - the writer, killed or ending on its own
        log = EventLog(str(path), window=8192)
        for index in range(1, 6000 if closed else 1_000_000):
            log.write(_event(index, "y" * (index % 300) + ("z" * 70_000 if index % 997 == 0
                                                           else "")))
        log.close()
        os._exit(0)
    tail, taken = LogTail(str(path), "A"), []
    deadline = time.monotonic() + (30 if closed else 0.4)
    while time.monotonic() < deadline:
        event = tail.take()
        if event is None:
            if closed and os.waitpid(child, os.WNOHANG)[0]:
                child = 0
                break
            time.sleep(0.0005)
        else:
            taken.append(event)
    if child:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    taken.extend(iter(tail.take, None))  # what is left once the writer has stopped
    tail.close()
    written = list(read_log(str(path), "A"))
    assert taken == written and len(written) == _lines(path) > 100
    assert [e["id"] for e in taken] == [f"A.{i}" for i in range(1, len(taken) + 1)]
    if closed:
        assert len(taken) == 5999
