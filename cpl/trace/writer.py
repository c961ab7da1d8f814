"""Writing traces as they happen: ``TraceWriter``, the one writer of every form.

``TraceWriter`` is the one writing path for all three forms (docs/traces.md):
``.jsonl`` streams (header line, one event per line, ``{"end": META}``); the
JSON document is streamed too, in the layout ``dumps_trace`` always wrote (the
header keys, ``"events": [`` one per line, ``"meta"``, the closing brace);
``.msgpack``/``.mpk`` spools the events to a temporary file next to the
target, because the document's array header needs their count, and
assembles the document at close.  Memory stays one batch of lines whatever
the run's length.

Reading is elsewhere (``cpl.trace.files``; a stream line by line, ``cpl.trace.lines``):
a writer, ``cpl run``'s, imports none of the readers and checkers.
"""

from __future__ import annotations

import io
import shutil
import tempfile
import time
from pathlib import Path

import msgpack

from ..errors import TraceError
from .caps import lifelines_within_cap
from .msc import Event
from .codec import FORMAT, encode_json, value_problem
from .paths import unwritable
from .recovery import cut_short

JSONL_SUFFIXES = (".jsonl",)
MSGPACK_SUFFIXES = (".msgpack", ".mpk")
SUFFIXES = (".json", *JSONL_SUFFIXES, *MSGPACK_SUFFIXES)  # what a trace file may end in

__all__ = ["SUFFIXES", "TraceWriter", "form_of"]


def form_of(path) -> str | None:
    """``jsonl``, ``msgpack``, or ``None`` when the suffix says nothing (JSON or sniffed)."""
    suffix = Path(path).suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    return "msgpack" if suffix in MSGPACK_SUFFIXES else None


_SCALARS = (str, int, bool, type(None))


def _plain(value) -> bool:
    """A scalar, or an object of scalars (the usual ``set`` and ``vc``), or a finite float
    (the usual ``time``): nothing to walk."""
    kind = type(value)
    return kind in _SCALARS or (kind is dict and all(type(item) in _SCALARS
                                                     for item in value.values())) \
        or kind is float and value - value == 0.0


def _problem(value) -> str | None:
    """Why a value cannot be written, or ``None``.  Every form holds only what JSON can,
    so a msgpack trace stays loadable and convertible."""
    return None if _plain(value) else value_problem(value, (list, tuple), recorded=True)


