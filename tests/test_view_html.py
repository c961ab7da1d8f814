"""The HTML viewer (``cpl render --format html``): its structure, and the page in a real browser.

Structure: one self-contained file (no external reference of any kind), the
trace embedded as JSON that parses back, one ``ev-`` element per drawn event,
hostile names shown as text and never run.  Behaviour: a headless Chromium
(the distribution's package; ``.ci/run`` installs it) is driven over the
DevTools protocol on a pipe (``--remote-debugging-pipe``: no port at all): the
page loads with no console error or exception, hovering an event shows its
details, clicking a choice greys what it could not see and shows its
explanation, and hiding a lifeline hides its elements.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import signal
import subprocess
import time
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

from choreo import load_one
from choreo.execution.plan import prepare
from choreo.execution.simulate import Simulator
from cpl.semantics import explain
from cpl.trace import Event, Trace, load_trace
from cpl.view import html as viewer, layout, render
from needs import CHROMIUM

FIG2 = "examples/traces/fig2.json"
HOSTILE = "</script><script>window.pwned=1;alert(1)</script>"


@pytest.fixture(scope="module")
def review() -> Trace:
    plan = prepare(load_one("examples/code_review.py", None))
    return Simulator.of(plan).run(seed=3, values=plan.inputs(["rounds=2"])).trace


@pytest.fixture(scope="module")
def fig2() -> Trace:
    return load_trace(FIG2)


def hostile_trace() -> Trace:
    """Names and text that would run, load or break out if the page ever used them as markup."""
    img = '<img src=x onerror="window.pwned=2">'
    return Trace([HOSTILE, "B&amp;"], init={HOSTILE: {"x": "</script>"}}, events=[
        Event(img, HOSTILE, "act", set={"x": "<b>bold</b>"}, label="https://evil.example/p.png"),
        Event("s", HOSTILE, "send", to="B&amp;", msg="m<1>", label="<i>label</i>",
              payload={"url": "//evil.example/x", "html": "</script><!--"}),
        Event("r", "B&amp;", "recv", msg="m<1>"),
        Event("c", "B&amp;", "choice", guard="true", outcome=True, label="@import url(x)"),
    ])


def _html(trace: Trace, **options) -> str:
    return render(trace, "html", **options).decode("utf-8")


def _block(page: str, name: str):
    found = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', page, re.S)
    assert found, f"no {name} block"
    return json.loads(found.group(1))


def _svg(page: str) -> ET.Element:
    found = re.search(r"<svg\b.*?</svg>", page, re.S)
    assert found, "no inline svg"
    return ET.fromstring(found.group())


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, dict(attrs)))


def _tags(page: str) -> list[tuple[str, dict]]:
    """Every element of the page as the browser's tokenizer sees it, with its attributes."""
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser.found


def _loading_attributes(page: str) -> list[tuple[str, str]]:
    """Attributes that load, link, style or run something."""
    return [(tag, name) for tag, attrs in _tags(page) for name in attrs
            if name in ("src", "href", "xlink:href", "srcset", "action", "style", "background")
            or name.startswith("on")]


SAFE_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "strong", "span", "main",
             "div", "svg", "g", "polygon", "path", "ellipse", "text", "polyline", "aside",
             "section", "h2", "script"}


def _ids(root: ET.Element, prefix: str) -> list[str]:
    return [g.get("id") for g in root.iter("g") if (g.get("id") or "").startswith(prefix)]


# ------------------------------------------------------------------ structure


@pytest.mark.parametrize("which", ["fig2", "review"])
def test_page_is_self_contained(which, request):
    page = _html(request.getfixturevalue(which))
    assert page.startswith("<!DOCTYPE html>")
    # the CSP's script and style hashes are base64, where '/' is a digit
    text = re.sub(r"'sha256-[A-Za-z0-9+/=]+'", "", page)
    for reference in ("http:", "https:", "//", "@import", "url(", "<?xml", "<!DOCTYPE svg"):
        assert reference not in text, reference
    assert not _loading_attributes(page)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert page.count("<script") == 3  # the trace, the view data, the viewer's script
    assert page.count("<style") == 1


