"""Where everything of an MSC goes: one column per lifeline, one row per causal layer.

A picture is drawn from a trace alone.  An event's row is one below both its
previous local event and, for a receive, its send — so time runs downward,
every arrow slants down, and an overtaking message crosses the one it
overtook.  Big traces stay readable: past ``max_rows``, runs of local acts
fold into one box, and if that is not enough only a window of rows is drawn
(around ``--highlight``, else the end of the run, where failures are), with
arrows that cross its edge cut at the edge.
"""

from __future__ import annotations

import json
import re
from typing import Mapping

import attrs

from .window import Message, Seen, Window, collect

MAX_ROWS = 150  # past this the picture folds acts, then shows a window (about 5,000 px tall)
SHORT_LABEL = 40  # an arrow's label with its values, drawn by default up to this long
FORCED_VALUE = 200  # with --values, one value's text is cut past this (a huge one is no label)


@attrs.frozen
class Dot:
    """One drawn event, or a folded run of ``count`` local acts starting at ``index``."""

    index: int  # trace index of the (first) event
    count: int
    lane: int
    row: int
    kind: str  # act | send | recv | choice | fold
    text: str  # the short label drawn beside it
    guard: str | None = None
    outcome: bool | None = None
    past: bool | None = None  # with a highlight: in its causal past; else None
    frontier: bool = False  # with a highlight: the latest event of its lifeline it saw
    ident: str = ""  # the event id cpl explain takes (a fold: its first and last)
    bare: str | None = None  # its text without values (by default shown where they fit)


@attrs.frozen
class Arrow:
    """A message: send dot → receive dot.  ``recv`` is None while in transit; either end
    may lie outside the window (``None`` dot with ``cut`` set)."""

    send: int | None  # index into Layout.dots
    recv: int | None
    sender_lane: int
    receiver_lane: int
    text: str
    in_transit: bool = False
    past: bool | None = None


@attrs.frozen
class End:
    """How a lifeline ended, when the run did not end well: drawn below its last event."""

    lane: int
    row: int
    text: str


@attrs.frozen
class Layout:
    lifelines: tuple[str, ...]
    dots: tuple[Dot, ...]
    arrows: tuple[Arrow, ...]
    ends: tuple[End, ...]
    rows: int  # the last row used (rows are 1..rows)
    title: str
    highlight: int | None = None  # trace index of the highlighted event
    skipped_before: int = 0  # events above the window
    skipped_after: int = 0
    folded: int = 0  # acts folded into boxes
    ids: bool | None = None  # event ids drawn: where they fit (None), all, or none


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _title(meta, count: int) -> str:
    meta = meta or {}
    parts = [str(meta["choreography"])] if isinstance(meta.get("choreography"), str) else []
    if isinstance(meta.get("seed"), int) and not isinstance(meta.get("seed"), bool):
        parts.append(f"seed {meta['seed']}")
    parts.append(f"{count} events")
    if isinstance(meta.get("status"), str):
        parts.append(meta["status"] if not isinstance(meta.get("error"), str)
                     else f"{meta['status']}: {_short(meta['error'], 120)}")
    return " · ".join(parts)


def _ends(meta, lanes: Mapping[str, int], last_row: Mapping[str, int]) -> list[End]:
    """Where a died, failed or stopped lifeline ended (meta is the recorder's word: checked
    here): the one that died or failed is marked so, the others only stopped."""
    meta = meta or {}
    status = meta.get("status")
    if not isinstance(status, str) or status in ("ok", ""):
        return []
    died = meta.get("died") if isinstance(meta.get("died"), Mapping) else None
    if died is not None and died.get("lifeline") in lanes:
        name = died["lifeline"]
        signal, code = died.get("signal"), died.get("exit")
        how = (f"died (signal {signal})" if isinstance(signal, int) else
               f"died (exit {code})" if isinstance(code, int) else "died")
        return [End(lanes[name], last_row.get(name, 0) + 1, how)]
    culprit = _failed_lifeline(meta, lanes) if status == "failed" else None
    if culprit is None:
        return [End(lane, last_row.get(name, 0) + 1, f"stopped: {_short(status, 20)}")
                for name, lane in lanes.items()]
    return [End(lane, last_row.get(name, 0) + 1,
                _failed_text(meta, name) if name == culprit else "stopped")
            for name, lane in lanes.items()]


