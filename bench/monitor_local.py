"""Monitor steps of one lifeline alone: act events only, ``status != failed S status == passed``.

This is the floor of a monitor step: one Python call per event into the
generated ``act``.  The loop is ``for u in updates: act(u)``; the same loop
over a no-op function is the driver's share.
"""

from __future__ import annotations

import random
from functools import partial

import baselines
import workloads as w
from cpl.trace import Event, Trace
from timing import Row, interleaved, median, rate, timed

row = partial(Row, "monitor_local")  # every row of this file is under its name


def local_trace(n: int, seed: int = 7) -> Trace:
    rng = random.Random(seed)
    statuses = w.STATUSES["TestRunner"]
    return Trace(("TestRunner",), {}, [Event(f"e{i}", "TestRunner", "act",
                                            set={"status": rng.choice(statuses)})
                                      for i in range(n)], ("status",))


def _loop(act, updates):
    for u in updates:
        act(u)


def _noop(updates=None):
    pass


def run(quick: bool = False) -> list[Row]:
    n, repeats, head = (5_000, 2, 100) if quick else (100_000, 15, 500)
    trace = local_trace(n)
    updates = [dict(event.set) for event in trace.events]

    def monitor():
        program, _ = w.compile_program({"TestRunner": w.LOCAL_GUARD}, ("TestRunner",), ("status",))
        _, handlers = w.monitor_handlers(program, ("TestRunner",))
        act = handlers["TestRunner"][0]
        return timed(lambda: _loop(act, updates))

    runs = interleaved({"driver": lambda: timed(lambda: _loop(_noop, updates)),
                        "act": monitor}, repeats)
    short = baselines.prefix(trace, head)
    reference = rate(head, interleaved(
        {"ref": lambda: baselines.reference_seconds(short, w.LOCAL_GUARD, None)},
        1 if quick else 5)["ref"])
    driver, values = rate(n, runs["driver"]), rate(n, runs["act"])
    net = [(m - d) / n * 1e9 for m, d in zip(runs["act"], runs["driver"])]
    return [
        row(f"driver loop alone (no-op act), {n:,} acts", median(driver), "events/s",
            driver),
        row("Monitor.act", median(values), "events/s", values,
            baseline=f"cpl.semantics.reference, {head}-event prefix",
            baseline_value=median(reference),
            target="≥ 5 M", met=median(values) >= 5e6),
        row("act work per event (minus driver)", median(net), "ns/event", net),
    ]
