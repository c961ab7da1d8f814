"""One agent's log: its events as they happen, one JSON line each, and reading logs back.

The first line names the agent and its system (``cpl-live/1``), so logs
written by processes on several hosts can be merged without anything else:
each names its lifeline, and all must name the same system.  Every event is
one ``write`` (no buffer of ours: a killed process loses nothing the kernel
has; with ``fsync`` nothing a crashed machine had either), with the
wall-clock ``time`` the merge orders concurrent events by.  ``close`` adds
an end line, so the merge can say which agents closed their logs and which
were cut off.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time

import attrs

from ..errors import TraceError
from ..trace import LIVE_FORMAT, LogTail, encode_json, lifelines_within_cap, unwritable
from .errors import LiveError, LogExists, LogFailed

FORMAT = LIVE_FORMAT  # the first line of every agent's log says it
MAX_HEADER = 64 * 2**20  # bytes: lifelines, variables and starting values, never more
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


class AgentLog:
    """Appends one agent's events to its ``.jsonl`` file."""

    def __init__(self, path: str, descriptor: int, fsync: bool, lifeline: str = ""):
        self.path = path
        self.lifeline = lifeline
        self._descriptor = descriptor
        self._fsync = fsync
        os.register_at_fork(after_in_child=self._forget)

    @classmethod
    def open(cls, where: str, system, lifeline: str, fsync: bool = False,
             overwrite: bool = False) -> "AgentLog":
        """The log at ``where``: a ``.jsonl`` file, or else a folder (made if need be) for
        ``<where>/<lifeline>.jsonl`` (by position, ``<where>/lifeline-<k>.jsonl``, when the
        name is no plain file name): a folder named like a file would have every agent of
        a process truncate one log.  A log that exists is an earlier run's (or another
        agent's): replaced only with ``overwrite``, else ``LiveError`` naming it."""
        where = os.fspath(where)
        try:
            if not where.lower().endswith(".jsonl"):
                os.makedirs(where, exist_ok=True)
                name = lifeline if _SAFE_NAME.fullmatch(lifeline) else \
                    f"lifeline-{system.lifelines.index(lifeline)}"
                where = os.path.join(where, f"{name}.jsonl")
            descriptor = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_APPEND | (
                os.O_TRUNC if overwrite else os.O_EXCL), 0o644)
        except FileExistsError:
            raise LogExists(lifeline, where) from None
        except OSError as error:
            raise LiveError(f"cannot write {lifeline}'s log at {where}: "
                            f"{unwritable(where, error)}") from None
        except ValueError:  # a NUL in the path
            raise LiveError(f"cannot write {lifeline}'s log at {where!r}: the path holds a "
                            f"NUL character") from None
        log = cls(where, descriptor, fsync, lifeline)
        header = {"format": FORMAT, "lifeline": lifeline, "system": system.fingerprint,
                  "lifelines": list(system.lifelines), "vars": sorted(system.variables),
                  "init": system.init}
        if system.symbols is not None:  # the trace re-checks the guards as the system did
            header["symbols"] = sorted(system.symbols)
        log._line(header)
        return log

    def write(self, data: dict) -> int:
        """One event, ``data`` its fields as a trace holds them (``Event.to_dict``'s form,
        built directly by the agent: a fifth of a logged event's cost went to the Event);
        the bytes written."""
        data["time"] = round(time.time(), 6)
        return self._line(data)

    def take_back(self, written: int) -> None:
        """The last line written, taken back (the agent's step after it failed)."""
        if self._descriptor >= 0:
            os.ftruncate(self._descriptor, os.fstat(self._descriptor).st_size - written)

    def close(self, events: int) -> None:
        """The end line, then the file closed (closed too when the end line finds no room:
        ``LogFailed``, and the merge reads the log as cut)."""
        if self._descriptor >= 0:
            try:
                self._line({"end": {"events": events}})
            finally:
                os.close(self._descriptor)
                self._descriptor = -1

    def _line(self, data: dict) -> int:
        """One whole line, or ``LogFailed`` and the file as it was: a write cut short by a
        full disk or a file size limit is taken back, so no torn line is left for the
        merge and the event it held is in neither the log nor the agent."""
        if self._descriptor < 0:
            return 0
        line = (encode_json(data) + "\n").encode("utf-8")
        written = 0
        try:
            written = os.write(self._descriptor, line)
            while written < len(line):  # short: the rest raises if there is no room
                more = os.write(self._descriptor, line[written:])
                if not more:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                written += more
            if self._fsync:
                os.fsync(self._descriptor)
        except OSError as error:
            self._take_back(written, error)
        return written

    def _take_back(self, written: int, error: OSError) -> None:
        why = error.strerror or str(error)
        if written:
            try:
                os.ftruncate(self._descriptor, os.fstat(self._descriptor).st_size - written)
            except OSError as again:  # the torn line stays: the merge names it
                why += f"; the part written could not be taken back ({again.strerror})"
        raise LogFailed(self.lifeline, self.path, why) from None

    def _forget(self) -> None:
        """A forked copy of the agent's process does not write its log."""
        self._descriptor = -1


@attrs.frozen
class LogHeader:
    """What a log's first line says: the agent, its system, and where its events start."""

    path: str
    lifeline: str
    system: str
    lifelines: tuple[str, ...]
    vars: tuple[str, ...]
    init: dict
    start: int  # byte offset of the first event line
    symbols: tuple[str, ...] | None = None  # the system's, if it listed them


