"""A trace as a ShiViz log: two lines per event, a description then ``host {clock}``.

The file begins with ShiViz's parser expression and an empty delimiter line,
so it can be uploaded as is.  Clocks are computed from the trace's edges (the
reference evaluator's vector clocks), not copied from recorded ``vc``s, so a
hand-written trace gets them too.  ShiViz's host is ``\\S*``: whitespace (or a
control character) in a lifeline name becomes ``_`` (made unique if two names
then collide).
"""

from __future__ import annotations

import json
import re

from ..trace import Trace
from ..semantics import vector_clocks

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
    hosts = host_names(trace.lifelines)
    clocks = vector_clocks(trace)
    out = [PARSER, ""]
    for index, event in enumerate(trace.events):
        words = [event.id, event.kind]
        if event.kind == "send":
            words.append(f"to {event.to} ({event.msg})")
        elif event.kind == "recv":
            words.append(f"({event.msg})")
        if event.label:
            words.append(f"{event.label}")
        if event.kind == "choice" and event.outcome is not None:
            words.append(f"→ {str(event.outcome).lower()}")
        clock = {hosts[name]: column[index] for name, column in clocks.items()
                 if column[index] and name in hosts}
        out.append(_line(" ".join(words)))
        out.append(f"{hosts[event.lifeline]} {json.dumps(clock, ensure_ascii=False)}")
    return "\n".join(out) + "\n"
