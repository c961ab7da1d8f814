"""Reading one lifeline's event log, as it grows or once written: its events and where it stops.

A lifeline's log holds its events in local order, one JSON line each
(``runtime.lifeline.eventlog`` for a run's lifelines, ``cpl.live`` for agents).  The
merge reads it a chunk at a time, with at most 32 logs open at once (the
least recently read closed, opened again when read again): no limit on
open files can leave a log unread.  Where a log stops short of its
end (a line that is no event of its lifeline, a line over ``MAX_LINE``, a
file that cannot be read) the tail says so (``stop``): the merge counts
everything from there on as unplaced and keeps it (``cpl.trace.unplaced``).
"""

from __future__ import annotations

import collections
import errno
import json
import math
import os
import re
import stat
from typing import Iterator

import attrs
import msgspec

from .msc import Event, KINDS

_FIELDS = frozenset(Event._fields)
MAX_LINE = 64 * 2**20  # bytes: as the trace reader's, a longer line is not an event
_FIRST = json.JSONDecoder().raw_decode  # (a JSON value, where it ends) in text
_DECODE = msgspec.json.decode  # a whole line: 3-5 times json.loads' speed
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # an escaped surrogate: maybe not in a pair
_BLANK = b" \t\r\0"  # what a memory-mapped log has past its lines (spaces; zeros if killed)


@attrs.frozen
class Stop:
    """Where a log stops short of its end: the ``line`` (1 is the file's first; ``None``
    when the file could not be read at all), the byte ``offset`` it starts at, and why."""

    line: int | None
    offset: int
    why: str


def read_log(path: str, lifeline: str | None = None, start: int = 0,
             line: int = 1) -> Iterator[dict]:
    """The events of one lifeline's log from byte ``start`` (line ``line``: past an agent
    log's header), as ``LogTail`` takes them once its writer has stopped."""
    tail = LogTail(path, lifeline, start, line)
    try:
        yield from iter(tail.take, None)
    finally:
        tail.close()


class _Descriptors:
    """The logs open for reading: at most ``most``, the least recently read closed first,
    so a merge of any number of logs stays under any limit on open files (a log that
    could not be opened was once read as empty, its events lost), while a run of a few
    lifelines keeps each open, reading on even if its file is renamed or deleted."""

    def __init__(self, most: int):
        self.most = most
        self._open: collections.OrderedDict = collections.OrderedDict()  # tail -> descriptor

    def get(self, tail) -> int | None:
        descriptor = self._open.get(tail)
        if descriptor is not None:
            self._open.move_to_end(tail)
        return descriptor

    def put(self, tail, descriptor: int) -> None:
        self._open[tail] = descriptor
        while len(self._open) > self.most:
            os.close(self._open.popitem(last=False)[1])

    def drop(self, tail) -> None:
        descriptor = self._open.pop(tail, None)
        if descriptor is not None:
            os.close(descriptor)

    def clear(self) -> None:
        while self._open:
            os.close(self._open.popitem()[1])


_OPEN = _Descriptors(32)