@pytest.mark.parametrize("which", ["fig2", "review"])
def test_trace_and_view_data_parse_back(which, request):
    trace = request.getfixturevalue(which)
    page = _html(trace)
    assert _block(page, "cpl-trace") == json.loads(json.dumps(trace.to_dict()))
    data = _block(page, "cpl-view")
    placed = layout(trace)
    assert [d["index"] for d in data["events"]] == [d.index for d in placed.dots]
    assert data["lifelines"] == list(trace.lifelines)
    assert len(data["arrows"]) == len(placed.arrows)
    local, stores = trace.local_index(), trace.valuations()
    for item in data["events"]:
        event = trace.events[item["index"]]
        assert (item["id"], item["lifeline"], item["local"]) == (event.id, event.lifeline,
                                                                 local[item["index"]])
        assert item["store"] == dict(stores[item["index"]])
        if event.vc is not None:  # a recorded run's clocks agree with the computed ones
            assert item["vc"] == {name: n for name, n in event.vc.items() if n}
    choices = [e for e in trace.events if e.kind == "choice" and e.guard]
    assert set(data["explanations"]) == {e.id for e in choices}
    for event in choices:
        assert data["explanations"][event.id] == json.loads(json.dumps(
            explain(trace, event.id).to_json()))


def test_svg_has_one_ev_element_per_drawn_event(review):
    for max_rows in (300, 12):  # 12: folded acts and a window
        placed = layout(review, max_rows=max_rows)
        root = _svg(_html(review, max_rows=max_rows))
        assert sorted(_ids(root, "ev-")) == sorted(f"ev-{d.index}" for d in placed.dots)
        assert set(_ids(root, "msg-")) == {f"msg-{n}" for n in range(len(placed.arrows))}
        assert len(_ids(root, "lifeline-")) == len(review.lifelines)
        labelled = {f"label-{d.index}" for d in placed.dots if d.text or d.guard}
        assert set(_ids(root, "label-")) == labelled
        assert root.find(".//title") is None  # no native tooltips
        data = _block(_html(review, max_rows=max_rows), "cpl-view")
        if max_rows == 12:
            assert any(item["count"] > 1 and len(item["ids"]) == item["count"]
                       for item in data["events"])
            assert data["notes"]


def test_hostile_names_are_text(tmp_path):
    trace = hostile_trace()
    page = _html(trace)
    assert HOSTILE not in page
    assert page.count("<script") == page.count("</script>") == 3  # only the page's own
    assert page.count("<style") == 1 and page.count("<svg") == 1
    text = re.sub(r"'sha256-[A-Za-z0-9+/=]+'", "", page)  # trace text cannot spell '//' …
    assert "//" not in text
    assert not _loading_attributes(page)
    assert {tag for tag, _ in _tags(page)} <= SAFE_TAGS
    assert "<img" not in page and "<b>" not in page and "<i>" not in page
    assert _block(page, "cpl-trace") == json.loads(json.dumps(trace.to_dict()))
    data = _block(page, "cpl-view")
    assert data["lifelines"][0] == HOSTILE
    assert data["events"][0]["store"] == {"x": "<b>bold</b>"}
    root = _svg(page)  # the name, escaped, is the text of the lifeline's head
    head = next(g for g in root.iter("g") if g.get("id") == "lifeline-0")
    assert "".join(t.text or "" for t in head.iter("text")) == HOSTILE


def test_an_explanation_that_fails_is_shown_not_raised(monkeypatch):
    trace = Trace(["A"], events=[
        Event("a1", "A", "act", set={"x": 1}),
        Event("a2", "A", "choice", guard="odd(x)", outcome=True),  # no such predicate here
        Event("a3", "A", "choice", outcome=False),  # no guard recorded
        Event("a4", "A", "choice", guard="x == 1", outcome=True),
    ])
    data = _block(_html(trace), "cpl-view")
    assert set(data["explanations"]) == {"a2", "a4"}
    assert "odd" in data["explanations"]["a2"]["error"]
    assert data["explanations"]["a4"]["value"] is True
    monkeypatch.setattr(viewer, "MAX_EXPLAINED", 1)
    data = _block(_html(trace), "cpl-view")
    assert list(data["explanations"]) == ["a2"]
    assert any("1 of the 2 choices" in note for note in data["notes"])


