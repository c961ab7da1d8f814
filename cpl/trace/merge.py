"""Merging the lifelines' event logs into one ``cpl-msc/1`` trace, clocks computed here.

Each lifeline process, and each agent of ``cpl.live``, logs its own events
in local order (one JSON line each, with the wall-clock ``time`` it took them).  The run's trace lists all
events in a linear extension of the causal order: repeatedly take, among
the lifelines whose next event can be placed (anything but a receive whose
send is not placed yet), the one taken earliest.  The vector clock of each
event — which no message needs to carry — is computed on the way, from the
graph itself: the previous local event's clock, merged with the send's for
a receive, plus one on the lifeline's own entry.

Memory is the clocks of the messages in transit, not the run's length.  A
log cut by a crash is read up to its last whole line; a receive whose send
was never logged cannot be placed and is counted in ``meta.unplaced``.  The
supervisor merges as the run goes (``Merging``, the logs read as they grow by
``LogTail``); ``cpl merge`` merges the same logs
(``runtime.parts``) when the supervisor vanished before it could, and the
logs of agents that no ``cpl run`` started (``cpl.live``).
"""

from __future__ import annotations

import heapq
import json
import os
import re
import resource
import stat
from typing import Iterator

import msgspec

from .clocks import Clocks
from .msc import KINDS, Event


_FIELDS = frozenset(Event._fields)
MAX_LINE = 64 * 2**20  # bytes: as the trace reader's, a longer line is not an event
_FIRST = json.JSONDecoder().raw_decode  # (a JSON value, where it ends) in text
_DECODE = msgspec.json.decode  # a whole line: 3-5 times json.loads' speed
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # an escaped surrogate: maybe not in a pair


def read_log(path: str, lifeline: str | None = None, start: int = 0) -> Iterator[dict]:
    """The events of one lifeline's log from byte ``start`` (past an agent log's header).

    The log ends at the end of the file or at a zero byte; its last line may lack the
    newline, and is followed by spaces and maybe the next line being written in a
    lifeline's memory-mapped log (while it runs or after a kill, ``runtime.eventlog``):
    its first JSON value is the event.  A line cut by a crash is no JSON and is
    dropped.  Everything from a line that is not one of ``lifeline``'s events (a log
    shipped from another host, or left in a folder, is only as good as its writer; an
    agent's end line) or is longer than ``MAX_LINE`` is dropped too."""
    tail = LogTail(path, lifeline, start)
    try:
        yield from iter(tail.take, None)
    finally:
        tail.close()


class LogTail:
    """One log read as it grows: ``take()`` is its next whole event, or ``None`` when there
    is none yet (or none ever: ``done``).

    The merge reads the logs while the lifelines write them (``runtime.supervisor``).
    A line is whole once the newline before it is there (``runtime.eventlog`` writes
    that newline last) or, for the first line and a line whose newline follows it
    (a log written line by line), once its text is a whole JSON value: a JSON object
    cut short is no JSON value.  So what it takes is what ``read_log`` reads once the
    writer has stopped: nothing more, nothing less.  Past the last event taken the file
    may still change (the memory map fills it in place): it is read again each time."""

    CHUNK = 1 << 16  # bytes read at once; more while a line goes on past them

    def __init__(self, path: str, lifeline: str | None = None, start: int = 0):
        self.path, self.lifeline = path, lifeline
        self.done = False  # the log ended for good: a line that is no event, or no file
        self._start = self._at = start  # where its events start; the end of the last taken
        self._handle = None
        self._ready: list[dict] = []  # events read, not taken yet (last first)

    def take(self) -> dict | None:
        if not self._ready and not self.done:
            self._read()
        return self._ready.pop() if self._ready else None

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def _open(self) -> bool:
        try:
            if not stat.S_ISREG(os.stat(self.path).st_mode):
                self.done = True  # a device or a pipe would never end
                return False
            self._handle = open(self.path, "rb")
        except FileNotFoundError:
            return False  # not yet: its lifeline has not started
        except (OSError, ValueError):
            self.done = True
            return False
        return True

    def _read(self) -> None:
        """The whole events past the last one taken, a chunk's worth, into ``_ready``."""
        if self._handle is None and not self._open():
            return
        size, found = self.CHUNK, []
        while not self.done:
            try:
                data = os.pread(self._handle.fileno(), size, self._at)
            except OSError:
                self.done = True
                break
            taken, longer = self._lines(data, len(data) == size, found)
            self._at += taken
            if found or not longer:
                break
            size = min(size * 4, MAX_LINE + 2)  # its next line goes on past what was read
        found.reverse()
        self._ready = found

    def _lines(self, data: bytes, cut: bool, found: list) -> tuple[int, bool]:
        """The whole events at the start of ``data`` (the file from ``_at``; ``cut``: it goes
        on past ``data``) into ``found``: how many bytes they took, and whether a longer
        read would find more."""
        at = taken = 0
        first = self._at == self._start
        while True:
            if not first:  # the newline that ends the last event taken, maybe after spaces
                newline = data.find(b"\n", at)  # (a memory-mapped log has a window of them)
                if newline < 0:
                    return taken, False  # not there yet
                if data[at:newline].strip(b" \t\r"):
                    self.done = True  # more on the last event's line: no log of ours
                    return taken, False
                at = newline + 1
            first = False
            end = data.find(b"\n", at)
            line = data[at:] if end < 0 else data[at:end]
            if len(line) + (end >= 0) > MAX_LINE:  # with its newline
                self.done = True
                return taken, False
            zero = line.find(b"\0")
            if zero >= 0:  # where the log ends
                line = line[:zero]
            event, length = _value(line, end >= 0 and zero < 0)
            if not _is_event(event, self.lifeline):
                if end < 0 and zero < 0 and cut and length == 0:
                    return taken, True  # the line may go on past what was read
                # A whole line that is no event ends the log; the last may be unfinished
                self.done = length > 0 or end >= 0
                return taken, False
            found.append(event)
            at = taken = at + length
            if zero >= 0:  # the log ends here; or, being written, its next line is not there
                return taken, False  # yet (the file grew before the map filled it in)


