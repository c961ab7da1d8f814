"""One lifeline's monitor: Algorithm 1 of the CPL paper (event update and view propagation).

State (the paper's Definition 4), for lifeline A:

    vc        vector clock: vc[B] = how many B-events are in A's causal past
    views     views[B] = bitmask of the subformulas B exports, at the latest visible B-event
    varviews  varviews[B] = the variables B exports (``@B.x``), at that event
    store     σ_A, the current local store
    values    the slot values at A's latest event (``old`` during the next one)

A receive copies B's entries from the message exactly when the message is
strictly ahead on B, then merges the clocks; every event then counts itself,
applies its store update and evaluates all slots bottom-up (``codegen``).
Entries for B are meaningful only while vc[B] > 0; before that they are 0 /
UNSET, which is what Algorithm 2 reads as "no B-event visible".
"""

from __future__ import annotations

from typing import Mapping

from .codegen import UNSET
from .compile import Program
from .metadata import Metadata


class Monitor:
    __slots__ = ("program", "lifeline", "index", "vc", "views", "varviews", "store", "values",
                 "_evaluate", "_slot_of", "_others")

    def __init__(self, program: Program, lifeline: str, init: Mapping | None = None):
        local = program.local(lifeline)
        n = len(program.lifelines)
        self.program = program
        self.lifeline = lifeline
        self.index = local.index
        self.vc = [0] * n
        self.views = [0] * n
        self.varviews = [(UNSET,) * len(e.variables) for e in program.exports]
        self.store = dict(init or {})
        self.values = [0] * len(local.slots)
        self._evaluate = local.evaluate
        self._slot_of = local.slot_of
        self._others = tuple(b for b in range(n) if b != self.index)

    # ---- Algorithm 1, one method per event kind

    def act(self, updates: Mapping | None = None) -> None:
        """A local action; ``updates`` are the variables it assigns."""
        if updates:
            self.store.update(updates)
        self._count_and_evaluate()

    def send(self) -> Metadata:
        """A send event: returns what the message carries (clock and views after it)."""
        self._count_and_evaluate()
        return Metadata(tuple(self.vc), tuple(self.views), tuple(self.varviews))

    def receive(self, message: Metadata, updates: Mapping | None = None) -> None:
        """A receive event: merge what the message knows, then count and evaluate."""
        vc, incoming = self.vc, message.vc
        for b in self._others:
            if incoming[b] > vc[b]:  # the message is strictly ahead on B: copy B's entries
                vc[b] = incoming[b]
                self.views[b] = message.views[b]
                self.varviews[b] = message.vars[b]
        if updates:
            self.store.update(updates)
        self._count_and_evaluate()

    def choice(self) -> None:
        """A decision event: the store is unchanged; read guards with ``value``."""
        self._count_and_evaluate()

    def _count_and_evaluate(self) -> None:
        self.vc[self.index] += 1
        self.values = self._evaluate(self.store, self.values, self.views, self.varviews)

    # ---- reading results

    def value(self, formula) -> bool:
        """The value of a compiled (primitive) formula at this lifeline's latest event."""
        return bool(self.values[self._slot_of[formula]])

    def slot(self, formula) -> int:
        """The slot of ``formula`` here, for reading ``values`` in a hot loop."""
        return self._slot_of[formula]
