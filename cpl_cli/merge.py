"""``cpl merge``: a run's trace rebuilt from its parts, when its supervisor vanished.

``cpl run --trace T`` keeps its lifelines' logs in ``T.parts`` until the
trace is whole (``runtime.supervisor.parts``).  If the supervisor is killed first, T
stops at whatever it had; this command merges the logs as the supervisor
would have (``cpl.trace.merge``) into a trace whose ``meta.status`` is
``vanished`` (``incomplete``, exit 1, when it cannot place every event the logs hold:
the lines not placed are kept beside it, ``cpl.trace.unplaced``).  The new trace is
written beside TRACE and checked by the trace reader before it replaces TRACE, so a
full disk or damaged logs leave TRACE and the parts as they were.
"""

from __future__ import annotations

import json
import os
import re
import sys

import attrs

from cpl.errors import TraceError

from .arguments import TRACE_FILES, add_command
from .outputs import Output, trace_suffix
from .usage import EXIT_FAILED, EXIT_OK, UsageError

TAIL = 1 << 20  # bytes read from a stream's end to find its end line
_END_LINE = re.compile(rb'\s*\{\s*"end"\s*:')


def cmd_merge(args) -> int:
    from cpl.trace import (Trace, TraceWriter, as_ended, incomplete, merge_logs, open_trace,
                           unplaced_of)

    _not_live(args.parts, args.output)
    trace_suffix(args.output, "-o")
    output = Output.of(args.output, "-o")  # a device or FIFO is written into, never replaced
    source = _source(args.parts)
    if source is None:
        return EXIT_FAILED
    header, what = source.header, source.what
    lifelines = tuple(header["lifelines"])
    _may_replace(output, what if source.is_parts else None, args.force,
                 source.meta.get("run") if source.is_parts else None)
    # the lines it cannot place go beside the trace, or beside the logs for a stream
    side = Output.of(unplaced_of(args.parts[0].rstrip(os.sep) if output.stream
                                 else args.output), "-o")
    kept = _Kept(side, args.output)
    temporary = output.temporary()
    try:
        try:
            writer = TraceWriter.open(temporary, header["lifelines"], header.get("init"),
                                      header.get("vars"), header.get("symbols"),
                                      header.get("predicates"))
        except ValueError as error:
            raise TraceError(f"{what}: its header cannot be written: {error}") from None
        with writer:
            last = None
            # results as the trace has them (runtime.supervisor.results)
            if source.reported is not None:
                from runtime.supervisor import LastValues
                last = LastValues(lifelines, header.get("init"), source.reported)
            placed = merge_logs(source.logs, lifelines,
                                writer.write if last is None else last.seeing(writer.write),
                                kept.add)
            kept.close()
            if last is not None:
                placed["results"] = last.results()
            meta = {key: value for key, value in as_ended(source.meta).items()
                    if key != "unmerged"}
            found = placed.pop("incomplete", None)
            meta = {**meta, **placed}
            if found is not None:
                meta = incomplete(meta, found, side.given if kept.count else None)
            writer.close(meta)  # whole now
        try:
            trace = open_trace(temporary, lambda _: None)
            count = len(trace.events) if isinstance(trace, Trace) \
                else sum(1 for _ in trace.events())
        except TraceError as error:
            raise TraceError(f"the logs in {what} do not make a valid trace: "
                             f"{error.message}", args.output) from None
        kept.keep()
        output.commit(temporary)
        if found is None:
            kept.forget()
    except TraceError as error:
        print(f"cpl merge: {_renamed(error, temporary, args.output)}\n  {args.output} and "
              f"{what} are as they were", file=sys.stderr)
        return EXIT_FAILED
    finally:
        kept.discard()
        if os.path.lexists(temporary):
            os.unlink(temporary)
    transit = len(placed["in_transit"])
    print(f"{args.output}: {_counted(count, 'event')} of {_counted(len(lifelines), 'lifeline')}"
          f", {_counted(transit, 'message')} in transit, {placed['unplaced']:,} unplaced"
          + (f"; {what} may be deleted" if source.is_parts and found is None else ""),
          file=sys.stderr if output.to_stdout else sys.stdout)
    if found is not None:
        print(f"cpl merge: {args.output} is incomplete: {meta['error']}", file=sys.stderr)
    cut = _cut_off(source)
    if cut:
        one = len(cut) == 1
        print(f"cpl merge: warning: {_counted(len(cut), 'agent')} never closed "
              f"{'its log' if one else 'their logs'} (killed, or still running): {_listed(cut)}"
              f"\n  {args.output} holds every event logged so far and says 'vanished'; if "
              f"{'it is' if one else 'they are'} still running, merge again after "
              f"{'it closes' if one else 'they close'}", file=sys.stderr)
    return EXIT_OK if found is None else EXIT_FAILED


