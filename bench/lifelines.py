"""Lifelines: ``cpl eval`` of a trace with N lifelines and one act each.

Before, compiling the monitors cost O(N²) (a generated module per lifeline, each
building a table over all N lifelines): 1.2 / 5.9 / 21.5 s at N = 1k / 4k / 8k.
Every lifeline that no guard reads or owns now shares one generated monitor.

For N = 1,000, 8,000 and 64,000 lifelines (each with one ``act`` setting ``x``) the
trace is written as a JSON document into a temporary directory, and timed:

* ``cpl eval TRACE`` (no guard: re-check the recorded decisions, of which there are
  none), CPU time of the child (user + system), interpreter start-up included;
* ``cpl eval TRACE GUARD --format jsonl`` with a guard every lifeline evaluates that
  reads one lifeline (so that lifeline's entries travel on every monitor);
* the CLI's fixed cost: ``cpl eval`` of a one-lifeline trace (start-up, imports);
* the baseline: ``json.load`` of the same file in this process.  The ratio that says
  whether eval is linear is (eval − fixed cost) / json.load, which stays flat as N grows
  (computed from the medians: at small N the difference is within the noise).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile

from eval_trace import cli_command
from timing import Row, child_cpu_seconds, cpu_seconds, interleaved, median

SIZES = (1_000, 8_000, 64_000)
GUARD = "x == 1 || @L0.x == 0"


def trace_document(count: int) -> dict:
    names = [f"L{i}" for i in range(count)]
    return {"format": "cpl-msc/1", "lifelines": names, "init": {},
            "events": [{"id": f"e{i}", "lifeline": name, "kind": "act", "set": {"x": i}}
                       for i, name in enumerate(names)]}


def _cli_seconds(arguments: list[str]) -> float:
    return child_cpu_seconds(lambda: subprocess.run(cli_command() + arguments, check=True,
                                                    stdout=subprocess.DEVNULL))


def run(quick: bool = False) -> list[Row]:
    sizes, repeats = ((100, 800), 1) if quick else (SIZES, 5)
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        one = os.path.join(directory, "one.json")
        with open(one, "w", encoding="utf-8") as handle:
            json.dump(trace_document(1), handle)
        for count in sizes:
            path = os.path.join(directory, f"n{count}.json")
            with open(path, "w", encoding="utf-8") as handle:
                json.dump(trace_document(count), handle)

            def json_load(path=path):
                with open(path, encoding="utf-8") as handle:
                    return json.load(handle)

            runs = interleaved({
                "json": lambda: cpu_seconds(json_load),
                "fixed": lambda: _cli_seconds(["eval", one]),
                "recheck": lambda path=path: _cli_seconds(["eval", path]),
                "guard": lambda path=path: _cli_seconds(["eval", path, GUARD, "--format",
                                                         "jsonl"]),
            }, repeats)
            base = median(runs["json"])
            baseline = f"json.load ({os.path.getsize(path) / 1e6:.2f} MB)"
            target = {"target": "≤ 1 s", "met": median(runs["recheck"]) <= 1} \
                if count == 8_000 else {}
            rows += [
                Row("lifelines", f"{count:,} lifelines: json.load of the trace", base, "s",
                    runs["json"]),
                Row("lifelines", f"{count:,} lifelines: `cpl eval` of a 1-lifeline trace "
                    f"(fixed cost)", median(runs["fixed"]), "s", runs["fixed"]),
                Row("lifelines", f"{count:,} lifelines: `cpl eval TRACE` (start-up included)",
                    median(runs["recheck"]), "s", runs["recheck"], baseline=baseline,
                    baseline_value=base, **target),
                Row("lifelines", f"{count:,} lifelines: `cpl eval TRACE '{GUARD}'`",
                    median(runs["guard"]), "s", runs["guard"], baseline=baseline,
                    baseline_value=base),
            ]
    return rows


if __name__ == "__main__":
    import sys

    from timing import table

    print(table(run(quick="--quick" in sys.argv)))
