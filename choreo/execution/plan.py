"""Preparing a choreography to run — once — for every driver.

Validating, projecting and compiling the guards into monitors (generating
and ``exec``-ing their code) costs several whole runs and depends neither on
the seed nor on the inputs.  :func:`prepare` does it once and returns a
:class:`Plan`; the simulator, a lifeline process and the tests all build
their :class:`~choreo.execution.runner.Runner` objects from the same plan, so there
is one way a lifeline is set up, whoever drives it.
"""

from __future__ import annotations

import random

import attrs

from cpl.monitor import OwnedFormula, Program, compile_guards
from cpl.lang import application, named_predicates
from choreo.authoring import ChoreographyError, initial_stores, parse_args
from choreo.analysis import Projection, validate

from .runner import Runner


@attrs.frozen
class Plan:
    """A valid choreography, its projection and its compiled decision guards."""

    choreography: object = attrs.field(eq=False, repr=False)
    projection: Projection = attrs.field(repr=False)
    monitors: Program = attrs.field(eq=False, repr=False)  # every decision's guard, compiled
    symbols: tuple[str, ...]
    predicates: tuple[str, ...] = ()  # the application predicates the guards call
    # lifeline -> what its every Runner derives from the plan alike (choreo.execution.runner): built
    # by the first, so a sweep of runs does not redo it per run (bench/simulate_runs.py).
    shared: dict = attrs.field(factory=dict, eq=False, repr=False)

    @property
    def name(self) -> str:
        return self.choreography.name

    @property
    def lifelines(self) -> tuple[str, ...]:
        return self.projection.lifelines

    def inputs(self, args=(), values: dict | None = None) -> dict:
        """Every input's value from ``"key=value"`` texts and/or typed ``values``."""
        return parse_args(self.choreography, args, values)

    def stores(self, inputs: dict) -> dict[str, dict]:
        """Each lifeline's store before its first event."""
        return initial_stores(self.choreography, inputs)

    def header(self, inputs: dict) -> dict:
        """The trace's header: what a ``cpl-msc/1`` document says before its events.  Its
        ``predicates`` tell an offline re-check which predicates to load (``--predicates``)."""
        return {"lifelines": self.lifelines, "init": self.stores(inputs),
                "vars": tuple(self.choreography.variables), "symbols": self.symbols,
                "predicates": self.predicates}

    def runner(self, lifeline: str, store: dict, seed, *, record: bool = True, clocks=None):
        """``lifeline``'s engine from its initial ``store``; actions get ``f"{seed}:{lifeline}"``.
        ``clocks`` (a ``cpl.trace.clocks.Clocks`` shared by a run's runners) stamps each
        event's vc."""
        return Runner(self, lifeline, store, random.Random(f"{seed}:{lifeline}"), record=record,
                      clocks=clocks)


def prepare(choreography, projection: Projection | None = None) -> Plan:
    """Validate (unless a projection is given), project and compile the guards."""
    if projection is None:
        report = validate(choreography)
        if not report.ok:
            raise ChoreographyError.many(report.errors)
        projection = report.projection
    guards = [OwnedFormula(d.owner, d.statement.guard.checked.primitive)
              for d in projection.decisions]
    monitors = compile_guards(guards, choreography.lifeline_names)
    symbols = tuple(m for s in choreography.symbol_sets.values() for m in s.members)
    called = application(name for d in projection.decisions
                         for name in named_predicates(d.statement.guard.checked.formula))
    return Plan(choreography, projection, monitors, symbols, called)