class _Kept:
    """The lines a merge could not place, kept a line at a time in a file beside the trace
    being built, which ``keep()`` names ``side`` (``cpl.trace.unplaced_of``) with the trace;
    none, none made."""

    def __init__(self, side: Output, trace: str):
        self.side, self.trace, self.count = side, trace, 0
        self._path = self._handle = None

    def add(self, kept: dict) -> None:
        from cpl.trace import UNPLACED_FORMAT, line_of
        if self._handle is None:
            self._path = self.side.temporary()
            self._handle = open(self._path, "w", encoding="utf-8")
            self._write(line_of({"format": UNPLACED_FORMAT, "trace": self.trace}))
        self._write(line_of(kept))
        self.count += 1

    def close(self) -> None:
        if self._handle is not None:
            try:
                self._handle.close()
            except OSError as error:
                raise self._failed(error) from None

    def keep(self) -> None:
        if self._path is not None:
            path, self._path = self._path, None
            self.side.commit(path)

    def forget(self) -> None:
        """Remove what an earlier merge into the same trace kept, now that it is whole: a
        regular file whose first line says it is that trace's lines not placed."""
        from cpl.trace import UNPLACED_FORMAT
        try:
            if self.side.stream or not os.path.isfile(self.side.path):
                return
            with open(self.side.path, "rb") as handle:
                first = json.loads(handle.readline(4096) or b"null")
            if first == {"format": UNPLACED_FORMAT, "trace": self.trace}:
                os.unlink(self.side.path)
        except (OSError, ValueError):
            return

    def discard(self) -> None:
        if self._handle is not None and not self._handle.closed:
            self._handle.close()
        if self._path is not None and os.path.lexists(self._path):
            os.unlink(self._path)

    def _write(self, line: str) -> None:
        try:
            self._handle.write(line)
        except OSError as error:
            raise self._failed(error) from None

    def _failed(self, error: OSError) -> TraceError:
        return TraceError(f"cannot keep the lines not placed: {error.strerror or error}",
                          self.side.given)


def _not_live(paths: list[str], output: str) -> None:
    """A live run's parts (or its trace as ``-o``) are its own: it merges them into its
    trace as it goes, and writes that whole at its end (cpl.trace.holder); touch nothing."""
    from cpl.trace import holder, parts_of
    for path, what in [*((path, path) for path in paths), (parts_of(output), f"-o {output}")]:
        live = holder(path)
        if live is not None:
            told = f"{path} is {live}" if path == what else \
                f"{what}: the trace of a live run ({path} is {live})"
            raise UsageError(f"{told}: that run is still going, and writes its whole trace "
                             f"when it ends; nothing was touched")


def _cut_off(source: "_Source") -> list[str]:
    """The agents whose logs end without their end line (none for a run's parts: there the
    supervisor vanished, which the trace's status says)."""
    if source.is_parts:
        return []
    return [name for name, how in source.meta.get("agents", {}).items() if how == "cut"]


def _listed(names: list[str], most: int = 8) -> str:
    """``A``, ``A and B``, ``A, B and C``, ``A, B, … and 3 more``."""
    if len(names) > most:
        return f"{', '.join(names[:most])} and {len(names) - most} more"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


@attrs.frozen
class _Source:
    """What one merge reads: the trace's ``header`` fields, each lifeline's events (lazy
    iterators: a log is opened when the merge first reads it), the ``meta`` saying how the
    logs ended, and ``what`` they are, as messages name them."""

    header: dict
    logs: dict
    meta: dict
    what: str
    is_parts: bool  # a run's parts folder (else agents' logs)
    reported: dict | None = None  # a run's: lifeline -> the variables it reports


