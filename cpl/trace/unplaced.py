"""What a merge could not place: where each lifeline's part of the trace stops, and why.

A merge places an event once everything before it is placed: its lifeline's
earlier events and, for a receive, its send.  A receive whose send is in no
log, a line that is no event of its lifeline, a line over the limit, a log
that cannot be read: each stops its lifeline there (a ``Halt``), and every
event causally after it waits too.  Nothing of that is dropped quietly: the
trace's ``meta.status`` says ``incomplete`` and ``meta.incomplete`` names the
first cause (its log, line and why); the lines not placed are kept, each as a
JSON line of a side file beside the trace (``unplaced_of``) by ``cpl merge``,
in their logs (the parts folder, not removed) by ``cpl run``.

A side file rather than the trace's ``meta``: the end line is read whole by
every reader, within the read limit, and a merge that lost a whole log would
have to hold it all in memory until then; a side file is written a line at a
time and leaves the trace as readable as any.
"""

from __future__ import annotations

import json

import attrs

INCOMPLETE = "incomplete"  # meta.status of a trace whose merge could not place every event
UNPLACED_FORMAT = "cpl-unplaced/1"
UNPLACED_SUFFIX = ".unplaced.jsonl"


def unplaced_of(trace_path) -> str:
    """Where ``cpl merge -o trace_path`` keeps the lines it could not place."""
    return f"{trace_path}{UNPLACED_SUFFIX}"


@attrs.frozen
class Halt:
    """Where one lifeline's part of a merged trace stops: the ``log`` (``None`` for events
    handed over in memory), its ``line`` and byte ``offset`` (``None``: the log could not be
    read at all), the ``event`` id there if that line is an event, ``why`` (a phrase whose
    subject is that line, or the log), the ``msg`` a receive waits for, and ``order``: when
    the merge found it."""

    lifeline: str
    log: str | None
    line: int | None
    offset: int | None
    event: str | None
    why: str
    order: int
    msg: str | None = None

    def to_meta(self) -> dict:
        found = {"lifeline": self.lifeline, "log": self.log, "line": self.line,
                 "event": self.event, "why": self.why}
        return {key: value for key, value in found.items() if value is not None}


def record(halt: Halt, line: int | None, offset: int | None, data, first: bool) -> dict:
    """One line not placed, as the side file keeps it: an event (``event``), another JSON
    value (``value``), or text that is no JSON (``text``, its bytes as UTF-8 with the rest
    escaped; ``too_long`` for a line over the limit, left in its log)."""
    kept: dict = {"lifeline": halt.lifeline, "log": halt.log, "line": line, "offset": offset}
    if first:
        kept["why"] = halt.why
    if data is None:
        kept["too_long"] = True
    elif isinstance(data, (bytes, bytearray)):
        try:
            value = json.loads(data)
            json.dumps(value, allow_nan=False)  # NaN, a lone surrogate: kept as text
            kept["event" if _is_event(value, halt.lifeline) else "value"] = value
        except (ValueError, RecursionError, UnicodeDecodeError):
            kept["text"] = bytes(data).decode("utf-8", "backslashreplace")
    else:
        kept["event"] = data
    return {key: value for key, value in kept.items() if value is not None}


def _is_event(value, lifeline: str) -> bool:
    return isinstance(value, dict) and value.get("lifeline") == lifeline and "kind" in value


def sent_in(kept: dict) -> str | None:
    """The message a kept event sends, if it is a send."""
    event = kept.get("event")
    if isinstance(event, dict) and event.get("kind") == "send":
        msg = event.get("msg")
        return msg if isinstance(msg, str) else None
    return None


def incomplete(meta: dict, found: dict, kept: str | None) -> dict:
    """``meta`` turned into an incomplete trace's: ``status`` ``incomplete``, ``error`` saying
    what was not placed and where it is kept, ``incomplete`` the first cause (``found``, from
    ``Merging.placed``) and how the run or the logs had ended (``ended``)."""
    about, meta = dict(found), as_ended(meta)
    ended = {key: meta[key] for key in ("status", "error") if key in meta}
    if ended:
        about["ended"] = ended
    if kept:
        about["kept"] = kept
    return {**meta, "status": INCOMPLETE, "error": said(about), INCOMPLETE: about}


def as_ended(meta: dict) -> dict:
    """``meta`` as the run or the logs ended, without what an earlier merge found missing
    (``cpl run`` leaves an incomplete run's ``meta`` in its parts for ``cpl merge``)."""
    about = meta.get(INCOMPLETE)
    if meta.get("status") != INCOMPLETE or not isinstance(about, dict):
        return meta
    ended = about.get("ended") if isinstance(about.get("ended"), dict) else {}
    meta = {key: value for key, value in meta.items() if key not in (INCOMPLETE, "error")}
    return {**meta, **ended} if "status" in ended else {**meta, "status": "ok"}


def said(about: dict) -> str:
    """One line: what was not placed, the first cause, and where it is kept."""
    lines, lifelines = about.get("unplaced", 0), about.get("lifelines", 1)
    logs = "1 lifeline's log" if lifelines == 1 else f"{lifelines:,} lifelines' logs"
    text = (f"the merge could not place every event: {lines:,} line{'' if lines == 1 else 's'}"
            f" of {logs} not placed" if lines else f"the merge could not read all of {logs}")
    return (f"{text}; the first: {subject(about)} {about.get('why', '')}".rstrip()
            + (f"; kept in {about['kept']}" if about.get("kept") else ""))


def subject(about) -> str:
    """``line 3 of p/1.jsonl (B.2)``, or the log itself when no line of it could be read."""
    log, line, event = about.get("log"), about.get("line"), about.get("event")
    lifeline = about.get("lifeline", "?")
    if line is None:
        return log or f"{lifeline}'s log"
    place = f"line {line} of {log}" if log else f"event {line} of {lifeline}'s log"
    return place + (f" ({event})" if event else "")


def line_of(kept: dict) -> str:
    """A kept record as one JSON line (ASCII: a lone surrogate is escaped, not lost)."""
    try:
        return json.dumps(kept, allow_nan=False) + "\n"
    except (ValueError, TypeError, RecursionError):  # an event handed over in memory
        return json.dumps({**{k: v for k, v in kept.items() if k not in ("event", "value")},
                           "text": repr(kept.get("event", kept.get("value")))}) + "\n"