def _value(line: bytes, whole: bool) -> tuple[object, int]:
    """The JSON value a log's line holds, and how many of its bytes it takes (0: none).
    A line not followed by a newline (``whole`` false) may be followed by the start of the
    next, being written: its first JSON value is the event."""
    try:
        try:  # not past the value's end: the next line's newline may go in the spaces after it
            event, length = _DECODE(line), len(line.rstrip(b" \t\r"))
        except msgspec.DecodeError:  # what msgspec refuses json may take (NaN, 1e999): the
            try:  # merge counts such an event unplaced, as it always did
                event, length = json.loads(line), len(line.rstrip(b" \t\r"))
            except ValueError:
                if whole or not line.startswith(b"{"):
                    raise
                text = line.decode("utf-8", "surrogateescape")  # its bytes kept
                line = text[:_FIRST(text)[1]].encode("utf-8", "surrogateescape")
                event, length = json.loads(line), len(line)
        if _SURROGATE.search(line):  # a lone one cannot be written as UTF-8
            json.dumps(event, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError):
        return None, 0  # no JSON, or a writer that died inside this line
    return event, length


def _is_event(value, lifeline: str | None) -> bool:
    """Whether a log's value is an event (of ``lifeline``, if named)."""
    return (isinstance(value, dict) and set(value) <= _FIELDS and value.get("kind") in KINDS
            and isinstance(value.get("id"), str)
            and (lifeline is None or value.get("lifeline") == lifeline))


def merge(logs: dict[str, Iterator[dict]], lifelines: tuple[str, ...], write) -> dict:
    """Write every placeable event, in causal order with its ``vc``; returns what the trace's
    ``meta`` should add: ``in_transit`` (sends never received) and ``unplaced``."""
    sources = {name: iter(logs.get(name, ())) for name in lifelines}
    merging = Merging(lifelines, write, {name: lambda it=it: next(it, None)
                                         for name, it in sources.items()})
    merging.step()
    return merging.placed()


class Merging:
    """The merge of logs that may still grow: each ``step`` places every event that can be
    placed now, and ``placed()`` says what the trace's ``meta`` adds once the logs are done.

    ``sources`` give each lifeline's next event, or ``None`` when there is none yet (a
    ``LogTail``): that lifeline is *dry*, asked again at the next step, while the others'
    events go on being placed.  Whatever a lifeline logs later cannot precede them
    causally: a lifeline logs each event before any message that makes it visible
    leaves (``runtime.eventlog``), so a receive's send is in its log first."""

    def __init__(self, lifelines: tuple[str, ...], write, sources: dict):
        _room_for(len(lifelines))
        self._clocks = Clocks(lifelines)
        self._write = write
        self._sources = sources
        self._waiting: dict[str, list] = {}  # msg id -> (lifeline, its next event) receiving it
        self._heads: list = []  # (time, order, lifeline, event) of placeable next events
        self._dry = set(lifelines)  # lifelines with no next event read
        self._order = 0
        self._malformed = 0
        self.count = 0  # events written

    def step(self, stop=None, every: int = 256) -> bool:
        """Place what can be placed now; with ``stop``, asked every ``every`` events, until
        it says so.  Whether everything placeable now was placed."""
        for name in sorted(self._dry):
            self._dry.discard(name)
            self._advance(name)
        heads, clocks, write = self._heads, self._clocks, self._write
        asked = 0
        while heads:
            if stop is not None and not asked % every and stop():
                return False
            asked += 1
            _, _, name, event = heapq.heappop(heads)
            try:  # a line that is no event stops its lifeline's log there
                kind, msg = event["kind"], event.get("msg")
                if "lifeline" not in event or kind == "recv" and not clocks.sent(msg):
                    raise ValueError("no lifeline, or a receive of a message never sent")
                event["vc"] = clocks.stamp(name, kind, msg)
                write(Event(**event))
                self.count += 1
            except (TypeError, ValueError):
                self._malformed += 1
                continue
            if event.get("kind") == "send":
                for receiver, pending in self._waiting.pop(event["msg"], ()):
                    self._push(receiver, pending)
            self._advance(name)
        return True

    def placed(self) -> dict:
        """What the trace's ``meta`` adds: ``in_transit`` (sends never received) and
        ``unplaced`` (receives whose send was never logged, lines that are no event)."""
        unplaced = sum(len(names) for names in self._waiting.values()) + self._malformed
        return {"in_transit": self._clocks.in_transit, "unplaced": unplaced}

    def _push(self, name: str, event: dict) -> None:
        self._order += 1
        heapq.heappush(self._heads, (event.get("time") or 0.0, self._order, name, event))

    def _advance(self, name: str) -> None:
        event = self._sources[name]()
        if event is None:
            self._dry.add(name)
        elif event.get("kind") == "recv" and not self._clocks.sent(event.get("msg")):
            self._waiting.setdefault(event.get("msg"), []).append((name, event))
        else:
            self._push(name, event)


def _room_for(logs: int) -> None:
    """Every log is open at once while merging, and a log that cannot be opened reads as
    empty: lift this process's soft limit on open files (often 1,024) to fit them all."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = logs + 256  # and the sockets, the trace and the interpreter's own
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (
            wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
