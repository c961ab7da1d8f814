"""Reading the streaming ``.jsonl`` form line by line (written by ``cpl.trace.writer``).

``JsonLines`` reads a stream one line at a time through ``cpl.trace.checker.Checker``
(batches of lines through ``cpl.trace.typed`` first), so its memory is the checker's
state (ids, messages) and one batch of lines, not the events.
"""

from __future__ import annotations

import io
import json
import warnings
from itertools import chain
from pathlib import Path
from typing import Callable, Iterator

from ..errors import TraceError
from .msc import Event
from .checker import Checker
from .codec import FORMAT, LIMIT_VARIABLE, decode_json, json_error, read_limit, size_text
from .typed import Declined, typed_stream
from .recovery import unfinished

__all__ = ["JsonLines", "TraceWarning"]


class TraceWarning(UserWarning):
    """A trace was read but is not whole: the run was cut off, or its last line was."""


class JsonLines:
    """A ``.jsonl`` trace read line by line and checked as it goes.

    ``header()`` checks the first line; ``events()`` then yields each checked ``Event``;
    afterwards ``meta`` is the end line's object, or ``{"cut_off": True}`` (and a
    warning through ``warn``) when the stream has none.  A last line cut mid-way
    (no newline, not JSON) is dropped with a warning; any other bad line is an error
    naming its line number.
    """

    def __init__(self, source, origin: str | None = None,
                 warn: Callable[[str], None] | None = None):
        """``source``: a path, or the bytes of a whole stream."""
        self.source = source if isinstance(source, (bytes, bytearray)) else Path(source)
        self.origin = origin or str(source)
        self.warn = warn or _warn
        self.checker = Checker(self.origin, scan=self._raw_events, owned=True)
        self.meta: dict | None = None
        self.cut_off = False
        self._lines: Iterator | None = None
        self._raw: Iterator | None = None  # the numbered lines ``_lines`` decodes
        self._fast = True  # events through ``cpl.trace.typed`` until it declines

    # The header's fields, once ``header()`` has checked them.
    lifelines = property(lambda self: self.checker.lifelines)
    init = property(lambda self: self.checker.init)
    vars = property(lambda self: self.checker.vars)
    symbols = property(lambda self: self.checker.symbols)
    predicates = property(lambda self: self.checker.predicates)

    def schema(self, predicates=None):
        """What a guard on this trace may name.  Without declared ``vars`` the variables are
        whatever the events assign: a first pass over the stream, unless this one is read."""
        from ..lang import Schema
        names = self.vars
        if names is None:
            first = self if self.meta is not None else self.again()
            for _ in () if first is self else first.events():
                pass
            names = first.checker.variables()
        extra = {} if predicates is None else {"predicates": predicates}
        return Schema(lifelines=self.lifelines, variables=frozenset(names),
                      symbols=None if self.symbols is None else frozenset(self.symbols), **extra)

    def again(self, quiet: bool = True) -> "JsonLines":
        """A fresh reader of the same stream (a reader's ``events()`` runs once), quiet
        unless told (this one says what is wrong with the stream)."""
        return JsonLines(self.source, self.origin, warn=(lambda _: None) if quiet else self.warn)

    def trace(self):
        """Read every event into a whole ``Trace`` (for evaluators that need them all)."""
        from ..collector import collector_paused
        from .msc import Trace
        if self._lines is None:
            self.header()
        with collector_paused():
            return Trace(self.lifelines, self.init, list(self.events()), self.vars,
                         self.symbols, self.meta, predicates=self.predicates)

    def header(self) -> Checker:
        self._raw = self._numbered()
        lines = self._records(self.warn, self._raw)
        for number, value in lines:
            try:
                self.checker.header(value, stream=True)
            except TraceError as error:
                raise _at(error, number) from None
            self._lines = lines
            return self.checker
        raise TraceError("empty: a .jsonl trace starts with a header line "
                         f'{{"format": "{FORMAT}", "lifelines": [...]}}', self.origin)

    def events(self) -> Iterator[Event]:
        """The checked events.  Batches of lines go through ``cpl.trace.typed`` first; if it
        declines one, the checker reads the stream again from its start (yielding only the
        events not yielded yet), so every problem is worded by the checker."""
        if self._lines is None:
            self.header()
        skip = 0
        if self._fast:
            outcome = yield from typed_stream(self._raw, self.checker)
            if type(outcome) is int:  # declined after ``outcome`` events
                skip, self._fast = outcome, False
                self.checker = Checker(self.origin, scan=self._raw_events, owned=True)
                self.header()
            else:  # the end line (if any) onward, as below
                self._lines = self._records(self.warn, chain([outcome] if outcome else (),
                                                             self._raw))
        yield from self._rest(skip)

    def stepped(self, step) -> Iterator[int]:
        """``events()`` handed to ``step(id, lifeline, kind, msg, set)`` one at a time
        (``set`` a plain dict or the empty read-only map), yielding after each batch (the
        caller drains what ``step`` kept); ``Declined`` if the fast path declines, maybe
        after some steps: then read the stream again (``again``) through ``events()``."""
        if self._lines is None:
            self.header()
        outcome = yield from typed_stream(self._raw, self.checker, step)
        if type(outcome) is int:
            raise Declined
        self._lines = self._records(self.warn, chain([outcome] if outcome else (), self._raw))
        for event in self._rest(0):  # only the end line is left: no event comes here
            step(event.id, event.lifeline, event.kind, event.msg, event.set)

    def _rest(self, skip: int) -> Iterator[Event]:
        """The events of the lines left after the fast path, the first ``skip`` unyielded;
        then the end line, or the warning that there is none."""
        check = self.checker.event
        for number, value in self._lines:
            if type(value) is dict and "end" in value:
                self._end(number, value)
                return
            try:
                event = check(value)
            except TraceError as error:
                raise _at(error, number) from None
            if skip:
                skip -= 1
            else:
                yield event
        self.cut_off = True
        self.meta = {"cut_off": True}
        self.warn(f"{self.origin}: the run was cut off: the stream has no end line "
                  f"({self.checker.count} event{'' if self.checker.count == 1 else 's'} read)"
                  + unfinished(self.source, self.checker.parts, "; "))

    def _end(self, number: int, value: dict) -> None:
        if len(value) != 1:
            extra = next(key for key in value if key != "end")
            raise TraceError(f"line {number}: the end line has only \"end\", not {extra!r}",
                             self.origin)
        try:
            self.meta = self.checker.meta(value["end"])
        except TraceError as error:
            raise _at(error, number) from None
        for later, _ in self._lines:
            raise TraceError(f"line {later}: a line after the end line", self.origin)

    def _numbered(self) -> Iterator[tuple[int, bytes]]:
        """(line number, bytes) for every line, none longer than ``read_limit()``."""
        try:
            handle = (io.BytesIO(self.source) if isinstance(self.source, (bytes, bytearray))
                      else open(self.source, "rb"))
        except OSError as error:
            raise TraceError(f"cannot read the trace: {error.strerror}", self.origin) from None
        with handle:  # a block at a time: a readline call per line cost more than the split
            limit, number, carry = read_limit(), 0, b""
            while block := handle.read(1 << 20):
                lines = (carry + block).split(b"\n")
                carry = lines.pop()  # the start of a line whose newline is still to come
                for line in lines:
                    number += 1
                    if len(line) >= limit:  # with its newline, longer than the limit
                        raise self._too_long(number, limit)
                    yield number, line + b"\n"
                if len(carry) > limit:
                    raise self._too_long(number + 1, limit)
            if carry:
                yield number + 1, carry

    def _too_long(self, number: int, limit: int) -> TraceError:
        return TraceError(f"line {number} is longer than {size_text(limit)} (raise the limit "
                          f"with {LIMIT_VARIABLE})", self.origin)

    def _records(self, warn, lines=None) -> Iterator[tuple[int, object]]:
        """(line number, decoded value) for every non-blank line of ``lines`` (numbered
        lines; else the stream's)."""
        for number, line in self._numbered() if lines is None else lines:
            try:
                text = line.decode("utf-8-sig" if number == 1 else "utf-8")
                if text.isspace():
                    continue
                value = decode_json(text)
            except (ValueError, RecursionError, MemoryError) as error:
                # Cut: the file's last line (only the last can lack its newline), its JSON
                # unfinished (a duplicate key or NaN means it was finished, and is wrong).
                if not line.endswith(b"\n") and isinstance(
                        error, (json.JSONDecodeError, UnicodeDecodeError)):
                    if warn is not None:
                        warn(f"{self.origin}: line {number} was cut off mid-way; "
                             f"dropped it")
                    return
                raise json_error(error, self.origin, f"line {number}: ") from None
            yield number, value

    def _raw_events(self) -> Iterator[object]:
        """The raw event objects again, from the start: only to word an error."""
        first = True
        for _, value in self._records(None):
            if first:
                first = False
            elif not (type(value) is dict and "end" in value):
                yield value


def _at(error: TraceError, number: int) -> TraceError:
    return TraceError(f"line {number}: {error.message}", error.origin, error.index,
                      error.event_id)


def _warn(message: str) -> None:
    warnings.warn(message, TraceWarning, stacklevel=3)