def _failed_lifeline(meta: Mapping, lanes: Mapping[str, int]) -> str | None:
    """The lifeline whose failure ended the run: ``meta.failed.lifeline``, or in a trace
    recorded before that field, the one the error names as a run failure does
    (``…error: NAME, after ID: cause``) when exactly one lifeline fits."""
    failed = meta.get("failed")
    if isinstance(failed, Mapping) and isinstance(failed.get("lifeline"), str):
        return failed["lifeline"] if failed["lifeline"] in lanes else None
    error = meta.get("error")
    if not isinstance(error, str):
        return None
    head = error.split("\n", 1)[0]
    fits = [name for name in lanes if _failure_head(name).match(head)
            or _failure_head(name, "error: ").search(head)]
    return fits[0] if len(fits) == 1 else None


def _failure_head(name: str, lead: str = "") -> re.Pattern:
    """Where a run failure's message says it happened: ``NAME, after ID: `` (``event ID``
    in traces recorded before it named the event the trace holds; ``before its first
    event``)."""
    return re.compile(re.escape(f"{lead}{name}, ") +
                      r"(?:event [^:]*|after [^:]*|before its first event): ")


def _failed_text(meta: Mapping, name: str) -> str:
    """``failed: `` and the cause, short: the error without its file and lifeline head."""
    error = meta.get("error")
    if not isinstance(error, str):
        return "failed"
    cause = error.split("\n", 1)[0]
    found = _failure_head(name).search(cause)
    if found:
        cause = cause[found.end():]
    return f"failed: {_short(cause, 32)}"


def layout(source, highlight: str | None = None, max_rows: int = MAX_ROWS,
           values: bool | None = None, ids: bool | None = None) -> Layout:
    """Place the drawn events and messages of ``source`` (a ``Trace``, or a ``.jsonl``
    reader whose events are not read yet); ``highlight`` is an event id; ``values`` and
    ``ids`` as ``placed`` takes them."""
    return placed(collect(source, highlight, max_rows), values, ids)


def placed(window: Window, values: bool | None = None, ids: bool | None = None) -> Layout:
    """The layout of a collected window: its rows renumbered from 1, acts folded into
    their runs' first, and the highlighted event's causal past marked.  ``values``: each
    arrow's label shows the values its message carried, and each act's the values it set
    — ``None`` when the label stays short (``SHORT_LABEL``), ``True`` always, ``False``
    never (by default an act's and a receive's are shown where they fit: ``cpl.view.fits``).
    ``ids``: each event's id beside it — ``None`` where it fits, ``True`` always,
    ``False`` never."""
    lanes = {name: n for n, name in enumerate(window.header.lifelines)}
    focus = None if window.focus is None else window.focus.clock
    members: dict[int, list[Seen]] = {}
    for seen in window.kept:
        members.setdefault(window.first(seen), []).append(seen)
    carried = {m.recv[0]: m.send.event.payload for m in window.messages if m.recv is not None}
    dots, dot_of, last_row = [], {}, {}
    for first, group in members.items():
        seen, event, count = group[0], group[0].event, len(group)
        row = window.row(seen) - window.top + 1
        dot_of[first] = len(dots)
        last_row[event.lifeline] = row
        frontier = focus is not None and any(s.local == focus[s.lane] - 1 for s in group)
        in_past = None if focus is None else any(s.in_past(focus) for s in group)
        ident = event.id if count == 1 else f"{event.id} … {group[-1].event.id}"
        text = _dot_text(event, count, values, carried.get(first))
        bare = _dot_text(event, count, False) if values is None else None
        dots.append(Dot(first, count, seen.lane, row, "fold" if count > 1 else event.kind,
                        text, event.guard, event.outcome, in_past, frontier, ident,
                        bare if bare != text else None))
    arrows = []
    for message in drawn_messages(window, dot_of):
        send, recv = message.send, message.recv
        send_dot = dot_of.get(send.index)
        recv_dot = None if recv is None else dot_of.get(recv[0])
        in_past = None if focus is None else send.in_past(focus) and (
            recv is None or recv[2] < focus[recv[1]])
        arrows.append(Arrow(send_dot, recv_dot, send.lane, lanes[send.event.to],
                            arrow_text(send.event, values), recv is None,
                            in_past))
    ends = _ends(window.header.meta, lanes, last_row) if window.bottom == window.last_row else []
    return Layout(tuple(window.header.lifelines), tuple(dots), tuple(arrows), tuple(ends),
                  window.bottom - window.top + 1 if window.count else 0,
                  _title(window.header.meta, window.count),
                  None if window.focus is None else window.focus.index,
                  window.skipped_before, window.skipped_after, window.folds, ids)


