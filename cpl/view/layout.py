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

from typing import Mapping

import attrs

from ..trace import Trace
from ..semantics import Evaluator

MAX_ROWS = 150  # past this the picture folds acts, then shows a window (about 5,000 px tall)


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


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _rows(trace: Trace, group: list[int]) -> list[int]:
    """Row of every event (by its group: the events of a fold share one row)."""
    rows = [0] * len(trace.events)
    last_row: dict[str, int] = {}
    send_row: dict[str, int] = {}
    for index, event in enumerate(trace.events):
        if group[index] != index:  # folded into an earlier act of the same run
            rows[index] = rows[group[index]]
            continue
        row = last_row.get(event.lifeline, 0) + 1
        if event.kind == "recv" and event.msg in send_row:
            row = max(row, send_row[event.msg] + 1)
        rows[index] = row
        last_row[event.lifeline] = row
        if event.kind == "send":
            send_row[event.msg] = row
    return rows


def _groups(trace: Trace, fold: bool) -> list[int]:
    """For each event, the index of the first act of the run of local acts it belongs to."""
    group = list(range(len(trace.events)))
    if not fold:
        return group
    run_start: dict[str, int | None] = {}
    for index, event in enumerate(trace.events):
        start = run_start.get(event.lifeline)
        if event.kind == "act":
            if start is None:
                run_start[event.lifeline] = index
            else:
                group[index] = start
        else:
            run_start[event.lifeline] = None
    return group


def _title(trace: Trace) -> str:
    meta = trace.meta or {}
    parts = [str(meta["choreography"])] if isinstance(meta.get("choreography"), str) else []
    if isinstance(meta.get("seed"), int) and not isinstance(meta.get("seed"), bool):
        parts.append(f"seed {meta['seed']}")
    parts.append(f"{len(trace.events)} events")
    if isinstance(meta.get("status"), str):
        parts.append(meta["status"] if not isinstance(meta.get("error"), str)
                     else f"{meta['status']}: {_short(meta['error'], 120)}")
    return " · ".join(parts)


def _ends(trace: Trace, lanes: Mapping[str, int], last_row: Mapping[str, int]) -> list[End]:
    """Where a died or stopped lifeline ended (meta is the recorder's word: checked here)."""
    meta = trace.meta or {}
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
    return [End(lane, last_row.get(name, 0) + 1, f"stopped: {_short(status, 20)}")
            for name, lane in lanes.items()]


def layout(trace: Trace, highlight: str | None = None, max_rows: int = MAX_ROWS) -> Layout:
    """Place every event and message of ``trace``; ``highlight`` is an event id."""
    events = trace.events
    lanes = {name: n for n, name in enumerate(trace.lifelines)}
    focus = trace.index_of(highlight) if highlight is not None else None
    group = _groups(trace, False)
    rows = _rows(trace, group)
    folded = 0
    if max_rows and rows and max(rows) > max_rows:
        group = _groups(trace, True)
        rows = _rows(trace, group)
        folded = sum(1 for index, first in enumerate(group) if first != index)
    top, bottom = 1, max(rows, default=0)
    if max_rows and bottom > max_rows:
        centre = rows[focus] + max_rows // 4 if focus is not None else bottom
        bottom = min(bottom, max(centre, max_rows))
        top = bottom - max_rows + 1
    shown = [index for index in range(len(events))
             if group[index] == index and top <= rows[index] <= bottom]

    past, evaluator = _past(trace, focus)
    frontier = set()
    if evaluator is not None:
        frontier = {evaluator.last(name, focus) for name in trace.lifelines} - {None}
    counts: dict[int, int] = {}
    for index, first in enumerate(group):
        counts[first] = counts.get(first, 0) + 1
    dots, dot_of = [], {}
    for index in shown:
        event = events[index]
        count = counts[index]
        kind = "fold" if count > 1 else event.kind
        dot_of[index] = len(dots)
        in_past = None if past is None else bool(past[index])
        dots.append(Dot(index, count, lanes[event.lifeline], rows[index] - top + 1, kind,
                        _dot_text(event, count), event.guard, event.outcome, in_past,
                        index in frontier))
    for index, first in enumerate(group):  # a highlight inside a fold marks the fold
        if first != index and first in dot_of and past is not None and past[index]:
            d = dot_of[first]
            dots[d] = attrs.evolve(dots[d], past=True, frontier=dots[d].frontier or index in frontier)
    arrows = _arrows(trace, dot_of, lanes, past)
    last_row = {}
    for index in shown:
        last_row[events[index].lifeline] = rows[index] - top + 1
    ends = _ends(trace, lanes, last_row) if bottom == max(rows, default=0) else []
    skipped_before = sum(1 for r in rows if r < top)
    skipped_after = sum(1 for r in rows if r > bottom)
    return Layout(tuple(trace.lifelines), tuple(dots), tuple(arrows), tuple(ends),
                  bottom - top + 1 if events else 0, _title(trace), focus,
                  skipped_before, skipped_after, folded)


def _past(trace: Trace, focus: int | None):
    """(per event: is it in the focus's causal past, the evaluator), or (None, None)."""
    if focus is None:
        return None, None
    evaluator = Evaluator(trace)
    marks = bytearray(len(trace.events))
    for index in evaluator.causal_past_unordered(focus):
        marks[index] = 1
    return marks, evaluator


def _dot_text(event, count: int) -> str:
    if count > 1:
        return f"{count} local acts"
    if event.kind == "choice":
        outcome = "" if event.outcome is None else f" → {str(event.outcome).lower()}"
        return _short(event.label or event.id, 40) + outcome
    if event.kind == "act":
        return _short(event.label or event.id, 40)
    return ""  # a send or receive: its arrow carries the label


def _arrows(trace: Trace, dot_of: Mapping[int, int], lanes, past) -> list[Arrow]:
    arrows = []
    for index, event in enumerate(trace.events):
        if event.kind != "send":
            continue
        receive = trace.receive_of(event.msg)
        recv_index = None if receive is None else trace.index_of(receive.id)
        send_dot = dot_of.get(index)
        recv_dot = None if recv_index is None else dot_of.get(recv_index)
        if send_dot is None and recv_dot is None:
            continue  # wholly outside the window
        if send_dot is None and receive is None:
            continue
        if event.to not in lanes:
            continue
        in_past = None if past is None else bool(past[index] and (
            recv_index is None or past[recv_index]))
        arrows.append(Arrow(send_dot, recv_dot, lanes[event.lifeline], lanes[event.to],
                            _short(event.label or event.msg, 32), receive is None, in_past))
    return arrows
