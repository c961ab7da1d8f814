"""A run's parts: its lifelines' logs and what its trace says of it, in one folder.

While a run over processes goes, every lifeline appends its events to
``<folder>/<N>.jsonl`` (N its place in the lifelines), and ``run.json``,
written before any lifeline starts, holds the trace's header and what its
``meta`` says of the run whatever its end (choreography, seed, inputs, run
id).  With ``--trace T`` the folder is ``T.parts`` beside the trace, named in
its header, and ``cpl run`` removes it once the trace is written whole; if the
supervisor vanishes first, ``cpl merge`` rebuilds the trace from the folder
alone.  While the run goes the folder is locked (:class:`Claim`, ``cpl.trace.hold``):
no second run or merge touches a live run's parts.  Everything read back from a
folder is checked: it may be anyone's.
"""

from __future__ import annotations

import collections
import json
import os
import time

import attrs

from cpl.errors import CplError
from cpl.trace import (LOCK, RUN_IDENTITY, Holder, TooManyLifelines, encode_json, hold, holder,
                       lifelines_within_cap)

IDENTITY = RUN_IDENTITY
END = "end.json"  # the run's meta, when its trace could not be written
PARTS_FORMAT = "cpl-parts/1"
MAX_IDENTITY = 64 * 2**20  # bytes: the header's init holds the inputs, never more
_HEADER_KEYS = frozenset(("lifelines", "init", "vars", "symbols", "predicates"))


def log_of(folder: str, index: int) -> str:
    """The log of the lifeline at ``index``: by its place, so any name makes a plain file."""
    return os.path.join(folder, f"{index}.jsonl")


class Logs:
    """The lifelines' logs while a run goes: each in ``folder`` by its place; those of the
    lifelines that ``ship`` their lines (Ray's actors: their disk is not ours) appended
    here as the lines come.  Once a write fails (a full disk) a shipped log ends there for
    the merge: later lines are only counted (``unlogged``, kept in the trace's meta)."""

    def __init__(self, folder: str, lifelines):
        self.folder, self.lifelines = folder, tuple(lifelines)
        self.shipping: set[str] = set()  # lifelines that send their log lines to us
        self.shipped = 0  # shipped lines heard
        self.unlogged: collections.Counter = collections.Counter()  # lost shipped lines

    def of(self, name: str) -> str:
        return log_of(self.folder, self.lifelines.index(name))

    def append(self, name: str, lines) -> None:
        self.shipped += len(lines)
        if not self.unlogged[name]:
            try:
                with open(self.of(name), "a", encoding="utf-8") as log:
                    log.writelines(f"{line}\n" for line in lines)
                return
            except OSError:
                pass
        self.unlogged[name] += len(lines)


class PartsError(CplError, ValueError):
    """A folder that is not a run's parts, or not readable; the message says which."""


@attrs.frozen
class Parts:
    """One run's parts folder: ``header`` (the trace's fields before its events, ``format``
    aside) and ``meta`` (what the trace's ``meta`` says of this run whatever its end)."""

    folder: str
    header: dict
    meta: dict
    end: dict | None = None  # how the run ended, if its supervisor could say so here
    reported: dict | None = None  # lifeline -> the variables it reports (.results)

    @property
    def lifelines(self) -> tuple[str, ...]:
        return tuple(self.header["lifelines"])

    def logs(self) -> dict[str, str]:
        """Each lifeline's log, by name."""
        return {name: log_of(self.folder, index) for index, name in enumerate(self.lifelines)}

    def keep(self) -> None:
        """Write ``run.json`` whole or not at all (an ``OSError`` says why)."""
        _write(os.path.join(self.folder, IDENTITY),
               {"format": PARTS_FORMAT, "header": self.header, "meta": self.meta,
                "reported": self.reported or {}})

    @classmethod
    def of_run(cls, folder: str, plan, inputs: dict, seed, run_id: str) -> Parts:
        """The parts of a run of ``plan`` over processes, as its supervisor keeps them."""
        header = {key: list(value) if isinstance(value, tuple) else value
                  for key, value in plan.header(inputs).items()}
        return cls(folder, header, {
            "choreography": plan.name, "seed": seed, "inputs": dict(inputs), "run": run_id,
            "processes": True}, reported={
                name: list(names) for name, names in plan.choreography.results.items()})

    @classmethod
    def read(cls, folder: str) -> Parts:
        """The parts in ``folder``; ``PartsError`` naming what is wrong."""
        path = os.path.join(folder, IDENTITY)
        try:
            is_folder = os.path.isdir(folder)
        except ValueError:  # a path the file system cannot hold
            is_folder = False
        if not is_folder:
            raise PartsError(f"{folder}: no such folder (a run's parts are a folder T.parts "
                             f"beside its trace T)")
        try:
            with open(path, "rb") as handle:
                raw = handle.read(MAX_IDENTITY + 1)
        except OSError as error:
            raise PartsError(f"{path}: cannot read it: {error.strerror or error} (a run's "
                             f"parts hold its {IDENTITY}, written when the run starts)") from None
        if len(raw) > MAX_IDENTITY:
            raise PartsError(f"{path}: larger than {MAX_IDENTITY >> 20} MiB: not a run's parts")
        try:
            data = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError):
            raise PartsError(f"{path}: not JSON: the file is damaged (or not a run's)") from None
        return cls(folder, *_checked(data, path), _end(folder), _reported(data))


class Taken(Exception):
    """The parts folder is there already: a live run's (``holder`` says whose), or one
    left by a run that never ended (``holder`` is ``None``)."""

    def __init__(self, folder: str, by: Holder | None):
        super().__init__(folder)
        self.folder, self.holder = folder, by