def drawn_messages(window: Window, dots) -> list[Message]:
    """The messages drawn as arrows, in their order: those with a drawn end (``dots``: the
    drawn events' trace indices) between two of the trace's lifelines."""
    lanes = set(window.header.lifelines)
    return [m for m in window.messages if m.send.event.to in lanes and (
        m.send.index in dots or (m.recv is not None and m.recv[0] in dots))]


def arrow_text(event, values: bool | None = None) -> str:
    """A send's arrow label: its name, and the values its message carried as JSON text
    (``review(candidate="c1")``) — data shown, never read.  A decision's control message
    already says its outcome in its label, so its ``{"outcome": …}`` is not repeated."""
    name = _short(event.label or event.msg, 32)
    payload = event.payload
    if values is False or payload is None or _says_outcome(event):
        return name
    if isinstance(payload, Mapping):
        pairs = [(str(key), _json(value)) for key, value in payload.items()]
    else:
        pairs = [(None, _json(payload))]
    return _with_values(name, pairs, values, "({})") if pairs else name


def _with_values(name: str, pairs, values: bool | None, form: str) -> str:
    """``name`` with ``pairs`` in ``form`` (``({})``: a call; ``: {}``: an act's): all of
    them with ``values``, else as much as keeps it within ``SHORT_LABEL`` characters —
    each value cut with …, then the names only, then ``…`` alone."""
    if values:
        return _call(name, pairs, FORCED_VALUE, form)
    for limit in (SHORT_LABEL, 24, 16, 10, 6):
        text = _call(name, pairs, limit, form)
        if len(text) <= SHORT_LABEL:
            return text
    text = _call(name, pairs, 1, form)  # the names only: review(candidate=…)
    return text if len(text) <= SHORT_LABEL else name + form.format("…")


def _json(value) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=_plain)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def _plain(value):
    """Read-only maps and tuples of a loaded trace, as JSON sees them."""
    return dict(value) if isinstance(value, Mapping) else list(value)


def _call(name: str, pairs, limit: int, form: str = "({})", most: int = 20) -> str:
    """``name(key=value, …)`` (or another ``form``): at most ``most`` pairs, each value
    cut at ``limit``."""
    shown = [_short(text, limit) if key is None else f"{_short(key, 40)}={_short(text, limit)}"
             for key, text in pairs[:most]]
    return name + form.format(", ".join(shown + ["…"] * (len(pairs) > most)))


def _says_outcome(event) -> bool:
    payload = event.payload
    return (isinstance(payload, Mapping) and len(payload) == 1 and "outcome" in payload
            and isinstance(payload["outcome"], bool) and isinstance(event.label, str)
            and event.label.endswith(": " + json.dumps(payload["outcome"])))


def _dot_text(event, count: int, values: bool | None = None, carried=None) -> str:
    if count > 1:
        return f"{count} local acts"
    if event.kind == "choice":
        outcome = "" if event.outcome is None else f" → {str(event.outcome).lower()}"
        return _short(event.label or event.id, 40) + outcome
    if event.kind == "act":
        return _act_text(event, values)
    if event.kind == "recv" and values is not False and event.set:
        return _received_text(event, values, carried)
    return ""  # a send or receive: its arrow carries the label


def _received_text(event, values: bool | None, carried) -> str:
    """The values a receive set that its arrow does not show already: an agent of
    ``cpl.live`` sends a token, not its data, so what it set on receiving is drawn here
    (``candidate="c1"``); a run's receive sets what its message carried, shown on the
    arrow."""
    carried = carried if isinstance(carried, Mapping) else {}
    pairs = [(str(key), _json(value)) for key, value in event.set.items()
             if not (key in carried and _json(carried[key]) == _json(value))]
    return _with_values("", pairs, values, "{}") if pairs else ""


def _act_text(event, values: bool | None) -> str:
    """An act's label and the values it set (``tests ran: status="passed"``), unless its
    label says them already (``set status='pending'``); an act with neither: its id."""
    pairs = [] if values is False else [
        (str(key), _json(value)) for key, value in event.set.items()
        if not _states(event.label, str(key), value)]
    if not pairs:
        return _short(event.label or event.id, 40)
    if not event.label:
        return _with_values("", pairs, values, "{}")
    return _with_values(_short(event.label, 32), pairs, values, ": {}")


def _states(label: str | None, key: str, value) -> bool:
    """Whether ``label`` shows ``key``'s value already (``c.set``'s ``set status='pending'``)."""
    if not label:
        return False
    try:
        shown = {repr(value), _json(value)}
    except Exception:  # a hostile value's own __repr__: then the value is shown
        return False
    return any(f"{key}{sep}{text}" in label for text in shown for sep in ("=", " = "))