class TraceWriter:
    """Writes one trace as its events happen; ``close(meta)`` finishes it.

    Lines are buffered and written every ``BATCH`` events or ``INTERVAL`` seconds,
    so a killed run loses at most that much.  Also a context manager: leaving the
    block closes the writer (with ``status`` ``failed``/``interrupted`` and the error
    when an exception left it and ``close`` was not called).
    """

    BATCH = 256
    INTERVAL = 0.25  # seconds

    def __init__(self, handle, form: str, origin: str, header: dict, spool=None):
        self._handle, self._form, self.origin, self._header = handle, form, origin, header
        self._spool = spool
        self._buffer: list = []
        self._count = self._flushed = 0  # events queued, events handed to the system
        self._closed = False
        self._last = time.monotonic()
        self._packer = msgpack.Packer(use_bin_type=True) if form == "msgpack" else None
        for name, value in header.items():
            if _problem(value):
                self._abort()
                raise ValueError(f'the trace header\'s "{name}" {_problem(value)}')
        if form == "jsonl":
            self._put(encode_json(header) + "\n")
        elif form == "json":
            self._put("{\n" + ",\n".join(f"  {encode_json(key)}: {encode_json(value)}"
                                          for key, value in header.items()))
        self.flush()

    @classmethod
    def open(cls, path, lifelines=(), init=None, vars=None, symbols=None,
             predicates=None, parts=None) -> TraceWriter:
        """Create ``path`` now (``TraceError`` if it cannot be written); the form from its
        suffix."""
        path = Path(path)
        form = form_of(path) or "json"
        header = _header(lifelines, init, vars, symbols, predicates, parts)
        handle = spool = None
        try:
            handle = open(path, "wb")
            if form == "msgpack":
                spool = tempfile.TemporaryFile(dir=path.parent, prefix=f".{path.name}.")
        except OSError as error:
            if handle is not None:
                handle.close()
            raise TraceError(f"cannot write the trace: {unwritable(path, error)}",
                             str(path)) from None
        return cls(handle, form, str(path), header, spool)

    @classmethod
    def to_stream(cls, handle, form: str, lifelines=(), init=None, vars=None,
                  symbols=None, predicates=None) -> TraceWriter:
        """Write into an open binary file (``dumps_trace``); msgpack spools in memory."""
        return cls(handle, form, "trace", _header(lifelines, init, vars, symbols, predicates),
                   io.BytesIO() if form == "msgpack" else None)

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, kind, error, traceback) -> None:
        if self._closed:
            return
        if error is None:
            self.close()
        else:
            status = "interrupted" if isinstance(error, KeyboardInterrupt) else "failed"
            self.close({"status": status, "error": f"{type(error).__name__}: {error}"})

    # ------------------------------------------------------------ writing

    def write(self, event: Event) -> None:
        """Queue one event; ``ValueError`` for a value JSON cannot hold (the caller's bug)."""
        if self._closed:
            raise ValueError(f"{self.origin}: the trace writer is closed")
        data = event.to_dict()
        for field in ("set", "payload", "time", "vc"):
            if field in data and not _plain(data[field]):
                problem = _problem(data[field])
                if problem:
                    raise ValueError(f"event {event.id!r}: {field!r} {problem}")
        if self._form == "msgpack":
            self._buffer.append(self._packer.pack(data))
        else:
            prefix = "" if self._form == "jsonl" else (
                ',\n    ' if self._count else ',\n  "events": [\n    ')
            self._buffer.append(prefix + encode_json(data) + ("\n" if self._form == "jsonl"
                                                              else ""))
        self._count += 1
        if len(self._buffer) >= self.BATCH or time.monotonic() - self._last >= self.INTERVAL:
            self.flush()

    def flush(self) -> None:
        """Hand the queued lines to the operating system."""
        if self._closed:
            return
        target = self._spool if self._form == "msgpack" else self._handle
        try:
            if self._buffer:
                joined = (b"".join(self._buffer) if self._form == "msgpack"
                          else "".join(self._buffer).encode("utf-8"))
                self._buffer.clear()
                target.write(joined)
            target.flush()
        except OSError as error:
            self._abort()
            raise cut_short(error, self.origin, self._flushed, self._count) from None
        self._last, self._flushed = time.monotonic(), self._count

    def close(self, meta: dict | None = None) -> None:
        """Write ``meta`` and finish the trace.  Once; a second call does nothing."""
        if self._closed:
            return
        if meta is not None and not isinstance(meta, dict):
            meta = {"error": f"meta was {type(meta).__name__}, not an object"}
        problem = _problem(meta)
        if problem:  # still finish the file: a readable trace is worth more than a lost one
            meta = {key: value for key, value in meta.items()
                    if isinstance(key, str) and not _problem(value)}
            meta["error"] = f"{meta.get('error', '')} (a meta value {problem})".strip()
        self.flush()
        try:
            if self._form == "jsonl":
                self._handle.write(("{\"end\": " + encode_json(meta or {}) + "}\n").encode())
            elif self._form == "json":
                tail = ',\n  "events": []' if not self._count else "\n  ]"
                if meta is not None:
                    tail += ',\n  "meta": ' + encode_json(meta)
                self._handle.write((tail + "\n}\n").encode("utf-8"))
            else:
                self._assemble(meta)
            self._handle.flush()
        except OSError as error:
            raise cut_short(error, self.origin, self._flushed, self._count) from None
        finally:
            self._abort()

    def _assemble(self, meta) -> None:
        pack, handle = self._packer.pack, self._handle
        handle.write(self._packer.pack_map_header(len(self._header) + 1 + (meta is not None)))
        for key, value in self._header.items():
            handle.write(pack(key) + pack(value))
        handle.write(pack("events") + self._packer.pack_array_header(self._count))
        self._spool.seek(0)
        shutil.copyfileobj(self._spool, handle, 1 << 20)
        if meta is not None:
            handle.write(pack("meta") + pack(meta))

    def _put(self, text: str) -> None:
        self._buffer.append(text.encode("utf-8") if self._form == "msgpack" else text)

    def _abort(self) -> None:
        """Release the files (the spool is deleted on close); later writes raise."""
        self._closed = True
        self._buffer.clear()
        for handle in (self._spool, self._handle):
            if handle is not None and not isinstance(handle, io.BytesIO):
                try:
                    handle.close()
                except OSError:
                    pass


class Recording:
    """A run's events on their way into its trace: the first write that fails ends the
    writing, not the run (its results still count), and is kept as ``failed``.  Without a
    writer (no trace asked for) it writes nothing."""

    def __init__(self, writer: TraceWriter | None):
        self.writer, self.failed = writer, None

    def __call__(self, event) -> None:
        if self.writer is not None and self.failed is None:
            try:
                self.writer.write(event)
            except TraceError as error:
                self.failed = error

    def close(self, meta: dict) -> None:
        if self.writer is not None and self.failed is None:
            try:
                self.writer.close(meta)
            except TraceError as error:
                self.failed = error


def _header(lifelines, init, vars, symbols, predicates=None, parts=None) -> dict:
    """The document without events, keys in the order ``Trace.to_dict`` writes them."""
    header: dict = {"format": FORMAT, "lifelines": lifelines_within_cap(list(lifelines))}
    for key, names in (("vars", vars), ("symbols", symbols), ("predicates", predicates)):
        if names is not None:
            header[key] = list(names)
    if init:
        header["init"] = {name: dict(store) for name, store in init.items()}
    return header | ({"parts": parts} if parts else {})  # the run's logs, until it ends
