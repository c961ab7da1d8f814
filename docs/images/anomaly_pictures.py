"""The MSC of each guarded anomaly example at a decision its guard turned down.

    python docs/images/anomaly_pictures.py   # from the repo root: docs/images/anomaly_*.png

For each example of examples/anomalies/, the first seed whose guarded run has a
decision under a guard the unguarded twin does not have with the outcome that
shows prevention at work (a refusal; for the cascade rule, a cascade), drawn
with that decision highlighted: what it saw, and what it did not.
"""

from __future__ import annotations

import sys
from pathlib import Path

from choreo import load_one
from choreo.execution import prepare
from choreo.execution import Simulator
from cpl.view import render

ROOT = Path(__file__).resolve().parents[2]
# the outcome that shows the guard at work: a refusal, or for the cascade rule a cascade
EXAMPLES = {"stale_generation": (None, False), "phantom_tool": (None, False),
            "causal_cascade": ("cascade to j1?", True), "tool_reordering": (None, False),
            "lost_update": (None, False)}


def guards(plan) -> set[str]:
    return {d.statement.guard.checked.canonical for d in plan.projection.decisions}


def picture(example: str, label: str | None, outcome: bool) -> str:
    path = str(ROOT / "examples" / "anomalies" / f"{example}.py")
    guarded, unguarded = prepare(load_one(path, "guarded")), prepare(load_one(path, "unguarded"))
    own = guards(guarded) - guards(unguarded)
    simulator = Simulator.of(guarded)
    for seed in range(200):
        trace = simulator.run(seed=seed, values=guarded.inputs([])).trace
        refused = next((e for e in trace.events if e.kind == "choice" and e.guard in own
                        and e.outcome is outcome and label in (None, e.label)), None)
        if refused is not None:
            out = ROOT / "docs" / "images" / f"anomaly_{example}.png"
            out.write_bytes(render(trace, "png", highlight=refused.id, max_rows=60))
            return f"{out.relative_to(ROOT)}: seed {seed}, {refused.id} ({refused.label})"
    return f"{example}: no guarded decision turned down in 200 seeds"


if __name__ == "__main__":
    for name, (label, outcome) in EXAMPLES.items():
        print(picture(name, label, outcome))
    sys.exit(0)
