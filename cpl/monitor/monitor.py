"""One lifeline's monitor: Algorithm 1 of the CPL paper (event update and view propagation).

State (the paper's Definition 4), for lifeline A, with one entry per lifeline B
in ``Program.carried`` (those some guard reads; B's entries are at B's position
there, and a lifeline nobody reads has none, and costs no byte on the wire):

    vc        vector clock: vc[B] = how many B-events are in A's causal past
    views     views[B] = bitmask of the subformulas B exports, at the latest visible B-event
    varviews  varviews[B] = the variables B exports (``@B.x``), at that event
    store     σ_A, the current local store
    values    the slot values at A's latest event (the ``old`` of the next one)

Every event of A:

    receive only:  for each carried B ≠ A where the message is strictly ahead
                   (μ.vc[B] > vc[B]): copy views[B] and varviews[B] from the message,
                   vc[B] ← μ.vc[B]
    act/receive:   apply the event's store update
    every event:   vc[A] += 1 if A is carried; evaluate all slots bottom-up (Algorithm 2),
                   Y and S reading the previous local values; set views[A]
    send only:     the message carries (vc, views, varviews)

A lifeline that is not carried still keeps and forwards the carried entries it
has seen: a guard at C may learn of an A-event only through it.  Entries of
lifelines left out are exactly those no guard can read, so leaving them out
changes no value (the property tests check it against the unpruned monitor,
which carries every lifeline).  The trace's full vector clocks are the
recorder's business (``cpl.trace.clocks``), not the monitor's.

Entries for B mean something only while vc[B] > 0; before that they are 0 /
UNSET, which Algorithm 2 reads as "no B-event visible".  The steps are
generated per lifeline by ``codegen`` (``Program.local(A).source`` shows
them); this class holds the state and gives them names.
"""

from __future__ import annotations

from typing import Mapping

from .codegen import slot_cell
from .compile import Program
from .metadata import Metadata


class Monitor:
    """``act``, ``send``, ``receive``, ``choice`` are the four event kinds."""

    __slots__ = ("program", "lifeline", "index", "act", "send", "receive", "choice",
                 "_values", "views", "varviews", "store", "_slot_of", "_state")

    def __init__(self, program: Program, lifeline: str, init: Mapping | None = None):
        local = program.local(lifeline)
        self.program = program
        self.lifeline = lifeline
        self.index = local.index
        self._slot_of = local.slot_of
        (self.act, self.send, self.receive, self.choice, self._values,
         self.views, self.varviews, self.store) = local.factory(init or {})
        self._state = None  # the cells an event changes, found by the first saved()

    # Signatures of the generated steps, for the reader:
    #   act(updates: Mapping | None = None) -> None
    #   send() -> Metadata
    #   receive(message: Metadata, updates: Mapping | None = None) -> None
    #   choice() -> None

    def value(self, formula) -> bool:
        """A compiled guard's (primitive formula's) value at this lifeline's latest event."""
        return bool(self._values()[self._slot_of[formula]])

    def slot(self, formula) -> int:
        """Where a compiled guard's value is in :attr:`values`: a driver that reads the same
        guard at every decision looks its slot up once (hashing a formula costs per call)."""
        return self._slot_of[formula]

    def cell(self, slot: int):
        """The closure cell holding slot ``slot`` (of :attr:`values`): its ``cell_contents``
        is the slot's value at the latest event, read without building :attr:`values`'s
        dict (a driver reads one guard per decision)."""
        return slot_cell(self._values, slot)

    def saved(self) -> tuple:
        """Everything an event changes, copied: ``restore(saved)`` puts it back, so a caller
        whose own part of an event fails after the monitor's step (an agent whose log
        cannot take the event) leaves the monitor as it was before the event."""
        if self._state is None:
            self._state = _state_cells(self)
        cells, lists = self._state
        return [cell.cell_contents for cell in cells], [x[:] for x in lists], self.store.copy()

    def restore(self, saved: tuple) -> None:
        values, copies, store = saved
        cells, lists = self._state
        for cell, value in zip(cells, values):
            cell.cell_contents = value
        for kept, copy in zip(lists, copies):
            kept[:] = copy
        self.store.clear()
        self.store.update(store)

    @property
    def values(self) -> dict[int, int]:
        """Slot → value at the latest event, for the slots that outlive an event."""
        return self._values()


def _state_cells(monitor: Monitor) -> tuple[list, list]:
    """The closure cells the generated steps rebind (the own clock entry, the slot values)
    and the lists they change in place (clock, views, variable views)."""
    cells = {}
    for step in (monitor.act, monitor.send, monitor.receive, monitor.choice):
        cells.update(zip(step.__code__.co_freevars, step.__closure__ or ()))
    rebound = [cell for name, cell in cells.items()
               if name == "own" or name[:1] == "v" and name[1:].isdigit()]
    lists = [cells[name].cell_contents for name in ("vc", "views", "varviews") if name in cells]
    return rebound, lists


__all__ = ["Monitor", "Metadata"]
