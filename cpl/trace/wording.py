"""Wording a trace problem that names *another* event: the earlier duplicate, the later send.

Split from ``cpl.trace.checker`` so the checker's fast path stays short: these
run only once a problem is found, and ask the checker's ``scan`` for the raw
events again (the checker keeps no index per event).
"""

from __future__ import annotations


def head(index: int, event_id: str, lifeline: str | None = None) -> str:
    """How messages name an event: ``event #3 't1' (TestRunner)``."""
    named = f"event #{index} {event_id!r}"
    return named if lifeline is None else f"{named} ({lifeline})"


def shown(value, limit: int = 40) -> str:
    """``repr(value)``, cut after ``limit`` characters: a hostile trace may hold megabytes."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def raw(checker, start: int = 0, stop: int | None = None):
    """(index, raw event) from ``checker.scan`` for indices start ≤ i < stop."""
    if checker.scan is None:
        return
    for index, item in enumerate(checker.scan()):
        if stop is not None and index >= stop:
            return
        if index >= start and isinstance(item, dict):
            yield index, item


def first(checker, before: int, **fields) -> tuple[int | None, object]:
    """The first raw event before ``before`` with these field values: (index, its id)."""
    for index, item in raw(checker, 0, before):
        if all(item.get(key) == value for key, value in fields.items()):
            return index, item.get("id")
    return None, None


def receive_problem(checker, index: int, event, found):
    """What is wrong with a receive (``found``: its send, if in transit), as a ``TraceError``."""
    from ..lang import did_you_mean

    msg, where = event.msg, head(index, event.id, event.lifeline)
    if found is None and checker.messages.fresh(msg):
        later = next((i for i, item in raw(checker, index + 1)  # "sent later" or "never sent"?
                      if item.get("kind") == "send" and item.get("msg") == msg), None)
        if later is not None:
            later_id = next(item.get("id") for _, item in raw(checker, later, later + 1))
            return checker.fail(f"{where}: receives message {msg!r} before its send (event "
                                f"#{later} {later_id!r}); list events in causal order, every "
                                f"send before its receive", index, event.id)
        return checker.fail(f"{where}: receives message {msg!r}, which no earlier event sends"
                            f"{did_you_mean(msg, checker.open)}", index, event.id)
    if found is None:
        send_index, send_id = first(checker, index, kind="send", msg=msg)
        to = next((item.get("to") for _, item in raw(checker, send_index, send_index + 1)),
                  event.lifeline) if send_index is not None else event.lifeline
    else:
        send_index, send_id, to = found
    if to != event.lifeline:
        return checker.fail(f"{where}: receives message {msg!r}, but its send (event "
                            f"#{send_index} {send_id!r}) is addressed to {to!r}",
                            index, event.id)
    earlier, other = first(checker, index, kind="recv", msg=msg)
    return checker.fail(f"{where}: receives message {msg!r}, which event #{earlier} {other!r} "
                        f"already received; a message is received at most once",
                        index, event.id)