def _opened(path: str) -> int:
    """``path`` opened for reading without waiting (a FIFO); at the limit on open files,
    again once the other logs are closed."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return os.open(path, flags)
    except OSError as error:
        if error.errno not in (errno.EMFILE, errno.ENFILE):
            raise
    _OPEN.clear()
    return os.open(path, flags)


class LogTail:
    """One log read as it grows: ``take()`` is its next whole event, or ``None`` when there
    is none yet (or none ever: ``done``).  ``where`` is the (line, offset) of the last event
    taken; ``stop`` says where and why the log stopped short of its end, if it did.

    The merge reads the logs while the lifelines write them (``runtime.supervisor.supervisor``).
    A line is whole once the newline before it is there (``runtime.lifeline.eventlog`` writes
    that newline last) or, for the first line and a line whose newline follows it
    (a log written line by line), once its text is a whole JSON value: a JSON object
    cut short is no JSON value.  The log ends at the end of the file, at a zero byte,
    or at an agent's end line; its last line may lack the newline and be followed by
    spaces and maybe the next line being written in a lifeline's memory-mapped log:
    its first JSON value is the event.  A last line cut by a crash is no JSON and is
    no event: not there yet, for the tail."""

    CHUNK = 1 << 16  # bytes read at once; more while a line goes on past them

    def __init__(self, path: str, lifeline: str | None = None, start: int = 0, line: int = 1):
        self.path, self.lifeline = path, lifeline
        self.done = False  # the log ended for good: its end, or a ``stop``
        self.stop: Stop | None = None
        self.where: tuple[int, int] | None = None
        self.start = self._at = start  # where its events start; the end of the last taken
        self._line = line  # the line of the next event
        self._ready: list = []  # (event, line, offset) read, not taken yet (last first)

    def take(self) -> dict | None:
        if not self._ready and not self.done:
            self._read()
        if not self._ready:
            return None
        event, line, offset = self._ready.pop()
        self.where = (line, offset)
        return event

    def close(self) -> None:
        """Close the log if it is open (it is opened again if read again)."""
        _OPEN.drop(self)

    @property
    def next_line(self) -> tuple[int, int]:
        """(line, offset) where the text past the last event taken starts."""
        return (self.where[0] if self.where else self._line), self._at

    def _halt(self, line: int | None, offset: int, why: str) -> None:
        self.done = True
        self.stop = Stop(line, offset, why)

    def _read(self) -> None:
        """The whole events past the last one taken, a chunk's worth, into ``_ready``."""
        descriptor = self._descriptor()
        if descriptor is None:
            return
        found: list = []
        try:
            size = self.CHUNK
            while not self.done:
                try:
                    data = os.pread(descriptor, size, self._at)
                except OSError as error:
                    return self._halt(self._line, self._at,
                                      f"cannot be read: {error.strerror or error}")
                taken, longer = self._lines(data, len(data) == size, found)
                self._at += taken
                if found or not longer:
                    break
                size = min(size * 4, MAX_LINE + 2)  # its next line goes on past what was read
        finally:
            found.reverse()
            self._ready = found
            if self.done:
                self.close()

    def _descriptor(self) -> int | None:
        """The log open for reading (kept among the ``_OPEN`` most recently read), or
        ``None``: not there yet, or it cannot be read (``stop`` says why)."""
        descriptor = _OPEN.get(self)
        if descriptor is not None:
            return descriptor
        try:
            descriptor = _opened(self.path)
        except FileNotFoundError:
            return None  # not yet: its lifeline has not started
        except OSError as error:
            return self._halt(None, self._at, f"cannot be opened: {error.strerror or error}")
        except ValueError:
            return self._halt(None, self._at, "cannot be opened: its path holds a NUL character")
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # a device or a pipe would
            os.close(descriptor)  # never end
            return self._halt(None, self._at, "is not a regular file")
        _OPEN.put(self, descriptor)
        return descriptor

    def _lines(self, data: bytes, cut: bool, found: list) -> tuple[int, bool]:
        """The whole events at the start of ``data`` (the file from ``_at``; ``cut``: it goes
        on past ``data``) into ``found``: how many bytes they took, and whether a longer
        read would find more."""
        at = taken = 0
        first = self._at == self.start
        while True:
            if not first:  # the newline that ends the last event taken, maybe after spaces
                newline = data.find(b"\n", at)  # (a memory-mapped log has a window of them)
                if newline < 0:
                    return taken, False  # not there yet
                if data[at:newline].strip(b" \t\r"):
                    self._halt(self._line - 1, self._at + at, "holds more after its event")
                    return taken, False
                at = newline + 1
            first = False
            end = data.find(b"\n", at)
            line = data[at:] if end < 0 else data[at:end]
            if len(line) + (end >= 0) > MAX_LINE:  # with its newline
                self._halt(self._line, self._at + at, f"is longer than {MAX_LINE >> 20} MiB, "
                           f"the most a trace's line may be")
                return taken, False
            zero = line.find(b"\0")
            if zero >= 0:  # where the log ends
                line = line[:zero]
            elif end < 0 and cut and len(line.rstrip(b" \t\r")) > self.CHUNK:
                return taken, True  # a long line goes on past what was read: read it whole
                # first (a short one followed by spaces is a memory-mapped log's last line)
            event, length = _value(line, end >= 0 and zero < 0)
            why = _not_event(event, self.lifeline) if length else event
            if why is not None:
                if end < 0 and zero < 0 and cut and length == 0:
                    return taken, True  # the line may go on past what was read
                if length > 0 or end >= 0:  # a whole line that is no event ends the log
                    self.done = True  # (the last may be unfinished: not there yet)
                    if not _is_end(event):  # an agent's end line is the log's end
                        self.stop = Stop(self._line, self._at + at, why)
                return taken, False
            found.append((event, self._line, self._at + at))
            self._line += 1
            at = taken = at + length
            if zero >= 0:  # the log ends here; or, being written, its next line is not there
                return taken, False  # yet (the file grew before the map filled it in)


