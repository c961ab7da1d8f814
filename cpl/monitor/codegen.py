"""Algorithms 1 and 2 of the CPL paper, generated as straight-line Python per lifeline.

For lifeline A, ``generate_monitor`` writes a factory ``monitor(init)`` that
holds A's state (Definition 4: ``vc``, ``views``, ``varviews``, ``store``) in
closure cells and returns four event steps, ``act``, ``send``, ``receive`` and
``choice``.  Each step is Algorithm 1 — a receive first copies B's entries
where the message is strictly ahead on B — followed by Algorithm 2 inlined:
every slot of A computed bottom-up, one line per slot, commented with its
subformula:

    atom α           read the store / the variable views; an unset term makes it false
    Y θ              y_θ, θ's value saved before this event (0 before A's first event)
    @B(θ), B ≠ A     bit k of views[b]         (views[b] is 0 while no B-event is visible)
    θ1 S θ2          θ2 or (θ1 and v_self), v_self still holding the previous value
    ! && ||          not / and / or on values already computed

Every slot is computed at every event (atoms and predicates included); the
connectives short-circuit only over values already at hand.  A's own view
(a bitmask of its exported slots) and variable view are updated as the paper
says.  ``vc``, ``views`` and ``varviews`` have one entry per lifeline in
``carried`` (b is B's position there): a lifeline no guard reads has none, and
one that is not carried does not count its own events.  ``SlotProgram.source``
is the generated text, for reading beside the
paper (``cpl check GUARD --monitor A`` prints it), and is registered with
``linecache`` so tracebacks and debuggers show its lines.  Per-event costs were
measured in bench/monitor*.py, which is why the own clock entry is a cell of
its own and the store is updated with ``|=``.

Names are data, never code: lifelines, variables, symbols, predicates and
values come from guards, traces and choreographies, so they reach the source
only as indices, as ``repr`` of plain str/int/bool/None/finite float values, or
as names bound in the namespace; comments quote them escaped (``quoting``).
``writer`` writes the text, one method per kind of slot and per part of a step.
"""

from __future__ import annotations

import itertools
import linecache
import weakref

from .writer import MonitorWriter

_modules = itertools.count(1)  # one linecache file name per generated module


def generate_monitor(lifeline, index, slots, slot_of, roots, positions, shipped, exported,
                     carried, predicates):
    """Return (source, factory): ``factory(init)`` builds lifeline ``index``'s monitor state
    and returns its event steps ``(act, send, receive, choice, values, views, varviews, store)``.

    ``positions`` maps each lifeline to its index in ``shipped``.  ``lifeline`` and
    ``index`` None: the one monitor of every lifeline that no guard reads or owns (they
    all compute the same, so they share it; ``compile``).  Only what this lifeline reads
    is looked up, so the cost is in its slots and ``carried``, not in all lifelines.
    """
    writer = MonitorWriter(lifeline, index, slots, slot_of, roots, positions, shipped,
                           exported, carried, predicates)
    source = writer.source()
    # Only indices in the file name: the name of the lifeline is anybody's text.
    filename = f"<cpl monitor {next(_modules)}: {writer.whose}>"
    exec(compile(source, filename, "exec"), writer.namespace)
    factory = writer.namespace["monitor"]
    _register_source(filename, source, factory)
    return source, factory


def slot_cell(values, slot: int):
    """The closure cell that holds slot ``slot`` (one ``values()`` returns) of the monitor
    whose ``values`` this is: its ``cell_contents`` is the slot's value at the latest event.
    ``cpl eval`` reads one slot per event, and ``values()`` builds a dict of every kept
    slot each call (bench/eval_trace.py)."""
    return values.__closure__[values.__code__.co_freevars.index(f"v{slot}")]


def _register_source(filename: str, source: str, owner) -> None:
    """Let tracebacks, ``inspect`` and pdb show the generated lines, for as long as
    ``owner`` (the factory) lives: a process that compiles many monitors keeps no
    source it no longer runs."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(owner, linecache.cache.pop, filename, None)