def _source(paths: list[str]) -> _Source | None:
    """What to merge: a run's parts folder (alone), or agents' logs (``cpl.live``); or
    ``None`` once the error is said."""
    from choreo.execution import VANISHED
    from cpl.live import AgentLogs
    from cpl.trace import LogTail
    from runtime.supervisor import IDENTITY, Parts, PartsError

    runs = [path for path in paths if os.path.isfile(os.path.join(path, IDENTITY))]
    if runs and len(paths) > 1:
        raise UsageError(f"{runs[0]} is a run's parts folder: merge it alone (its logs are "
                         f"one run's, not agents' to merge with others)")
    if runs or len(paths) == 1 and os.path.isdir(paths[0]) and not AgentLogs.among(paths[0]):
        try:
            parts = Parts.read(paths[0])
        except PartsError as error:
            print(f"cpl merge: {error}", file=sys.stderr)
            return None
        ended = parts.end or {**parts.meta, "status": VANISHED, "error": (
            "the supervisor vanished before the run ended: cpl merge rebuilt the trace "
            "from the lifelines' logs")}
        return _Source(parts.header, {name: LogTail(log, name)
                                      for name, log in parts.logs().items()},
                       ended, parts.folder, True, parts.reported)
    try:
        agents = AgentLogs.collect(paths)
    except TraceError as error:
        print(f"cpl merge: {error}", file=sys.stderr)
        return None
    what = paths[0] if len(paths) == 1 else f"the {len(agents.headers)} logs"
    return _Source(agents.trace_header, agents.events(), agents.meta(), what, False)


def _may_replace(output: Output, folder: str | None, force: bool, run=None) -> None:
    """TRACE may be replaced if it is new, empty, a stream (written into: nothing of it is
    lost), or the trace of the parts in ``folder`` (``None``: agents' logs, which have no
    trace of their own yet) that is unfinished or whose merge was cut short
    (``meta.unmerged``) in the same ``run``: the parts hold more."""
    from cpl.trace import parts_of
    try:
        if not output.holds_data() or force:
            return
        ours = folder is not None and \
            os.path.realpath(parts_of(output.given)) == os.path.realpath(folder)
        if ours and (not _finished(output.path) or run is not None
                     and _cut_short(output.path, run)):
            return
    except (OSError, ValueError) as error:
        raise UsageError(f"-o {output.given}: cannot look at it: "
                         f"{getattr(error, 'strerror', None) or error}") from None
    why = ("a whole trace (it has its end): its run finished" if ours
           else "a file already" if folder is None
           else "not the unfinished trace of these parts")
    raise UsageError(f"-o {output.given}: it is {why}; give --force to replace it")


def _cut_short(path: str, run) -> bool:
    """Whether a finished trace says its merge was cut short (``meta.unmerged``) or could not
    place every event (``incomplete``: its parts are kept), in ``run``."""
    from cpl.trace import Trace, load_trace, stream_end
    if path.lower().endswith(".jsonl"):
        meta = stream_end(path)
    else:
        try:
            trace = load_trace(path, lambda _: None)
        except TraceError:
            return False
        meta = trace.meta if isinstance(trace, Trace) else None
    return isinstance(meta, dict) and (bool(meta.get("unmerged")) or meta.get(
        "status") == "incomplete") and meta.get("run") == run


def _finished(path: str) -> bool:
    """A stream whose last line is its end line, or a document that reads whole."""
    from cpl.trace import load_trace
    if path.lower().endswith(".jsonl"):  # the stream's form (cpl.trace reads others whole)
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - TAIL))
            lines = handle.read().rstrip().rsplit(b"\n", 1)
        return bool(_END_LINE.match(lines[-1]))
    try:
        load_trace(path, lambda _: None)
    except TraceError:
        return False
    return True


def _counted(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _renamed(error: TraceError, temporary: str, output: str) -> str:
    """The error as the user knows the file: the trace being built is ``output``."""
    return str(error).replace(temporary, output)


def add_merge_command(commands) -> None:
    merge = add_command(
        commands, "merge", cmd_merge,
        help="merge per-lifeline logs into one trace: a run's whose supervisor vanished, "
        "or agents' (cpl.live)",
        description="Merge per-lifeline logs into one trace: the events in causal order with "
        "their vector clocks and the messages in transit. Either the parts of a run whose "
        "`cpl run` was killed before it wrote its trace whole (T.parts for --trace T; "
        "meta.status 'vanished'), or the logs agents wrote through cpl.live on any processes "
        "or hosts (meta.status 'ok' when every agent closed its log, else 'vanished'). What "
        "cannot be placed (a receive whose send is in no log, a damaged line) makes the trace "
        "'incomplete', naming the first such line (exit 1), the lines kept in "
        "TRACE.unplaced.jsonl.")
    merge.add_argument("parts", metavar="PARTS", nargs="+",
                       help="a run's parts folder (e.g. t.jsonl.parts), or the logs of "
                       "agents (cpl.live): .jsonl files, or folders of them")
    merge.add_argument("-o", "--output", metavar="TRACE", required=True,
                       help=f"the trace to write ({TRACE_FILES}; '-': standard output); an "
                       f"unfinished trace of these parts is replaced, a whole trace only "
                       f"with --force")
    merge.add_argument("--force", action="store_true",
                       help="replace TRACE even if it is a whole trace or another file")
