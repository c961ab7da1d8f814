"""Detectors of your own: ``--detect MODULE:FUNCTION``, a function of a trace.

The catalog's detectors (``cpl.anomalies``) know one variable convention; a
workflow's own bad outcome (publishing on a stale fact) is known only to its
author, who writes it as a function::

    def published_stale(trace):      # trace: a cpl.trace.Trace
        return [events where it happened]   # events or event ids; empty: it did not

``MODULE`` is a file (``path/to/file.py``, imported by path as ``cpl run``
imports a choreography) or a dotted module importable from the current
directory.  A :class:`UserDetector` holds the spec text, not the function, so
a spawned worker of ``cpl explore`` imports it again; each process imports a
spec once.  A spec that does not load is a :class:`DetectorError` (a usage
error); a detector that raises or returns something else is a ``DetectorFailed``
naming it, which ``cpl explore`` counts as that run's error.  The commands run
them as :class:`UserDetectors`: in a child process per trace, under a deadline
(``choreo.exploration.detector_process``), so that a detector that hangs, forks or ends its
process is a ``DetectorFailed`` too.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Mapping
from typing import Iterable

import attrs

from cpl.errors import EXIT_USAGE, CplError

from .detector_process import DEFAULT_TIMEOUT, Failure, run
from choreo.authoring import DetectorFailed, LocatedError

MAX_SPEC = 1000  # characters of a spec: a path and a name
_LOADED: dict[tuple[str, str], object] = {}  # (cwd, spec) -> function, once per process


class DetectorError(CplError, ValueError):
    """A ``--detect`` spec that names no function (exit 2)."""

    exit_code = EXIT_USAGE


def split_spec(spec: str) -> tuple[str, str]:
    """``"a/b.py:f"`` → ``("a/b.py", "f")``; the last ``:`` separates (a path may hold one)."""
    if len(spec) > MAX_SPEC:
        raise DetectorError(f"--detect {spec[:60]!r}...: longer than {MAX_SPEC} characters")
    module, sep, function = spec.rpartition(":")
    if not sep or not module or not function:
        raise DetectorError(f"--detect {spec!r}: give MODULE:FUNCTION (a file.py or a dotted "
                            f"module, then the function's name)")
    if not function.isidentifier():
        raise DetectorError(f"--detect {spec!r}: {function!r} is not a Python function name")
    return module, function


def load_detector(spec: str):
    """The function ``spec`` names, imported once per process; ``DetectorError`` if none."""
    key = (os.getcwd(), spec)
    if key in _LOADED:
        return _LOADED[key]
    module_name, name = split_spec(spec)
    with contextlib.redirect_stdout(sys.stderr):  # what its import prints is no output of ours
        module = _module(spec, module_name)
    if not hasattr(module, name):
        from cpl.lang import did_you_mean
        functions = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise DetectorError(f"--detect {spec!r}: {module_name} has no function {name!r}"
                            f"{did_you_mean(name, functions)}")
    function = getattr(module, name)
    if not callable(function):
        raise DetectorError(f"--detect {spec!r}: {name!r} is a {type(function).__name__}, "
                            f"not a function")
    _LOADED[key] = function
    return function


def _module(spec: str, module_name: str):
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        from choreo.authoring import import_file
        try:
            return import_file(module_name, "detector file",
                               "give a Python file that defines the detector function")
        except LocatedError as error:  # what import_file raises, or lets through
            raise DetectorError(f"--detect {spec!r}: {error.render()}") from None
    if not all(part.isidentifier() for part in module_name.split(".")):
        raise DetectorError(f"--detect {spec!r}: {module_name!r} is neither a file.py nor a "
                            f"dotted module name")
    cwd = os.getcwd()
    added = cwd not in sys.path
    if added:  # as `python -m` would: modules of the current directory import
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - the user's module: its failure, one line
        reason = "not found" if isinstance(error, ModuleNotFoundError) and \
            error.name == module_name.split(".")[0] else f"{type(error).__name__}: {error}"
        raise DetectorError(f"--detect {spec!r}: cannot import {module_name}: "
                            f"{reason}"[:500]) from None
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)


@attrs.frozen
class UserDetector:
    """One ``--detect`` spec, called as a detector: the events it found (a list, empty if
    it did not fire).  Picklable: it carries the text, and loads the function where called."""

    spec: str
    name: str

    def __call__(self, trace) -> list:
        function = load_detector(self.spec)
        try:
            with contextlib.redirect_stdout(sys.stderr):  # a print must not break --format json
                found = function(trace)
                return found_events(trace, found)
        except KeyboardInterrupt:
            raise
        except _Returned as error:
            raise DetectorFailed(f"detector {self.name!r} ({self.spec}) returned {error}") \
                from None
        except BaseException as error:  # noqa: BLE001 - the user's code: named, counted
            raise DetectorFailed(f"detector {self.name!r} ({self.spec}) raised "
                               f"{type(error).__name__}: {error}"[:500]) from None


class _Returned(Exception):
    """What a detector returned is not events (its message says what it was)."""


def found_events(trace, found) -> list:
    """The trace's events that ``found`` names (events or event ids), in trace order, each
    once; ``_Returned`` if it is not an iterable of them."""
    if found is None or isinstance(found, (str, bytes, bool, int, float, dict)):
        raise _Returned(f"{type(found).__name__} {_short(found)}; return an iterable of "
                        f"events or event ids (empty: it did not happen)")
    try:
        items = iter(found)
    except TypeError:
        raise _Returned(f"a {type(found).__name__}, not an iterable of events or event "
                        f"ids") from None
    indices: set[int] = set()
    limit = len(trace.events)
    for count, item in enumerate(items):
        ident = item if isinstance(item, str) else getattr(item, "id", None)
        if not isinstance(ident, str):
            raise _Returned(f"{type(item).__name__} {_short(item)} among its events; give "
                            f"events (trace.events) or their ids")
        try:
            indices.add(trace.index_of(ident))
        except KeyError:
            raise _Returned(f"{_short(ident)}, which is no event of the trace") from None
        if count > 4 * limit + 100:  # more than every event, again and again: a runaway
            raise _Returned(f"more than {4 * limit + 100} items for {limit} events")
    return [trace.events[index] for index in sorted(indices)]


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


@attrs.frozen
class UserDetectors(Mapping):
    """The ``--detect`` detectors of one command by name, run together on each trace in a
    child process under ``timeout`` seconds each (``choreo.exploration.detector_process``)."""

    detectors: tuple[UserDetector, ...]
    timeout: float = DEFAULT_TIMEOUT

    def __getitem__(self, name: str) -> UserDetector:
        for detector in self.detectors:
            if detector.name == name:
                return detector
        raise KeyError(name)

    def __iter__(self):
        return (detector.name for detector in self.detectors)

    def __len__(self) -> int:
        return len(self.detectors)

    def run(self, trace, where: str) -> tuple[dict, float]:
        """``({name: [events] or DetectorFailed}, the CPU seconds they took)`` on ``trace``
        (``where`` names it in a failure)."""
        found, cpu = run(self.detectors, trace, where, self.timeout)
        return {name: DetectorFailed(result) if isinstance(result, Failure) else result
                for name, result in found.items()}, cpu


def user_detectors(specs: Iterable[str], taken: Iterable[str] = (),
                   timeout: float = DEFAULT_TIMEOUT) -> UserDetectors:
    """The detectors of the specs by name, each loaded now (``DetectorError`` for the first
    that does not): named by its function, or by its whole spec where that name is
    ``taken`` (a catalog detector's) or used twice; each gets ``timeout`` s a trace."""
    specs = list(dict.fromkeys(specs))
    for spec in specs:
        load_detector(spec)
    names = [split_spec(spec)[1] for spec in specs]
    taken = set(taken)
    found: dict[str, UserDetector] = {}
    for spec, name in zip(specs, names):
        if name in taken or names.count(name) > 1:
            name = spec
        found[name] = UserDetector(spec, name)
    return UserDetectors(tuple(found.values()), timeout)
