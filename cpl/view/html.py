"""The HTML viewer: one self-contained page with the MSC, the trace and a little script.

The page is our SVG inline (``cpl.view.svg``: no graphviz), the trace (its header and the events of
the drawn rows only: a window of a huge run is a small page, and its notes say
what is left out) and what the script needs as JSON data blocks, and the
script and style inline — no network, no CDN, no external URL.  Hover an
event for its id, local index, vector clock, store and payload; click one (a
choice, above all) for its causal past, the latest event of each lifeline it
saw, and the explanation of its guard; hide lifelines with the check boxes.

Everything in the trace is hostile data.  JSON goes into ``<script
type="application/json">`` with ``<``, ``>``, ``&`` and ``/`` escaped, so no
text can close the block or open markup (nor spell ``//``); ``cpl.view.svg`` escapes
the SVG's text; the script puts trace text on the page with ``textContent``
only; and a Content-Security-Policy lets only the page's own script and style
(by hash) run, and nothing load.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from importlib import resources
from typing import Mapping

import attrs

from ..semantics import BeyondSlice, ExplainError, Explainer
from .dot import visible
from .layout import Layout, drawn_messages
from .window import Window

MAX_EXPLAINED = 500  # choices explained in advance, at most


def _json(value) -> str:
    """JSON safe inside a <script> data block: no '<', '>', '&' or '/' characters at all."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)
    for char, escape in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("/", "\\/"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def _plain(value):
    """Read-only maps and tuples of a loaded trace, as JSON sees them."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (tuple, set, frozenset)):
        return list(value)
    return repr(value)


def _svg_inline(svg: str) -> str:
    """Our SVG (``cpl.view.svg``) as an element of the page: no prolog or namespace URL
    (HTML gives <svg> its namespace), and no '/' in text, so trace text cannot spell ``//``."""
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else ""
    svg = re.sub(r'\s+xmlns="[^"]*"', "", svg, count=1)
    svg = re.sub(r">[^<]*<", lambda m: m.group().replace("/", "&#47;"), svg)
    return svg.strip()


def _events(window: Window, layout: Layout) -> list[dict]:
    """What the script shows of each drawn event (a fold: its first act, state after its last)."""
    names = window.header.lifelines
    members: dict[int, list] = {}
    for seen in window.kept:
        members.setdefault(window.first(seen), []).append(seen)
    drawn = []
    for dot in layout.dots:
        group = members[dot.index]
        seen, last = group[0], group[-1]
        event = seen.event
        item = {"index": dot.index, "id": event.id, "lifeline": event.lifeline,
                "lane": dot.lane, "kind": dot.kind, "local": seen.local, "count": dot.count,
                "vc": {name: n for name, n in zip(names, last.clock)  # zeros left out:
                       if n},  # a wide trace would be lanes × events
                "store": last.store, "label": event.label}
        for name in ("to", "msg", "guard", "outcome", "payload"):
            if getattr(event, name) is not None:
                item[name] = getattr(event, name)
        if dot.count > 1:
            item["ids"] = [member.event.id for member in group]
        drawn.append(item)
    return drawn


def _arrows(window: Window, layout: Layout) -> list[dict]:
    """Each drawn message: its lanes and both ends as (lane, local index), drawn or not."""
    messages = drawn_messages(window, {dot.index for dot in layout.dots})
    found = []
    for number, (arrow, message) in enumerate(zip(layout.arrows, messages)):
        send, recv = message.send, message.recv
        event = send.event
        item = {"n": number, "from": arrow.sender_lane, "to": arrow.receiver_lane,
                "msg": event.msg, "text": arrow.text, "transit": arrow.in_transit,
                "send": [send.lane, send.local], "sendId": event.id,
                "recv": None if recv is None else [recv[1], recv[2]]}
        if recv is not None:
            item["recvId"] = recv[3]
        if event.payload is not None:
            item["payload"] = event.payload
        found.append(item)
    return found


def _explanations(window: Window, layout: Layout, explainer: Explainer) -> tuple[dict, list[str]]:
    """explain() of the drawn choices that recorded a guard (the highlighted one first),
    at most MAX_EXPLAINED, with one evaluator over the events the window kept before its
    bottom; a failure becomes its message."""
    chosen = [dot.index for dot in layout.dots if dot.kind == "choice" and dot.guard is not None]
    if layout.highlight in chosen:
        chosen.remove(layout.highlight)
        chosen.insert(0, layout.highlight)
    ids = {seen.index: seen.event.id for seen in window.kept}
    found = {}
    for index in chosen[:MAX_EXPLAINED]:
        try:
            found[ids[index]] = explainer.explain(ids[index]).to_json()
        except (BeyondSlice, ExplainError):  # outside the events kept for the page
            found[ids[index]] = {"error": f"needs more of the run than the page keeps; "
                                          f"`cpl explain TRACE {ids[index]}` explains it"}
        except Exception as error:  # a missing predicate, a guard the trace cannot check…
            found[ids[index]] = {"error": f"{type(error).__name__}: {error}"}
    notes = []
    if len(chosen) > MAX_EXPLAINED:
        notes.append(f"Explanations are precomputed for {MAX_EXPLAINED} of the {len(chosen)} "
                     f"choices drawn; `cpl explain TRACE EVENT` explains any of them.")
    return found, notes


def _notes(window: Window, layout: Layout) -> list[str]:
    notes = []
    if layout.skipped_before or layout.skipped_after:
        notes.append(f"Only a window of the run is drawn, and only its events are in this "
                     f"page: {layout.skipped_before} earlier and {layout.skipped_after} later "
                     f"events of {window.count} are left out (--max-rows, --highlight).")
    if layout.folded:
        notes.append(f"{layout.folded} local acts are folded into the boxes of their runs.")
    if window.in_transit:
        notes.append(f"{window.in_transit} message(s) still in transit (dashed).")
    if layout.highlight is not None:
        notes.append("Drawn with --highlight: the colours greyed in the picture stay grey.")
    return notes


def view_data(window: Window, layout: Layout, predicates=None, schema=None) -> dict:
    """Everything the page's script reads, JSON-ready."""
    trace, horizon = window.recent.slice(window.header)
    explainer = Explainer(trace, predicates, horizon, schema)
    explanations, explain_notes = _explanations(window, layout, explainer)
    return {"title": layout.title, "lifelines": list(layout.lifelines),
            "events": _events(window, layout), "arrows": _arrows(window, layout),
            "ends": [end.lane for end in layout.ends], "highlight": layout.highlight,
            "explanations": explanations, "notes": _notes(window, layout) + explain_notes}


def _document(window: Window) -> dict:
    """The trace as a document, with only the events in the window's rows."""
    return attrs.evolve(window.header, events=[seen.event for seen in window.kept]).to_dict()


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode() + "'"


def page(window: Window, layout: Layout, svg: str, predicates=None, schema=None) -> str:
    """The viewer: one HTML document with ``svg`` (the drawing of ``layout``) inline,
    and of the trace its header and the events in the window's rows."""
    script, style = _asset("viewer.js"), _asset("viewer.css")
    policy = (f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
              "base-uri 'none'; form-action 'none'")
    title = html.escape(visible(layout.title or "MSC"))
    data = view_data(window, layout, predicates, schema)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{policy}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<header><strong>MSC</strong> <span id="title">{title}</span></header>
<main>
<div id="chart">
{_svg_inline(svg)}
</div>
<aside id="panel">
<section id="lifelines"><h2>Lifelines</h2></section>
<section id="event"><h2>Event</h2></section>
<section id="explanation"></section>
<section id="notes"></section>
</aside>
</main>
<div id="tip" hidden></div>
<script type="application/json" id="cpl-trace">{_json(_document(window))}</script>
<script type="application/json" id="cpl-view">{_json(data)}</script>
<script>{script}</script>
</body>
</html>
"""


__all__ = ["MAX_EXPLAINED", "page", "view_data"]