def read_header(path: str) -> LogHeader:
    """The header of the agent log at ``path``, or ``TraceError`` naming what is wrong."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would wait, a device never end
            raise TraceError("not a regular file: an agent's log is one", path)
        with open(path, "rb") as handle:
            line = handle.readline(MAX_HEADER + 1)
    except ValueError:  # a NUL in the path
        raise TraceError("the path holds a NUL character", repr(path)) from None
    except OSError as error:
        raise TraceError(f"cannot read it: {error.strerror or error}", path) from None
    try:
        data = json.loads(line) if line.endswith(b"\n") else None
    except (ValueError, RecursionError):
        data = None
    if not (isinstance(data, dict) and data.get("format") == FORMAT):
        raise TraceError(f"not an agent's log: its first line is not a {FORMAT} header "
                         f"(agents write one when cpl.live opens their log)", path)
    lifelines, names = lifelines_within_cap(data.get("lifelines"), path), data.get("vars")
    if not (isinstance(lifelines, list) and lifelines and all(isinstance(n, str) for n in lifelines)
            and len(set(lifelines)) == len(lifelines) and data.get("lifeline") in lifelines
            and isinstance(data.get("system"), str) and isinstance(names, list)
            and all(isinstance(n, str) for n in names) and isinstance(data.get("init"), dict)
            and all(isinstance(store, dict) for store in data["init"].values())):
        raise TraceError("its header is damaged: lifeline, system, lifelines, vars and init "
                         "are missing or of the wrong type", path)
    symbols = data.get("symbols")
    if symbols is not None and not (isinstance(symbols, list)
                                    and all(isinstance(n, str) for n in symbols)):
        raise TraceError("its header is damaged: symbols is not a list of names", path)
    return LogHeader(path, data["lifeline"], data["system"], tuple(lifelines), tuple(names),
                     data["init"], len(line), None if symbols is None else tuple(symbols))




@attrs.frozen
class AgentLogs:
    """The logs of one system's agents, one per lifeline, to merge into a trace."""

    headers: tuple[LogHeader, ...]

    @classmethod
    def collect(cls, paths) -> "AgentLogs":
        """The logs at ``paths`` (files, or folders of ``.jsonl`` logs), checked: all of one
        system, at most one per lifeline; ``TraceError`` naming the file otherwise."""
        files = []
        for path in paths:
            if os.path.isdir(path):
                files += _logs_in(path)
            else:
                files.append(path)
        if not files:
            raise TraceError("no agent logs (.jsonl files) to merge", ", ".join(paths))
        headers = [read_header(path) for path in files]
        first = headers[0]
        owners: dict[str, str] = {}
        for header in headers:
            if (header.system, header.lifelines) != (first.system, first.lifelines):
                raise TraceError(f"the log of another system ({header.system}, not "
                                 f"{first.system} as {first.path}): merge the logs of one "
                                 f"system's agents", header.path)
            if header.lifeline in owners:
                raise TraceError(f"a second log of {header.lifeline!r} (the first is "
                                 f"{owners[header.lifeline]}): give one log per agent",
                                 header.path)
            owners[header.lifeline] = header.path
        return cls(tuple(headers))

    @staticmethod
    def among(folder: str) -> bool:
        """Whether ``folder`` holds an agent's log (else it may be a run's parts)."""
        for path in _logs_in(folder):
            try:
                read_header(path)
                return True
            except TraceError:
                continue
        return False

    @property
    def lifelines(self) -> tuple[str, ...]:
        return self.headers[0].lifelines

    @property
    def trace_header(self) -> dict:
        """The trace's header fields: lifelines, starting values, variables (and symbols)."""
        first = self.headers[0]
        header = {"lifelines": list(first.lifelines), "init": first.init or None,
                  "vars": list(first.vars)}
        if first.symbols is not None:
            header["symbols"] = list(first.symbols)
        return header

    def events(self) -> dict:
        """Lifeline -> its events: a ``LogTail`` from the line after the header (each log
        is read as the merge takes its events)."""
        return {h.lifeline: LogTail(h.path, h.lifeline, h.start, line=2) for h in self.headers}

    def meta(self) -> dict:
        """How the logs ended: ``ok`` if every agent closed its log, else ``vanished``,
        naming the agents whose logs stop without their end line."""
        ended = {h.lifeline: "closed" if _closed(h.path) else "cut" for h in self.headers}
        meta = {"source": FORMAT, "system": self.headers[0].system, "agents": ended}
        cut = [name for name, how in ended.items() if how == "cut"]
        if not cut:
            return {"status": "ok", **meta}
        return {"status": "vanished", **meta, "error": (
            f"the logs of {', '.join(cut[:5])}{' and more' if len(cut) > 5 else ''} end "
            f"without their end line: those agents never closed them (killed, or still "
            f"running)")}


def _logs_in(folder: str) -> list[str]:
    try:
        names = os.listdir(folder)
    except OSError as error:
        raise TraceError(f"cannot list it: {error.strerror or error}", folder) from None
    return sorted(os.path.join(folder, name) for name in names if name.endswith(".jsonl"))


def _closed(path: str, tail: int = 4096) -> bool:
    """Whether the log's last line is its end line."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - tail))
            last = handle.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
        return isinstance(json.loads(last).get("end"), dict)
    except (OSError, ValueError, AttributeError, RecursionError):
        return False
