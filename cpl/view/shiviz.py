"""A trace as a ShiViz log: two lines per event, a description then ``host {clock}``.

The file begins with ShiViz's parser expression and an empty delimiter line,
so it can be uploaded as is.  Clocks are computed from the trace's edges (the
reference evaluator's definition, as the events stream by), not copied from
recorded ``vc``s, so a hand-written trace gets them too.  ShiViz's host is
``\\S*``: whitespace (or a control character) in a lifeline name becomes ``_``
(made unique if two names then collide).
"""

from __future__ import annotations

import json
import re

from typing import Iterator

from ..trace import Trace

PARSER = r"(?<event>.*)\n(?<host>\S*) (?<clock>{.*})"


def host_names(lifelines) -> dict[str, str]:
    """Lifeline → a ShiViz host name: no whitespace, not empty, unique."""
    hosts: dict[str, str] = {}
    taken = {name for name in lifelines
             if name and name.isprintable() and not re.search(r"\s", name)}
    for name in lifelines:
        if name in taken and name not in hosts.values():  # already a good host name
            hosts[name] = name
            continue
        base = "".join("_" if c.isspace() or not c.isprintable() else c for c in name) or "_"
        host, n = base, 1
        while host in taken:
            n += 1
            host = f"{base}~{n}"
        taken.add(host)
        hosts[name] = host
    return hosts


def _line(text: str) -> str:
    return "".join(c if c.isprintable() else " " for c in text)


def shiviz_log(trace: Trace) -> str:
    return "".join(shiviz_lines(trace))


def shiviz_lines(source) -> Iterator[str]:
    """The log a line at a time (each ending in a newline): ``source`` is a ``Trace`` or a
    ``.jsonl`` reader, read once, keeping one clock per lifeline and per message in transit."""
    hosts = host_names(source.lifelines)
    clocks: dict[str, dict[str, int]] = {}
    sent: dict[str, dict[str, int]] = {}
    yield PARSER + "\n"
    yield "\n"
    for event in source.events if isinstance(source, Trace) else source.events():
        clock = dict(clocks.get(event.lifeline, {}))
        if event.kind == "recv" and event.msg in sent:
            for name, count in sent.pop(event.msg).items():
                clock[name] = max(clock.get(name, 0), count)
        clock[event.lifeline] = clock.get(event.lifeline, 0) + 1
        clocks[event.lifeline] = clock
        if event.kind == "send":
            sent[event.msg] = clock
        words = [event.id, event.kind]
        if event.kind == "send":
            words.append(f"to {event.to} ({event.msg})")
        elif event.kind == "recv":
            words.append(f"({event.msg})")
        if event.label:
            words.append(f"{event.label}")
        if event.kind == "choice" and event.outcome is not None:
            words.append(f"→ {str(event.outcome).lower()}")
        shown = {hosts[name]: clock[name] for name in hosts if clock.get(name)}
        yield _line(" ".join(words)) + "\n"
        yield f"{hosts[event.lifeline]} {json.dumps(shown, ensure_ascii=False)}\n"
