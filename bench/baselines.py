"""The naive evaluators the monitors are compared with, timed in the same run.

* ``reference``: ``cpl.semantics.reference.evaluate_all`` — the literal semantics with
  memoisation, over a prefix of the trace (it builds every event's causal
  past as a bitmask, so it is super-linear and cannot take 100,000 events).
* ``global_log``: what a system without monitors would do — a central log of
  every event, and at each decision a fresh evaluation of the guard over the
  log so far (nothing kept between decisions).  Quadratic, so also a prefix.

Both report events per CPU second over the prefix they processed.
"""

from __future__ import annotations

import time

import cpl
from cpl.semantics import evaluate, evaluate_all
from cpl.trace import Trace


def prefix(trace: Trace, n: int) -> Trace:
    """The first ``n`` events: still a linear extension (sends come before receives)."""
    return Trace(trace.lifelines, trace.init, trace.events[:n], trace.vars, trace.symbols)


def reference_seconds(trace: Trace, guard: str, owner: str | None) -> float:
    """Evaluate the guard at every event of ``owner`` with a fresh reference evaluator."""
    formula = cpl.check(guard, trace.schema()).formula
    start = time.process_time()
    evaluate_all(trace, formula, owner)
    return time.process_time() - start


def global_log_seconds(trace: Trace, guard: str, owner: str) -> float:
    """At every choice of ``owner``, re-decide the guard from the whole log so far."""
    formula = cpl.check(guard, trace.schema()).formula
    start = time.process_time()
    for index, event in enumerate(trace.events):
        if event.lifeline == owner and event.kind == "choice":
            evaluate(prefix(trace, index + 1), formula, index)
    return time.process_time() - start