def rest_of(path: str, offset: int, line: int) -> Iterator[tuple[int, int, bytes | None, bool]]:
    """What a log holds from byte ``offset`` (line ``line``) to its end: (line, offset, its
    bytes, whether a newline ends it) for each non-blank line, the bytes ``None`` for a line
    over ``MAX_LINE`` (read past, never held).  For the merge's account of what it could
    not place; nothing for a file that cannot be read (its ``Stop`` says why)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return
        held, size, start, at = [], 0, offset, offset  # the line so far: its pieces, length
        while data := os.pread(descriptor, 1 << 20, at):
            begin = 0
            while (newline := data.find(b"\n", begin)) >= 0:
                size += newline - begin
                text = None if size > MAX_LINE else b"".join(held) + data[begin:newline]
                if text is None or text.strip(_BLANK):
                    yield line, start, text, True
                held, size, begin = [], 0, newline + 1
                line, start = line + 1, at + begin
            size += len(data) - begin
            held = [] if size > MAX_LINE else held + [data[begin:]]  # read past, never held
            at += len(data)
        text = None if size > MAX_LINE else b"".join(held)
        if text is None or text.strip(_BLANK):
            yield line, start, text, False
    except OSError:
        return
    finally:
        os.close(descriptor)


def _value(line: bytes, whole: bool) -> tuple[object, int]:
    """The JSON value a log's line holds, and how many of its bytes it takes (0: none, and
    instead of the value why not).  A line not followed by a newline (``whole`` false) may
    be followed by the start of the next, being written: its first JSON value is the event."""
    try:
        try:  # not past the value's end: the next line's newline may go in the spaces after it
            event, length = _DECODE(line), len(line.rstrip(b" \t\r"))
        except msgspec.DecodeError:  # what msgspec refuses json may take (NaN, 1e999): the
            try:  # merge says why such an event cannot be placed
                event, length = json.loads(line), len(line.rstrip(b" \t\r"))
            except ValueError:
                if whole or not line.startswith(b"{"):
                    raise
                text = line.decode("utf-8", "surrogateescape")  # its bytes kept
                line = text[:_FIRST(text)[1]].encode("utf-8", "surrogateescape")
                event, length = json.loads(line), len(line)
        if _SURROGATE.search(line):  # a lone one cannot be written as UTF-8
            try:
                json.dumps(event, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                return "holds a lone surrogate, which no trace can hold", 0
    except RecursionError:
        return "is nested too deep", 0
    except ValueError:
        return "is not JSON", 0  # or a writer that died inside this line
    return event, length


def _is_end(value) -> bool:
    """An agent's end line (``cpl.live``): ``{"end": {...}}``."""
    return isinstance(value, dict) and len(value) == 1 and isinstance(value.get("end"), dict)


def _not_event(value, lifeline: str | None) -> str | None:
    """Why a log's JSON value is not an event (of ``lifeline``, if named), or ``None``."""
    if not isinstance(value, dict):
        return "is not an event: not a JSON object"
    extra = sorted(set(value) - _FIELDS)
    if extra:
        return f"is not an event: it has {extra[0]!r}, which no event has"
    if value.get("kind") not in KINDS:
        return "is not an event: its \"kind\" is none of act, send, recv, choice"
    if not isinstance(value.get("id"), str):
        return "is not an event: its \"id\" is not a string"
    if lifeline is not None and value.get("lifeline") != lifeline:
        return (f"is an event of {_shown(value.get('lifeline'))}, not of {_shown(lifeline)} "
                f"whose log this is")
    return None


def bad_field(event: dict) -> str | None:
    """Why the merge cannot order or place ``event`` (a field of the wrong type), or
    ``None``: its ``time`` must be a finite number, its ``msg`` (and a send's ``to``) a
    string, its ``set`` an object."""
    time = event.get("time")
    if time is not None and (type(time) not in (int, float) or not math.isfinite(time)):
        return f"its \"time\" is {_shown(time)}, not a number of seconds"
    if not isinstance(event.get("set", {}), dict):
        return f"its \"set\" is {_shown(event['set'])}, not an object of values"
    kind = event["kind"]
    if kind in ("send", "recv") and not isinstance(event.get("msg"), str):
        return f"its \"msg\" is {_shown(event.get('msg'))}, not a message id"
    if kind == "send" and not isinstance(event.get("to"), str):
        return f"its \"to\" is {_shown(event.get('to'))}, not a lifeline"
    return None


def _shown(value, most: int = 60) -> str:
    """A value as JSON, shortened."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        text = repr(value)
    return text if len(text) <= most else text[:most - 1] + "…"
