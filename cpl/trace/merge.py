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
supervisor merges at the end of a run; ``cpl merge`` merges the same logs
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

from .clocks import Clocks
from .msc import KINDS, Event


_FIELDS = frozenset(Event._fields)
MAX_LINE = 64 * 2**20  # bytes: as the trace reader's, a longer line is not an event
_FIRST = json.JSONDecoder().raw_decode  # (a JSON value, where it ends) in text
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
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return  # a device or a pipe would never end
        handle = open(path, "rb")
    except (OSError, ValueError):
        return
    with handle:
        handle.seek(start)
        while True:
            line = handle.readline(MAX_LINE + 1)
            if len(line) > MAX_LINE:
                return
            last = not line.endswith(b"\n")
            if b"\0" in line:
                line, last = line[:line.index(b"\0")], True
            try:
                try:
                    event = json.loads(line)
                except ValueError:
                    if not (last and line.startswith(b"{")):
                        raise
                    text = line.decode("utf-8", "surrogateescape")  # its bytes kept
                    line = text[:_FIRST(text)[1]].encode("utf-8", "surrogateescape")
                    event = json.loads(line)  # the event a line being written follows
                if _SURROGATE.search(line):  # a lone one cannot be written as UTF-8
                    json.dumps(event, ensure_ascii=False).encode("utf-8")
            except (ValueError, RecursionError):
                return  # no event, or a writer that died inside this line
            if not (isinstance(event, dict) and set(event) <= _FIELDS
                    and event.get("kind") in KINDS and isinstance(event.get("id"), str)
                    and (lifeline is None or event.get("lifeline") == lifeline)):
                return
            yield event
            if last:
                return


def merge(logs: dict[str, Iterator[dict]], lifelines: tuple[str, ...], write) -> dict:
    """Write every placeable event, in causal order with its ``vc``; returns what the trace's
    ``meta`` should add: ``in_transit`` (sends never received) and ``unplaced``."""
    _room_for(len(lifelines))
    clocks = Clocks(lifelines)
    waiting: dict[str, list] = {}  # msg id -> (lifeline, its next event, which receives it)
    heads: list = []  # (time, order, lifeline, event) of placeable next events
    sources = {name: iter(logs.get(name, ())) for name in lifelines}
    order = 0

    def push(name: str, event: dict) -> None:
        nonlocal order
        order += 1
        heapq.heappush(heads, (event.get("time") or 0.0, order, name, event))

    def advance(name: str) -> None:
        event = next(sources[name], None)
        if event is None:
            return
        if event.get("kind") == "recv" and not clocks.sent(event.get("msg")):
            waiting.setdefault(event.get("msg"), []).append((name, event))
        else:
            push(name, event)

    for name in lifelines:
        advance(name)
    malformed = 0
    while heads:
        _, _, name, event = heapq.heappop(heads)
        try:  # a line that is no event stops its lifeline's log there
            built = Event(**event)
            if built.kind == "recv" and not clocks.sent(built.msg):
                raise ValueError("a receive of a message its log does not send")
            write(built._replace(vc=clocks.stamp(name, built.kind, built.msg)))
        except (TypeError, ValueError):
            malformed += 1
            continue
        if event.get("kind") == "send":
            for receiver, pending in waiting.pop(event["msg"], ()):
                push(receiver, pending)
        advance(name)
    unplaced = sum(len(names) for names in waiting.values()) + malformed
    return {"in_transit": clocks.in_transit, "unplaced": unplaced}


def _room_for(logs: int) -> None:
    """Every log is open at once while merging, and a log that cannot be opened reads as
    empty: lift this process's soft limit on open files (often 1,024) to fit them all."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = logs + 256  # and the sockets, the trace and the interpreter's own
    if soft != resource.RLIM_INFINITY and soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (
            wanted if hard == resource.RLIM_INFINITY else min(wanted, hard), hard))