# -------------------------------------------------------------- in a browser


class Chromium:
    """A headless Chromium driven over the DevTools protocol on a pipe.

    With ``--remote-debugging-pipe`` the browser reads commands on its fd 3 and
    writes replies and events on its fd 4, each a JSON message ended by a NUL
    byte: no port is opened.  Every wait has a deadline; ``close`` ends the
    browser's process group, which it was started in.
    """

    def __init__(self, binary: str, profile: str, log: str):
        commands, replies = os.pipe(), os.pipe()
        # the child's ends above fd 10, so moving them onto 3 and 4 cannot clobber each other
        theirs = (fcntl.fcntl(commands[0], fcntl.F_DUPFD_CLOEXEC, 10),
                  fcntl.fcntl(replies[1], fcntl.F_DUPFD_CLOEXEC, 10))
        os.close(commands[0])
        os.close(replies[1])
        self.write_fd, self.read_fd = commands[1], replies[0]
        self.log = log
        self.buffer = b""
        self.events: list[dict] = []
        self.next_id = 0

        def wire():  # in the child: dup2 clears close-on-exec, so 3 and 4 survive the exec
            os.dup2(theirs[0], 3)
            os.dup2(theirs[1], 4)

        try:
            with open(log, "wb") as err:
                self.process = subprocess.Popen(
                    [binary, "--headless", "--no-sandbox", "--disable-gpu",
                     "--remote-debugging-pipe", f"--user-data-dir={profile}", "--no-first-run",
                     "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                     "--disable-background-networking", "--disable-component-update",
                     "--window-size=1400,1000", "about:blank"],
                    stdin=subprocess.DEVNULL, stdout=err, stderr=err, close_fds=False,
                    preexec_fn=wire, start_new_session=True)
        finally:
            for fd in theirs:
                os.close(fd)

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"chromium did not answer in time; its log: {self._log_tail()}")
            ready, _, _ = select.select([self.read_fd], [], [], left)
            if ready:
                chunk = os.read(self.read_fd, 1 << 16)
                if not chunk:
                    raise ConnectionError(f"chromium closed the pipe; its log: {self._log_tail()}")
                self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def _log_tail(self) -> str:
        with open(self.log, "rb") as handle:
            return handle.read()[-800:].decode("utf-8", "replace")

    def call(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 5.0) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode("utf-8") + b"\0"
        while data:
            data = data[os.write(self.write_fd, data):]
        deadline = time.monotonic() + timeout
        while True:
            reply = self._message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str, timeout: float = 5.0) -> dict:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for event in self.events[seen:]:
                if event.get("method") == method and event.get("sessionId") == session:
                    self.events.remove(event)
                    return event
            seen = len(self.events)
            self.events.append(self._message(deadline))

    def open(self, url: str) -> str:
        """A new tab showing ``url``, loaded; its session id."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, timeout=15)["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": 1400, "height": 1000,
                  "deviceScaleFactor": 1, "mobile": False}, session)
        self.call("Page.navigate", {"url": url}, session)
        self.wait_for("Page.loadEventFired", session)
        return session

    def problems(self, session: str) -> list[str]:
        """Console errors, uncaught exceptions, error log entries and dialogs so far."""
        self.call("Runtime.evaluate", {"expression": "0"}, session)  # flush what is on its way
        found = []
        for event in self.events:
            if event.get("sessionId") != session:
                continue
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params["exceptionDetails"]
                found.append("exception: " + details.get("exception", {}).get(
                    "description", details.get("text", "")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                    for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                found.append("log: " + params["entry"].get("text", ""))
            elif method == "Page.javascriptDialogOpening":
                found.append("dialog: " + params.get("message", ""))
        return found

    def js(self, session: str, expression: str):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                           session)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def centre(self, session: str, element_id: str, scroll: bool = True) -> tuple[float, float]:
        where = self.js(session, f"""(function () {{
            var e = document.getElementById({json.dumps(element_id)});
            if (!e) return null;
            if ({json.dumps(scroll)}) e.scrollIntoView({{block: "nearest", inline: "nearest"}});
            var r = e.getBoundingClientRect();
            return [r.left + r.width / 2, r.top + r.height / 2]; }})()""")
        assert where is not None, f"no element {element_id}"
        return where[0], where[1]

    def hover(self, session: str, element_id: str) -> None:
        x, y = self.centre(session, element_id)
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session)

    def click(self, session: str, element_id: str | None = None, at=None) -> None:
        x, y = at if element_id is None else self.centre(session, element_id)
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y}, session)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y,
                      "button": "left", "clickCount": 1}, session)

    def key(self, session: str, key: str, code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": key, "code": key,
                      "windowsVirtualKeyCode": code}, session)

    def screenshot(self, session: str) -> bytes:
        import base64
        return base64.b64decode(self.call("Page.captureScreenshot", {"format": "png"},
                                          session)["data"])

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=2)
        except Exception:
            pass
        try:
            self.process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)
        finally:
            os.close(self.write_fd)
            os.close(self.read_fd)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (.ci/run installs it: apt-get install chromium)")
    folder = tmp_path_factory.mktemp("chromium")
    chromium = Chromium(CHROMIUM, str(folder / "profile"), str(folder / "log.txt"))
    try:
        yield chromium
    finally:
        chromium.close()


def _classes(browser, session, element_id) -> list[str]:
    return browser.js(session, f"Array.from(document.getElementById("
                               f"{json.dumps(element_id)}).classList)")


def _shown(browser, session, element_id) -> bool:
    return browser.js(session, f"getComputedStyle(document.getElementById("
                               f"{json.dumps(element_id)})).display") != "none"


def test_viewer_in_chromium(browser, fig2, tmp_path):
    path = tmp_path / "fig2.html"
    path.write_text(_html(fig2), encoding="utf-8")
    session = browser.open(path.as_uri())
    assert browser.problems(session) == []
    index = {event.id: n for n, event in enumerate(fig2.events)}

    # hover t1: its id, local index, vector clock and store
    browser.hover(session, f"ev-{index['t1']}")
    tip = browser.js(session, "document.getElementById('tip').hidden ? null : "
                              "document.getElementById('tip').innerText")
    assert tip is not None, "no tooltip on hover"
    for text in ("t1", "local index", "TestRunner 1", "Committer 0", 'status = "passed"',
                 'candidate = "c7"'):
        assert text in tip, (text, tip)
    # the id drawn beside an event is the event: hovering it shows the same facts
    browser.hover(session, f"id-{index['t2']}")
    tip = browser.js(session, "document.getElementById('tip').hidden ? null : "
                              "document.getElementById('tip').innerText")
    assert tip is not None and tip.startswith("t2"), tip

    # click the choice c3: the explanation, the greyed future, the rings
    browser.click(session, f"ev-{index['c3']}")
    panel = browser.js(session, "document.getElementById('explanation').innerText")
    found = explain(fig2, "c3").to_json()
    assert found["guard"] in panel
    for step in (found["explanation"], found["explanation"]["children"][0]):
        assert step["why"] in panel, (step["why"], panel)
    assert "set at t1, read here" in panel
    dim = {event.id for event in fig2.events
           if "dim" in _classes(browser, session, f"ev-{index[event.id]}")}
    assert dim == {"t3", "t4"}  # the failure is not in c3's causal past
    assert "dim" in _classes(browser, session, "msg-1")  # r2, in transit from t4
    assert "dim" not in _classes(browser, session, "msg-0")
    rings = browser.js(session, "Array.from(document.querySelectorAll('circle.ring'))"
                                ".map(function (c) { return c.getAttribute('data-event'); })")
    assert sorted(rings) == ["c3", "o1", "t2"]

    # hovering a source event in the explanation points at it in the chart
    browser.hover(session, "explanation")  # move off first
    browser.js(session, "Array.from(document.querySelectorAll('#explanation button.evref'))"
                        ".filter(function (b) { return b.textContent === 't2'; })[0].id = 'ref-t2'")
    browser.hover(session, "ref-t2")
    assert "pointed" in _classes(browser, session, f"ev-{index['t2']}")

    # Escape clears
    browser.key(session, "Escape", 27)
    assert browser.js(session, "document.querySelectorAll('#chart .dim, circle.ring').length") == 0
    assert browser.js(session, "document.getElementById('explanation').innerText") == ""

    # hide TestRunner: its head, line, events, labels and arrows go; the others stay
    browser.click(session, "show-lane-1")
    for element in ("lifeline-1", "line-1", f"ev-{index['t1']}", f"label-{index['t1']}",
                    f"id-{index['t1']}", f"ev-{index['t4']}", "msg-0", "msglabel-0", "msg-1"):
        assert not _shown(browser, session, element), element
    for element in ("lifeline-2", f"ev-{index['c3']}", "msg-2", "lifeline-0"):
        assert _shown(browser, session, element), element
    browser.click(session, "show-lane-1")
    assert _shown(browser, session, f"ev-{index['t1']}")

    assert browser.problems(session) == []
    browser.js(session, "console.error('probe')")  # the check above can see an error
    assert browser.problems(session) == ["console: probe"]


def test_hostile_page_runs_nothing(browser, tmp_path):
    trace = hostile_trace()
    path = tmp_path / "hostile.html"
    path.write_text(_html(trace), encoding="utf-8")
    session = browser.open(path.as_uri())
    assert browser.js(session, "typeof window.pwned") == "undefined"
    assert browser.js(session, "document.images.length") == 0
    assert browser.js(session, "document.scripts.length") == 3
    assert browser.js(session, "document.querySelector('#lifelines label').textContent") == \
        " " + HOSTILE
    browser.hover(session, "ev-0")
    assert '"<b>bold</b>"' in browser.js(session, "document.getElementById('tip').innerText")
    browser.click(session, "ev-3")
    assert "@import url(x)" in browser.js(session, "document.getElementById('event').innerText")
    assert browser.js(session, "typeof window.pwned") == "undefined"
    assert browser.problems(session) == []


def test_highlight_opens_with_the_event_chosen(browser, fig2, tmp_path):
    path = tmp_path / "fig2-c3.html"
    path.write_text(_html(fig2, highlight="c3"), encoding="utf-8")
    session = browser.open(path.as_uri())
    panel = browser.js(session, "document.getElementById('explanation').innerText")
    assert explain(fig2, "c3").to_json()["explanation"]["why"] in panel
    # hovering still works with a selection (and its rings) in place
    c3 = [event.id for event in fig2.events].index("c3")
    browser.hover(session, f"ev-{c3}")
    assert "c3" in browser.js(session, "document.getElementById('tip').innerText")
    assert browser.problems(session) == []


# Every ring the viewer drew, and whether the id beside its event (``id-N``) crosses it.
_IDS_UNDER_RINGS = """(function () {
    var hits = [];
    document.querySelectorAll('#chart svg circle.ring').forEach(function (c) {
        var cx = Number(c.getAttribute('cx')), cy = Number(c.getAttribute('cy'));
        var r = Number(c.getAttribute('r'));
        var label = c.ownerSVGElement.getElementById('id-' + c.getAttribute('data-event-index'));
        if (!label) return;
        var b = label.getBBox(), m = label.getCTM(), g = c.getCTM().inverse().multiply(m);
        var x0 = b.x * g.a + g.e, x1 = (b.x + b.width) * g.a + g.e;
        var y0 = b.y * g.d + g.f, y1 = (b.y + b.height) * g.d + g.f;
        var nx = Math.max(x0, Math.min(cx, x1)), ny = Math.max(y0, Math.min(cy, y1));
        if (Math.hypot(nx - cx, ny - cy) < r) hits.push(label.textContent);
    });
    return {rings: document.querySelectorAll('#chart svg circle.ring').length, hits: hits};
})()"""


def test_an_id_moves_clear_of_the_ring_the_viewer_draws(browser, review, tmp_path):
    """An id is placed just clear of its dot; a ring the viewer adds on a click must not
    sit on it (docs/images/viewer.png showed 'Orchestrator' with '.8' under the ring)."""
    path = tmp_path / "review.html"
    path.write_text(_html(review), encoding="utf-8")
    session = browser.open(path.as_uri())
    choice = next(n for n, event in enumerate(review.events)
                  if event.kind == "choice" and event.lifeline == "Committer")
    browser.click(session, f"ev-{choice}")
    seen = browser.js(session, _IDS_UNDER_RINGS)
    assert seen["rings"] > 1 and seen["hits"] == []
    assert browser.problems(session) == []


LONG_GUARD = ("!strict || @Researcher(check != disputed S check == confirmed) && "
              "@Reviewer(verdict == approve S verdict == approve) && @Editor.ready == true && "
              "@Researcher.source != none")

# Where the panel and the drawing are, and every text of the drawing that, scrolled into the
# middle of its pane, is not what the browser shows at that point (the panel covers it).
_COVERED = """(function () {
    var chart = document.getElementById('chart'), panel = document.getElementById('panel');
    function box(e) { var r = e.getBoundingClientRect();
                      return [r.left, r.top, r.right, r.bottom]; }
    var c = box(chart), p = box(panel), covered = [];
    document.querySelectorAll('#chart svg text').forEach(function (t) {
        t.scrollIntoView({block: 'center', inline: 'center'});
        var r = t.getBoundingClientRect();
        var hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        if (!hit || !chart.contains(hit)) covered.push(t.textContent);
    });
    return {chart: c, panel: p, covered: covered,
            overlap: c[0] < p[2] && p[0] < c[2] && c[1] < p[3] && p[1] < c[3]}; })()"""


def long_guard_trace() -> Trace:
    """Four lifelines and a choice whose guard is far longer than a column is wide."""
    return Trace(["Researcher", "Reviewer", "Editor", "Publisher"], events=[
        Event("r1", "Researcher", "act", set={"check": "confirmed"}),
        Event("r2", "Researcher", "send", to="Publisher", msg="m1", label="fact",
              payload={"check": "confirmed"}),
        Event("v1", "Reviewer", "send", to="Publisher", msg="m2", label="review",
              payload={"verdict": "approve"}),
        Event("p1", "Publisher", "recv", msg="m1"),
        Event("p2", "Publisher", "recv", msg="m2"),
        Event("p3", "Publisher", "choice", guard=LONG_GUARD, outcome=True, label="publish?"),
    ], vars=["check", "verdict", "ready", "source", "strict"],
        symbols=["disputed", "confirmed", "approve", "none"])


@pytest.mark.parametrize("width", [1400, 1000, 600])
def test_the_panel_never_covers_the_drawing(browser, tmp_path, width):
    """At a wide, a middling and a narrow window, with a long guard: the panel's box and the
    drawing's pane do not meet, and every text of the drawing, scrolled to the middle of its
    pane, is what the browser shows there."""
    path = tmp_path / "long.html"
    path.write_text(_html(long_guard_trace()), encoding="utf-8")
    session = browser.open(path.as_uri())
    browser.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": 700,
                 "deviceScaleFactor": 1, "mobile": False}, session)
    browser.click(session, "ev-5")  # the choice: its explanation fills the panel
    assert LONG_GUARD.split(" && ")[0] in browser.js(
        session, "document.getElementById('explanation').innerText")
    found = browser.js(session, _COVERED)
    assert not found["overlap"], found
    assert found["covered"] == [], found
    assert found["chart"][2] - found["chart"][0] >= width / 2 or width < 760, found
    # the check can fail: a panel laid over the drawing is caught
    browser.js(session, "var s = document.getElementById('panel').style; s.position = 'fixed';"
                        " s.right = '0'; s.top = '0'; s.bottom = '0'; s.zIndex = '5'; 0")
    found = browser.js(session, _COVERED)
    assert found["overlap"] and found["covered"], found
    assert browser.problems(session) == []
