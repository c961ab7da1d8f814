"""No label sits on a crossing arrow or on other text: counted from the SVG we write.

The SVG of the flagship and of the five anomaly examples (``cpl.view.svg``, no
graphviz) is parsed back; each line of text becomes the box it covers by the
same width estimate the placement uses (``cpl.view.text.width``: 0.58 em a
character; a line is 1.25 × the font size tall, its baseline 0.95 × the size
below the top) and each arrow the segment of its ``<path>``.  A label (``label-N``,
``msglabel-N``) must cross no arrow but its own and meet no other text, and an event's
id (``id-N``, drawn by default where it fits) no arrow and no other text.  Also with
arrow labels ~60 characters long (message values) and with a 200-character guard, and
with every id drawn (``--ids``); and a deliberately careless placement shows the count
can fail.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs
import pytest

from choreo import load_one
from choreo.execution.plan import prepare
from choreo.execution.simulate import Simulator
from cpl.view import layout
from cpl.view import labels
from cpl.view import scene as scenes
from cpl.view.fits import ID
from cpl.view.marks import Group, Text
from cpl.view.points import COLUMN
from cpl.view.text import text_box, width
from cpl.view.svg import write

SVG = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parent.parent
ANOMALIES = sorted((ROOT / "examples" / "anomalies").glob("*.py"))
LONG_GUARD = ("@TestRunner(status == passed && candidate == @Committer.candidate) && "
              "@Security(verdict != critical S verdict == cleared) && !stale(@Orchestrator.round)"
              " && @Reviewer(approvals >= 2 && blocking == 0) || override == true")


def _review(seed: int):
    plan = prepare(load_one("examples/code_review.py", None))
    return Simulator.of(plan).run(seed=seed, values=plan.inputs(["rounds=2"])).trace


def _anomaly(path: Path, variant: str, seed: int = 1):
    plan = prepare(load_one(str(path), variant))
    return Simulator.of(plan).run(seed=seed, values=plan.inputs([])).trace


def _box(text: ET.Element) -> tuple[float, float, float, float]:
    size, line = float(text.get("font-size")), text.text or ""
    x, y, w = float(text.get("x")), float(text.get("y")), width(line, size)
    left = {"start": x, "end": x - w, "middle": x - w / 2}[text.get("text-anchor", "start")]
    top = y - 0.95 * size
    return left, top, left + w, top + 1.25 * size


def _segment(path: ET.Element) -> tuple[float, float, float, float]:
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", path.get("d"))]
    assert len(numbers) == 4, path.get("d")
    return tuple(numbers)


def _crosses(box, line) -> bool:
    """Whether the segment passes through the box's inside (Liang–Barsky clipping)."""
    (left, top, right, bottom), (x0, y0, x1, y1) = box, line
    low, high = 0.0, 1.0
    for start, delta, lo, hi in ((x0, x1 - x0, left, right), (y0, y1 - y0, top, bottom)):
        if delta == 0:
            if not lo < start < hi:
                return False
            continue
        a, b = (lo - start) / delta, (hi - start) / delta
        low, high = max(low, min(a, b)), min(high, max(a, b))
        if low >= high:
            return False
    return True


