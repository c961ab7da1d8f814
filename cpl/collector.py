"""Pausing Python's cyclic garbage collector around bulk work that builds no cycles."""

from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def collector_paused():
    """Pause the cyclic GC while a large acyclic structure is built; restore its state.

    Every few hundred new objects the collector runs, and now and then it walks
    every tracked object: loading a 200,000-event trace (a million small dicts,
    events and strings) or collecting one value per event spent about a third of
    its time there (bench/eval_trace.py).  Trace documents, events and results
    hold no reference cycles, so there is nothing for the collector to find.

    Re-enabling alone only defers the walk: every object built in the pause is
    still in the youngest generation, and the next allocation's collection
    walks them all (0.05 s after a 200,000-event ``evaluate_trace``, bench/eval_trace.py).
    So they are moved to the oldest generation first (``freeze`` + ``unfreeze``:
    list splices, no walk), where only the collector's rare full collections
    look; cycles among them, if any, are still found there.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.unfreeze()
            gc.enable()
