/* cpl render --format html: the viewer's script.
   Reads the JSON block #cpl-view; finds graphviz's elements by their ids (ev-N, label-N,
   id-N (the event id drawn beside it), seen-N for trace index N; msg-K, msglabel-K for arrow K; lifeline-L, line-L, end-L for
   lane L).  Text from the trace reaches the page through textContent only. */
(function () {
  "use strict";

  var view = JSON.parse(document.getElementById("cpl-view").textContent);
  var chart = document.getElementById("chart");
  var svg = chart.querySelector("svg");
  var graph = svg ? (svg.querySelector("g.graph") || svg) : null;
  var tip = document.getElementById("tip");
  var panel = {
    lifelines: document.getElementById("lifelines"),
    event: document.getElementById("event"),
    explanation: document.getElementById("explanation"),
    notes: document.getElementById("notes")
  };
  var lanes = view.lifelines;
  var dots = view.events;
  var byIndex = {}, byId = {}, byLane = lanes.map(function () { return []; });
  dots.forEach(function (d) {
    byIndex[d.index] = d;
    (d.ids || [d.id]).forEach(function (id) { byId[id] = d; });
    byLane[d.lane].push(d);
  });
  var hidden = lanes.map(function () { return false; });
  var chosen = null;
  var rings = [];
  var moved = [];  /* ids moved clear of a ring */

  /* ------------------------------------------------------------ small helpers */

  function node(id) { return document.getElementById(id); }

  function make(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function value(v) { return v === undefined ? "undefined" : JSON.stringify(v); }

  function each(ids, fn) {
    ids.forEach(function (id) { var e = node(id); if (e) { fn(e); } });
  }

  function dotElements(d) { return ["ev-" + d.index, "label-" + d.index, "id-" + d.index, "seen-" + d.index]; }

  function arrowElements(a) { return ["msg-" + a.n, "msglabel-" + a.n]; }

  function ordinal(n) {
    var s = ["th", "st", "nd", "rd"], v = n % 100;
    return n + (s[(v - 20) % 10] || s[v] || s[0]);
  }

  function facts(rows) {
    var dl = make("dl", "facts");
    rows.forEach(function (row) {
      if (row[1] === undefined || row[1] === null || row[1] === "") { return; }
      dl.appendChild(make("dt", null, row[0]));
      var dd = make("dd");
      if (row[1] instanceof Node) { dd.appendChild(row[1]); } else { dd.textContent = row[1]; }
      dl.appendChild(dd);
    });
    return dl;
  }

  function mapList(map, empty) {
    var names = Object.keys(map || {});
    if (!names.length) { return make("span", "muted", empty); }
    var box = make("span", "mono");
    names.forEach(function (name) { box.appendChild(make("span", "kv", name + " = " + value(map[name]))); });
    return box;
  }

  function clockText(vc) {
    return lanes.map(function (name) { return name + " " + (vc[name] || 0); }).join(" · ");
  }

  function eventFacts(d, guardShownElsewhere) {
    var where = d.count > 1 ? d.count + " local acts, " + d.ids[0] + " … " + d.ids[d.ids.length - 1]
      : d.kind + " on " + d.lifeline;
    return facts([
      ["event", d.id],
      ["what", where],
      ["lifeline", d.lifeline],
      ["local index", d.local + " (its " + ordinal(d.local + 1) + " event)"],
      ["label", d.label],
      ["message", d.msg === undefined ? undefined : d.msg + (d.to !== undefined ? " to " + d.to : "")],
      ["guard", guardShownElsewhere ? undefined : d.guard],
      ["outcome", d.outcome === undefined ? undefined : String(d.outcome)],
      ["vector clock", clockText(d.vc)],
      [d.count > 1 ? "store after last" : "store after", mapList(d.store, "(empty)")],
      ["payload", d.payload === undefined ? undefined : value(d.payload)]
    ]);
  }

  function arrowFacts(a) {
    return facts([
      ["message", a.msg],
      ["from → to", lanes[a.from] + " → " + lanes[a.to]],
      ["label", a.text],
      ["sent at", a.sendId],
      ["received at", a.recvId === undefined ? (a.transit ? "(in transit)" : "(not shown)") : a.recvId],
      ["payload", a.payload === undefined ? undefined : value(a.payload)]
    ]);
  }

  /* ----------------------------------------------------- which element is it */

  function targetOf(element) {
    var g = element && element.closest ? element.closest("g[id]") : null;
    if (!g || !chart.contains(g)) { return null; }
    var m = /^(ev|label|id|seen|msg|msglabel)-(\d+)$/.exec(g.id);
    if (!m) { return null; }
    var n = Number(m[2]);
    if (m[1] === "msg" || m[1] === "msglabel") { return view.arrows[n] ? { arrow: view.arrows[n] } : null; }
    return byIndex[n] ? { dot: byIndex[n] } : null;
  }

  /* ------------------------------------------------------------------ tooltip */

  function showTip(target, x, y) {
    tip.replaceChildren();
    var head = target.dot ? target.dot.id : "message " + target.arrow.msg;
    tip.appendChild(make("div", "head", head));
    tip.appendChild(target.dot ? eventFacts(target.dot) : arrowFacts(target.arrow));
    tip.hidden = false;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var left = x + 16, top = y + 16;
    if (left + w > window.innerWidth - 4) { left = Math.max(4, x - w - 16); }
    if (top + h > window.innerHeight - 4) { top = Math.max(4, window.innerHeight - h - 4); }
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }

  function hideTip() { tip.hidden = true; }

  /* -------------------------------------------------------- the causal past */

  function seen(vc, lane, local) { return local < (vc[lanes[lane]] || 0); }

  function frontier(d) {
    /* per lane, the drawn dot holding the latest event of that lane that d saw */
    var found = [];
    lanes.forEach(function (name, lane) {
      var last = (d.vc[name] || 0) - 1;
      if (last < 0) { return; }
      byLane[lane].forEach(function (f) {
        if (f.local <= last && last < f.local + f.count) { found.push(f); }
      });
    });
    return found;
  }

  function ring(d) {
    var g = node("ev-" + d.index);
    if (!g || !graph) { return; }
    var box = g.getBBox();
    var c = document.createElementNS(svg.namespaceURI, "circle");
    c.setAttribute("class", "ring");
    c.setAttribute("cx", box.x + box.width / 2);
    c.setAttribute("cy", box.y + box.height / 2);
    c.setAttribute("r", Math.max(box.width, box.height) / 2 + 6);
    c.setAttribute("data-lane", d.lane);
    c.setAttribute("data-event", d.id);
    c.setAttribute("data-event-index", d.index);
    graph.appendChild(c);
    rings.push(c);
    clearOfRing(node("id-" + d.index), box, Number(c.getAttribute("r")));
  }

  /* An id is drawn just clear of its dot, not of a ring the viewer adds: while ringed,
     it moves out from under the ring (and back on clear()). */
  function clearOfRing(label, box, r) {
    if (!label) { return; }
    var cx = box.x + box.width / 2, cy = box.y + box.height / 2, b = label.getBBox();
    var dx = 0, dy = 0;
    if (b.x + b.width < cx) { dx = Math.min(0, cx - r - 2 - (b.x + b.width)); }
    else if (b.x > cx) { dx = Math.max(0, cx + r + 2 - b.x); }
    else if (b.y + b.height < cy) { dy = Math.min(0, cy - r - 2 - (b.y + b.height)); }
    else { dy = Math.max(0, cy + r + 2 - b.y); }
    label.setAttribute("transform", "translate(" + dx + " " + dy + ")");
    moved.push(label);
  }

  function clear() {
    chosen = null;
    document.body.classList.remove("selecting");
    Array.prototype.forEach.call(chart.querySelectorAll(".dim, .chosen"), function (e) {
      e.classList.remove("dim");
      e.classList.remove("chosen");
    });
    rings.forEach(function (c) { c.remove(); });
    rings = [];
    moved.forEach(function (e) { e.removeAttribute("transform"); });
    moved = [];
    showHint();
    panel.explanation.replaceChildren();
    applyHidden();
  }

  function choose(d) {
    clear();
    chosen = d;
    document.body.classList.add("selecting");
    var inPast = 0;
    dots.forEach(function (f) {
      var visible = seen(d.vc, f.lane, f.local);
      if (visible) { inPast += 1; } else { each(dotElements(f), function (e) { e.classList.add("dim"); }); }
    });
    view.arrows.forEach(function (a) {
      var visible = seen(d.vc, a.send[0], a.send[1]) && (a.recv === null || seen(d.vc, a.recv[0], a.recv[1]));
      if (!visible) { each(arrowElements(a), function (e) { e.classList.add("dim"); }); }
    });
    each(["ev-" + d.index], function (e) { e.classList.add("chosen"); });
    var latest = frontier(d);
    latest.forEach(ring);
    applyHidden();

    panel.event.replaceChildren(make("h2", null, "Event"), eventFacts(d, !!view.explanations[d.id]));
    var saw = make("p", "note");
    saw.appendChild(document.createTextNode("Causal past: " + inPast + " of " + dots.length +
      " drawn events (the rest greyed); ringed: the latest event of each lifeline it saw: "));
    latest.forEach(function (f, n) {
      if (n) { saw.appendChild(document.createTextNode(" ")); }
      saw.appendChild(evref(f.count > 1 ? f.ids[(d.vc[f.lifeline] - 1) - f.local] : f.id));
    });
    panel.event.appendChild(saw);
    showExplanation(d);
  }

  /* -------------------------------------------------------- the explanation */

  function point(id, on) {
    var d = byId[id];
    if (d) { each(["ev-" + d.index, "label-" + d.index, "id-" + d.index], function (e) { e.classList.toggle("pointed", on); }); }
  }

  function evref(id) {
    var b = make("button", "evref", id);
    b.type = "button";
    if (!byId[id]) {
      b.disabled = true;
      b.title = "not drawn";
      return b;
    }
    b.addEventListener("mouseenter", function () { point(id, true); });
    b.addEventListener("mouseleave", function () { point(id, false); });
    b.addEventListener("focus", function () { point(id, true); });
    b.addEventListener("blur", function () { point(id, false); });
    b.addEventListener("click", function (event) {
      event.stopPropagation();
      var e = node("ev-" + byId[id].index);
      if (e && e.scrollIntoView) { e.scrollIntoView({ block: "center", inline: "center" }); }
      point(id, true);
      window.setTimeout(function () { point(id, false); }, 1500);
    });
    return b;
  }

  function badge(v) { return make("span", "badge " + (v ? "true" : "false"), v ? "true" : "false"); }

  function stepItem(step, guard) {
    var li = make("li", "step");
    var line = make("div");
    line.appendChild(badge(step.value));
    if (step.formula === guard) { line.appendChild(make("span", "muted", "the guard")); }
    else { line.appendChild(make("code", "formula", step.formula)); }
    line.appendChild(document.createTextNode(" at "));
    line.appendChild(evref(step.at));
    li.appendChild(line);
    if (step.why) {
      var why = make("div", "why", step.why);
      if (step.source) {
        why.appendChild(document.createTextNode(" — "));
        why.appendChild(evref(step.source));
      }
      li.appendChild(why);
    }
    if (step.terms) {
      var terms = make("ul", "terms");
      step.terms.forEach(function (t) {
        var item = make("li");
        item.appendChild(make("code", null, t.term + " = " + (t.defined ? value(t.value) : "undefined")));
        if (t.why) { item.appendChild(make("span", "muted", "  (" + t.why + ")")); }
        if (t.source && t.source !== step.at) {
          item.appendChild(document.createTextNode(" read at "));
          item.appendChild(evref(t.source));
        }
        if (t.set_by) {
          item.appendChild(document.createTextNode(" set by "));
          item.appendChild(evref(t.set_by));
        }
        terms.appendChild(item);
      });
      li.appendChild(terms);
    }
    if (step.repeat) { li.appendChild(make("div", "why muted", "(explained above)")); }
    if (step.cut) { li.appendChild(make("div", "why muted", "(not expanded: too many steps)")); }
    if (step.children) {
      var list = make("ul", "steps");
      step.children.forEach(function (child) { list.appendChild(stepItem(child)); });
      li.appendChild(list);
    }
    return li;
  }

  function showExplanation(d) {
    var box = panel.explanation;
    box.replaceChildren(make("h2", null, "Why"));
    if (d.kind !== "choice") {
      box.appendChild(make("p", "hint", "Not a choice: its causal past is shown. " +
        "`cpl explain TRACE " + d.id + " GUARD` explains a guard at any event."));
      return;
    }
    var x = view.explanations[d.id];
    if (!d.guard) { box.appendChild(make("p", "hint", "This choice recorded no guard.")); return; }
    if (!x) {
      box.appendChild(make("p", "hint", "Not explained in this page (too many choices): " +
        "`cpl explain TRACE " + d.id + "` explains it."));
      return;
    }
    if (x.error) {
      box.appendChild(make("p", "error", "The guard cannot be explained here: " + x.error));
      return;
    }
    var verdict = String(x.value);
    if (x.recorded !== null && x.recorded !== undefined) {
      verdict += " (recorded " + x.recorded + (x.recorded === x.value ? ", agrees)" : ", DIFFERS)");
    }
    var saw = make("span");
    Object.keys(x.frontier).forEach(function (lane, n) {
      if (n) { saw.appendChild(document.createTextNode(" · ")); }
      saw.appendChild(document.createTextNode(lane + " "));
      if (x.frontier[lane] === null) { saw.appendChild(make("span", "muted", "(nothing)")); }
      else { saw.appendChild(evref(x.frontier[lane])); }
    });
    box.appendChild(facts([["guard", make("code", "formula", x.guard)], ["value", verdict], ["saw", saw]]));
    var tree = make("ul", "steps top");
    tree.appendChild(stepItem(x.explanation, x.guard));
    box.appendChild(tree);
  }

  /* ---------------------------------------------------------------- the panel */

  function showHint() {
    panel.event.replaceChildren(make("h2", null, "Event"), make("p", "hint",
      "Hover an event for its details. Click a choice (◆) to see its causal past and why " +
      "it decided; Escape or a click on empty space clears."));
  }

  function applyHidden() {
    lanes.forEach(function (name, lane) {
      var off = hidden[lane];
      each(["lifeline-" + lane, "line-" + lane, "end-" + lane], function (e) { e.classList.toggle("gone", off); });
      byLane[lane].forEach(function (d) { each(dotElements(d), function (e) { e.classList.toggle("gone", off); }); });
    });
    view.arrows.forEach(function (a) {
      var off = hidden[a.from] || hidden[a.to];
      each(arrowElements(a), function (e) { e.classList.toggle("gone", off); });
    });
    rings.forEach(function (c) { c.classList.toggle("gone", hidden[Number(c.getAttribute("data-lane"))]); });
  }

  function lifelineBoxes() {
    lanes.forEach(function (name, lane) {
      var label = make("label");
      var box = make("input");
      box.type = "checkbox";
      box.checked = true;
      box.id = "show-lane-" + lane;
      box.addEventListener("change", function () { hidden[lane] = !box.checked; applyHidden(); });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + name));
      panel.lifelines.appendChild(label);
    });
  }

  function notes() {
    view.notes.forEach(function (text) { panel.notes.appendChild(make("p", "note", text)); });
    if (panel.notes.childNodes.length) { panel.notes.insertBefore(make("h2", null, "Notes"), panel.notes.firstChild); }
  }

  /* ---------------------------------------------------------------- events */

  chart.addEventListener("mousemove", function (event) {
    var target = targetOf(event.target);
    if (target) { showTip(target, event.clientX, event.clientY); } else { hideTip(); }
  });
  chart.addEventListener("mouseleave", hideTip);
  chart.addEventListener("click", function (event) {
    var target = targetOf(event.target);
    if (target && target.dot) { choose(target.dot); } else if (!target) { clear(); }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { clear(); hideTip(); }
  });

  lifelineBoxes();
  notes();
  showHint();
  if (view.highlight !== null && byIndex[view.highlight]) { choose(byIndex[view.highlight]); }
}());
