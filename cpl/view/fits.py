"""Text drawn where it fits once every label is placed: event ids, and the values that
acts and receives set.

Neither moves anything: ``cpl.view.scene`` pulls rows apart until every label has a
free spot, and doing that for these too would move the arrows those labels were placed
clear of (and, on a busy run, pull rows apart for ever).  So each goes in the first of
a few spots beside its event that covers no text and no arrow (``taken.Taken``) and
keeps clear of the lifelines, or is left out — the HTML viewer shows both on hover.
With ``--ids`` every id is drawn: where no spot is free, in the one that covers least.
"""

from __future__ import annotations

from .labels import choose
from .taken import Taken
from .text import PAD, Box, line_height, text_box, width, wrap

ID = 7.5  # an event id's text size
ID_CHARS = 40  # an id longer than this does not fit by default (--ids draws it, wrapped)


def value_spot(lines: list[str], size: float, x: float, y: float, off: float,
               both_sides: bool, old: Box | None, taken: Taken) -> Box | None:
    """Where a label with its values (``lines``) fits beside its event at (``x``, ``y``):
    the side of ``old`` (the label placed without them, taken back here) first, then the
    other, then half a line lower or higher; None, ``old`` kept, if nowhere."""
    h = line_height(size) * len(lines)
    sides = [(x + off, "start"), (x - off, "end")][:1 + both_sides]
    if old is not None and old.right < x:
        sides.reverse()
    spots = [text_box(lines, size, side, y + dy, anchor)
             for dy in (0.0, h / 2 + 2, -(h / 2 + 2)) for side, anchor in sides]
    if old is not None:
        taken.remove(old)
    spot = next((s for s in spots if taken.free(s)), None)
    if spot is None and old is not None:
        taken.add(old)
    return spot


def id_spot(ident: str, x: float, y: float, off: float, label: tuple | None, taken: Taken,
            ids: bool | None, lanes: list[float], edge: float,
            room: float) -> tuple[Box, list[str]] | None:
    """Where the id of the event at (``x``, ``y``) goes — ``off`` clear of its dot, its
    label (box, lines, size) placed — or None; ``lanes``: every lifeline's x, ``edge``:
    the canvas's least x, ``room``: the widest an id may be before it wraps."""
    if ids is None and len(ident) > ID_CHARS:
        return None
    lines = wrap(ident, ID, room, most=8)
    places = _places(x, y, off, lines, label, far=ids is True)
    kept = (place for place in places if _clear(place[0], x, lanes, edge))
    if not ids:  # the first free place, looked at only as far as needed
        return choose(kept, taken, None, False)
    places = list(_places(x, y, off, lines, label, far=True))
    kept = [place for place in places if _clear(place[0], x, lanes, edge)]
    # --ids: drawn even where no place keeps clear of the lifelines
    return choose(kept or places[:1], taken, None, True)


def _places(x: float, y: float, off: float, lines: list[str], label, far: bool):
    """Beside the dot — left, right — then above or below it on either side (the side its
    arrow does not leave or come in by), then beside the first line of its label, on the
    side away from the dot; with ``far`` (``--ids``), also a line above or below it."""
    h = line_height(ID) * len(lines)
    yield text_box(lines, ID, x - off, y, "end"), lines
    yield text_box(lines, ID, x + off, y, "start"), lines
    for dy in (-(h / 2 + 2.5), h / 2 + 2.5):
        yield text_box(lines, ID, x - off + 2, y + dy, "end"), lines
        yield text_box(lines, ID, x + off - 2, y + dy, "start"), lines
    if label is not None:
        box, words, size = label
        first = box.top + line_height(size) / 2
        if box.right < x:
            yield text_box(lines, ID, box.left - PAD - 2, first, "end"), lines
        else:
            yield text_box(lines, ID, box.left + width(words[0], size) + PAD + 3, first,
                           "start"), lines
    if far:
        for dy in (-(h * 1.5 + 5), h * 1.5 + 5):
            yield text_box(lines, ID, x - off + 4, y + dy, "end"), lines
            yield text_box(lines, ID, x + off - 4, y + dy, "start"), lines


def _clear(box: Box, x: float, lanes: list[float], edge: float) -> bool:
    """Whether ``box`` is inside the canvas, off its own lifeline (at ``x``) and 12 points
    clear of the others' lines and the dots on them (dots are not in ``Taken``)."""
    if box.left < edge or box.left < x < box.right:
        return False
    return all(not box.left - 12 < lane < box.right + 12 for lane in lanes if lane != x)


__all__ = ["ID", "ID_CHARS", "id_spot", "value_spot"]