def _meet(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def overlaps(svg: bytes) -> list[str]:
    """Each label that crosses an arrow other than its own, or meets other text."""
    root = ET.fromstring(svg)
    texts, arrows = [], {}
    for group in root.iter(f"{SVG}g"):
        ident = group.get("id") or ""
        if re.fullmatch(r"msg-\d+", ident):
            arrows[ident] = [_segment(p) for p in group.iter(f"{SVG}path")]
        for text in group.findall(f"{SVG}text"):
            texts.append((ident, text.text, _box(text)))
    found = []
    for n, (ident, line, box) in enumerate(texts):
        if not ident.startswith(("label-", "msglabel-", "id-")):
            continue
        own = "msg-" + ident[len("msglabel-"):] if ident.startswith("msglabel-") else None
        for arrow, segments in arrows.items():
            if arrow != own and any(_crosses(box, s) for s in segments):
                found.append(f"{ident} {line!r} crosses {arrow}")
        for m, (other, other_line, other_box) in enumerate(texts):
            if m != n and (other != ident or m < n) and _meet(box, other_box):
                if other == ident and abs(box[1] - other_box[1]) > 0.5:
                    continue  # the lines of one label stack: they touch, never overlap
                found.append(f"{ident} {line!r} meets {other} {other_line!r}")
    return found


def _longer_arrows(placed):
    """Every arrow's label 60 characters long, as with message values on it."""
    values = '(candidate={n}, status="passed", round=2, reviewer="someone")'
    return attrs.evolve(placed, arrows=tuple(
        attrs.evolve(a, text=(a.text + values.format(n=n))[:60])
        for n, a in enumerate(placed.arrows)))


def _long_guards(placed):
    return attrs.evolve(placed, dots=tuple(
        attrs.evolve(d, guard=LONG_GUARD) if d.kind == "choice" else d for d in placed.dots))


def _traces():
    yield "code_review seed 1", _review(1)
    yield "code_review seed 3", _review(3)
    for path in ANOMALIES:
        for variant in ("guarded", "unguarded"):
            yield f"{path.stem} {variant}", _anomaly(path, variant)


TRACES = list(_traces())


@pytest.mark.parametrize("change", [None, _longer_arrows, _long_guards])
@pytest.mark.parametrize("name, trace", TRACES, ids=[name for name, _ in TRACES])
def test_no_label_on_a_crossing_arrow_or_on_other_text(name, trace, change):
    placed = layout(trace)
    if change is not None:
        placed = change(placed)
    svg = write(scenes.scene(placed)).encode("utf-8")
    assert re.search(rb'id="msglabel-\d+"', svg) or not placed.arrows
    assert re.search(rb'<g id="id-\d+"', svg)  # ids are drawn by default
    assert overlaps(svg) == []


@pytest.mark.parametrize("name, trace", TRACES, ids=[name for name, _ in TRACES])
def test_every_id_drawn_moves_no_label(name, trace):
    """``--ids``: every id, and where no spot is free it goes where it covers least —
    rows are not pulled apart for it, so the labels still cover nothing, and few ids do."""
    placed = layout(trace, ids=True)
    svg = write(scenes.scene(placed)).encode("utf-8")
    assert len(re.findall(rb'<g id="id-\d+"', svg)) == len(placed.dots)
    found = overlaps(svg)
    assert [f for f in found if not re.match(r"id-\d+ |.* meets id-\d+ ", f)] == []
    assert len(found) <= 3, found


def test_the_count_sees_an_id_on_an_arrow():
    """An id drawn over an arrow is counted: the check covers ids, not only labels."""
    placed = layout(_review(1))
    drawn = scenes.scene(placed)
    arrow = next(g for g in drawn.groups if g.id.startswith("msg-")).items[0]
    x, y = (arrow.x0 + arrow.x1) / 2, (arrow.y0 + arrow.y1) / 2
    box = text_box(["Committer.99"], ID, x, y, "middle")
    stray = Group("id-999", "node", (Text(x, box, ("Committer.99",), ID, anchor="middle"),))
    svg = write(attrs.evolve(drawn, groups=drawn.groups + (stray,))).encode("utf-8")
    assert any(found.startswith("id-999 'Committer.99' crosses msg-") for found in overlaps(svg))


def test_long_texts_are_wrapped_whole():
    assert len(LONG_GUARD) >= 200
    placed = _long_guards(_longer_arrows(layout(_review(3))))
    root = ET.fromstring(write(scenes.scene(placed)))
    choice = next(d for d in placed.dots if d.kind == "choice")
    label = next(g for g in root.iter(f"{SVG}g") if g.get("id") == f"label-{choice.index}")
    lines = [t.text for t in label.iter(f"{SVG}text")]
    assert len(lines) > 4
    assert " ".join(lines[1:]).replace("  ", " ") == LONG_GUARD  # never cut, broken at spaces
    assert all(width(line, 9) <= COLUMN - 24 for line in lines)


def test_the_count_fails_on_a_careless_placement(monkeypatch):
    """Labels always at their first spot (no check): the count finds what that covers."""
    monkeypatch.setattr(labels, "choose", lambda spots, taken, own, final: next(iter(spots)))
    placed = _longer_arrows(layout(_review(3)))
    assert len(overlaps(write(scenes.scene(placed)).encode("utf-8"))) > 5
