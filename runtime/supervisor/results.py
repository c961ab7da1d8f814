"""What a run over processes reports: each lifeline's last values, as its trace has them.

A lifeline's last report to the supervisor may be older than its log (it was
killed, or its report was on the way when the run stopped), so the results
``cpl run`` prints and the trace's ``meta.results`` are read from the events
the merge writes: the header's ``init`` store updated by every event's
``set`` (trace.md), the variables each lifeline reports picked from it.  What
is printed is then what the trace says, and ``cpl merge`` rebuilding a trace
reports the same way.
"""

from __future__ import annotations


class LastValues:
    """Each lifeline's store as the events seen so far leave it; ``reported`` names the
    variables a lifeline reports (absent or empty: its whole store, as
    ``Choreography.reported``)."""

    def __init__(self, lifelines, init: dict | None, reported: dict | None = None):
        self._stores = {name: dict((init or {}).get(name) or {}) for name in lifelines}
        self._reported = {name: tuple(names) for name, names in (reported or {}).items()}

    def see(self, event) -> None:
        """One event of the trace (an ``Event``)."""
        if event.set:
            store = self._stores.get(event.lifeline)
            if store is not None:
                store.update(event.set)

    def seeing(self, write):
        """``write``, each event seen here first: the merge's writer of a run's trace."""
        def both(event) -> None:
            write(event)  # first: an event the trace refuses is not seen either
            self.see(event)
        return both

    def results(self) -> dict[str, dict]:
        return {name: {x: store[x] for x in self._reported.get(name) or tuple(store)
                       if x in store}
                for name, store in self._stores.items()}