class Claim:
    """A run's hold on its parts folder, made and locked here before its trace is opened
    (so a second ``cpl run`` never truncates a live run's trace), released when the parts
    are done; and what the folder, its lock and the trace were, so the run can tell at its
    end whether they still are (someone deleted or replaced them: its record is lost)."""

    def __init__(self, folder: str):
        """``Taken`` if ``folder`` exists; ``OSError`` if it cannot be made and locked."""
        try:
            os.mkdir(folder)
        except FileExistsError:
            raise Taken(folder, _holder(folder)) from None
        self.folder, self.trace, self.lock = folder, None, None
        try:
            self.lock = hold(folder)
        except OSError:
            self.abandon()
            raise
        lock = os.path.join(folder, LOCK)
        self.was = {folder: _identity(folder), lock: _identity(lock)}

    def watch(self, trace: str) -> None:
        """The run's trace, now open: it too must be the same file at the end."""
        self.trace = trace
        self.was[trace] = _identity(trace)

    def vanished(self) -> list[str]:
        """What is no longer what it was: deleted, moved away, or another file in its place."""
        return [path for path, was in self.was.items() if was is None or _identity(path) != was]

    def checked(self, meta: dict) -> dict:
        """``meta`` as the run ended, or ``lost`` naming what vanished (``.verdicts``)."""
        vanished = self.vanished()
        if not vanished:
            return meta
        from .verdicts import lost
        verdict = lost(vanished, self.folder, self.trace, meta)
        kept = {key: value for key, value in meta.items() if key not in ("error", "traceback")}
        return {**kept, "status": verdict.status, "error": verdict.error, **verdict.facts}

    def release(self) -> None:
        """The parts are done (removed, or kept for ``cpl merge``): let them go."""
        if self.lock is not None:
            os.close(self.lock)
            self.lock = None

    def abandon(self) -> None:
        """No run after all (its trace could not be opened): the folder goes as it came."""
        self.release()
        for remove, path in ((os.unlink, os.path.join(self.folder, LOCK)),
                             (os.rmdir, self.folder)):
            try:
                remove(path)
            except OSError:
                pass


def _holder(folder: str) -> Holder | None:
    """Who holds ``folder``; a folder with no lock file yet may be a run's that made it an
    instant ago and is about to lock it (``Claim``): it is looked at once more."""
    found = holder(folder)
    if found is None and not os.path.lexists(os.path.join(folder, LOCK)):
        time.sleep(0.1)
        found = holder(folder)
    return found


def _identity(path: str) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None
    return found.st_dev, found.st_ino


def keep_end(folder: str, meta: dict) -> bool:
    """Leave how the run ended beside its logs, for a trace that could not be written;
    whether that worked (it needs a little room too)."""
    try:
        _write(os.path.join(folder, END), meta)
    except (OSError, ValueError, TypeError):
        return False
    return True


def _end(folder: str) -> dict | None:
    """``end.json``'s meta, or ``None`` if there is none whole (the run never ended)."""
    try:
        with open(os.path.join(folder, END), "rb") as handle:
            end = json.loads(handle.read(MAX_IDENTITY + 1).decode("utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return end if isinstance(end, dict) and isinstance(end.get("status"), str) else None


def _reported(data: dict) -> dict | None:
    """``run.json``'s ``reported`` (lifeline -> the variables it reports), if it has a
    well-formed one (parts written before it was kept have none)."""
    reported = data.get("reported")
    if isinstance(reported, dict) and all(
            isinstance(names, list) and all(isinstance(name, str) for name in names)
            for names in reported.values()):
        return reported
    return None


def _write(path: str, data: dict) -> None:
    """``data`` as JSON at ``path``, whole or not at all."""
    with open(f"{path}.new", "w", encoding="utf-8") as handle:  # no fsync: it costs the
        handle.write(encode_json(data) + "\n")  # run's start seconds on a busy disk, and a
    os.replace(f"{path}.new", path)  # killed process loses nothing the kernel has


def _checked(data, path: str) -> tuple[dict, dict]:
    """``run.json``'s header and meta, or ``PartsError``; the trace reader checks the rest."""
    if not (isinstance(data, dict) and data.get("format") == PARTS_FORMAT):
        raise PartsError(f'{path}: not a run\'s parts: expected {{"format": "{PARTS_FORMAT}", '
                         f'"header": ..., "meta": ...}}')
    header, meta = data.get("header"), data.get("meta")
    if not isinstance(header, dict) or not isinstance(meta, dict):
        raise PartsError(f'{path}: "header" and "meta" must be objects')
    unknown = sorted(set(header) - _HEADER_KEYS)
    if unknown:
        raise PartsError(f"{path}: the header has {unknown[0]!r}, which no trace header has")
    names = header.get("lifelines")
    try:
        lifelines_within_cap(names)
    except TooManyLifelines as error:
        raise PartsError(f"{path}: {error}") from None
    if not (isinstance(names, list) and 0 < len(names)
            and all(isinstance(name, str) and name for name in names)
            and len(set(names)) == len(names)):
        raise PartsError(f'{path}: "lifelines" must list distinct names')
    init = header.get("init")
    if not (init is None or isinstance(init, dict) and all(isinstance(store, dict)
                                                           for store in init.values())):
        raise PartsError(f'{path}: "init" must be an object of objects')
    listed = [key for key in ("vars", "symbols", "predicates")
              if header.get(key) is not None and not isinstance(header[key], list)]
    if listed:
        raise PartsError(f'{path}: "{listed[0]}" must be a list')
    return header, meta
