"""The HTML viewer: one self-contained page with the MSC, the trace and a little script.

The page is the graphviz SVG inline, the trace and what the script needs as
JSON data blocks, and the script and style inline — no network, no CDN, no
external URL.  Hover an event for its id, local index, vector clock, store and
payload; click one (a choice, above all) for its causal past, the latest event
of each lifeline it saw, and the explanation of its guard; hide lifelines with
the check boxes.

Everything in the trace is hostile data.  JSON goes into ``<script
type="application/json">`` with ``<``, ``>``, ``&`` and ``/`` escaped, so no
text can close the block or open markup (nor spell ``//``); graphviz escapes
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

from ..semantics import Explainer
from ..trace import Trace
from .dot import visible
from .layout import Layout

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
    """graphviz's SVG as an element of the page: no prolog, doctype, comments, titles
    (a browser would show ``e12`` as a tooltip) or namespace URLs (HTML gives <svg> its
    namespace), and no '/' in text, so trace text cannot spell ``//``."""
    start = svg.find("<svg")
    svg = svg[start:] if start >= 0 else ""
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r"<title>[^<]*</title>", "", svg)
    svg = re.sub(r'\s+xmlns(:xlink)?="[^"]*"', "", svg)
    svg = re.sub(r">[^<]*<", lambda m: m.group().replace("/", "&#47;"), svg)
    return re.sub(r"\n\s*\n", "\n", svg).strip()


def _events(trace: Trace, layout: Layout, clocks) -> list[dict]:
    """What the script shows of each drawn event (a fold: its first act, state after its last)."""
    local = trace.local_index()
    stores = trace.valuations()
    drawn = []
    for dot in layout.dots:
        event = trace.events[dot.index]
        position = local[dot.index]
        members = trace.local_events(event.lifeline)[position:position + dot.count]
        last = members[-1]
        item = {"index": dot.index, "id": event.id, "lifeline": event.lifeline,
                "lane": dot.lane, "kind": dot.kind, "local": position, "count": dot.count,
                "vc": {name: clocks[name][last] for name in trace.lifelines  # zeros left out:
                       if clocks[name][last]},  # a wide trace would be lanes × events
                "store": stores[last], "label": event.label}
        for name in ("to", "msg", "guard", "outcome", "payload"):
            if getattr(event, name) is not None:
                item[name] = getattr(event, name)
        if dot.count > 1:
            item["ids"] = [trace.events[i].id for i in members]
        drawn.append(item)
    return drawn


def _arrows(trace: Trace, layout: Layout) -> list[dict]:
    """Each drawn message: its lanes and both ends as (lane, local index), drawn or not."""
    local = trace.local_index()
    lanes = {name: n for n, name in enumerate(trace.lifelines)}
    found = []
    for number, arrow in enumerate(layout.arrows):
        if arrow.send is not None:
            send = layout.dots[arrow.send].index
            receive = trace.receive_of(trace.events[send].msg)
            recv = None if receive is None else trace.index_of(receive.id)
        else:
            recv = layout.dots[arrow.recv].index
            send = trace.send_index(trace.events[recv].msg)
        event = trace.events[send]
        item = {"n": number, "from": arrow.sender_lane, "to": arrow.receiver_lane,
                "msg": event.msg, "text": arrow.text, "transit": arrow.in_transit,
                "send": [lanes[event.lifeline], local[send]], "sendId": event.id,
                "recv": None if recv is None else [lanes[trace.events[recv].lifeline],
                                                   local[recv]]}
        if recv is not None:
            item["recvId"] = trace.events[recv].id
        if event.payload is not None:
            item["payload"] = event.payload
        found.append(item)
    return found


def _explanations(trace: Trace, layout: Layout, explainer: Explainer) -> tuple[dict, list[str]]:
    """explain() of the drawn choices that recorded a guard (the highlighted one first),
    at most MAX_EXPLAINED, with one evaluator; a failure becomes its message."""
    chosen = [dot.index for dot in layout.dots if dot.kind == "choice"
              and trace.events[dot.index].guard is not None]
    if layout.highlight in chosen:
        chosen.remove(layout.highlight)
        chosen.insert(0, layout.highlight)
    found = {}
    for index in chosen[:MAX_EXPLAINED]:
        event = trace.events[index]
        try:
            found[event.id] = explainer.explain(event.id).to_json()
        except Exception as error:  # a missing predicate, a guard the trace cannot check…
            found[event.id] = {"error": f"{type(error).__name__}: {error}"}
    notes = []
    if len(chosen) > MAX_EXPLAINED:
        notes.append(f"Explanations are precomputed for {MAX_EXPLAINED} of the {len(chosen)} choices "
                     f"drawn; `cpl explain TRACE EVENT` explains any of them.")
    return found, notes


def _notes(trace: Trace, layout: Layout) -> list[str]:
    notes = []
    if layout.skipped_before or layout.skipped_after:
        notes.append(f"Only a window of the run is drawn: {layout.skipped_before} earlier and "
                     f"{layout.skipped_after} later events are not shown (--max-rows).")
    if layout.folded:
        notes.append(f"{layout.folded} local acts are folded into the boxes of their runs.")
    if trace.in_transit():
        notes.append(f"{len(trace.in_transit())} message(s) still in transit (dashed).")
    if layout.highlight is not None:
        notes.append("Drawn with --highlight: the colours greyed in the picture stay grey.")
    return notes


def view_data(trace: Trace, layout: Layout, predicates=None) -> dict:
    """Everything the page's script reads, JSON-ready."""
    explainer = Explainer(trace, predicates)  # its vector clocks serve the events too
    explanations, explain_notes = _explanations(trace, layout, explainer)
    return {"title": layout.title, "lifelines": list(layout.lifelines),
            "events": _events(trace, layout, explainer.evaluator.clocks), "arrows": _arrows(trace, layout),
            "ends": [end.lane for end in layout.ends], "highlight": layout.highlight,
            "explanations": explanations, "notes": _notes(trace, layout) + explain_notes}


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def page(trace: Trace, layout: Layout, svg: str, predicates=None) -> str:
    """The viewer: one HTML document with ``svg`` (graphviz's drawing of ``layout``) inline."""
    script, style = _asset("viewer.js"), _asset("viewer.css")
    policy = (f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
              "base-uri 'none'; form-action 'none'")
    title = html.escape(visible(layout.title or "MSC"))
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
<script type="application/json" id="cpl-trace">{_json(trace.to_dict())}</script>
<script type="application/json" id="cpl-view">{_json(view_data(trace, layout, predicates))}</script>
<script>{script}</script>
</body>
</html>
"""


__all__ = ["MAX_EXPLAINED", "page", "view_data"]
