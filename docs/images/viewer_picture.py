"""A screenshot of the HTML viewer after a click on a merge decision.

    python docs/images/viewer_picture.py        # from the repo root; writes docs/images/viewer.png

The page is what ``cpl render --format html`` writes for a simulated code
review (seed 3, two rounds), opened in headless Chromium and driven by the
same DevTools-over-a-pipe client the viewer's test uses.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from choreo import load_one
from choreo.execution import prepare
from choreo.execution import Simulator
from cpl.view import render

sys.path.insert(0, "tests")
from test_view_html import CHROMIUM, Chromium  # noqa: E402 - the test's client, not a copy

OUT = Path("docs/images/viewer.png")


def main() -> int:
    if CHROMIUM is None:
        print("viewer_picture.py: chromium is not installed", file=sys.stderr)
        return 1
    plan = prepare(load_one("examples/code_review.py", None))
    trace = Simulator.of(plan).run(seed=3, values=plan.inputs(["rounds=2"])).trace
    index = {event.id: n for n, event in enumerate(trace.events)}
    with tempfile.TemporaryDirectory() as work:
        page = Path(work) / "review.html"
        page.write_bytes(render(trace, "html"))
        browser = Chromium(CHROMIUM, f"{work}/profile", f"{work}/log.txt")
        try:
            session = browser.open(page.as_uri())
            browser.call("Emulation.setDeviceMetricsOverride", {
                "width": 1680, "height": 1000, "deviceScaleFactor": 1, "mobile": False}, session)
            browser.click(session, f"ev-{index['Committer.4']}")
            browser.call("Input.dispatchMouseEvent",  # off the chart: no tooltip in the picture
                         {"type": "mouseMoved", "x": 1200, "y": 20}, session)
            problems = browser.problems(session)
            if problems:
                print(f"viewer_picture.py: the page reported {problems}", file=sys.stderr)
                return 1
            OUT.write_bytes(browser.screenshot(session))
        finally:
            browser.close()
    print(f"{OUT}: code_review seed 3, Committer.4 clicked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
