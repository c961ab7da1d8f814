"""The guide's prevention table (docs/anomalies.md) is what the examples measure today."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import prevention  # noqa: E402


def test_the_guides_table_matches_the_examples():
    guide = (ROOT / "docs" / "anomalies.md").read_text(encoding="utf-8")
    rows = prevention.rows(200)
    assert len(rows) == 2 * len(prevention.EXAMPLES)
    missing = [row for row in rows if row not in guide.splitlines()]
    assert not missing, "docs/anomalies.md's table differs; run python bench/prevention.py:\n" \
        + "\n".join(missing)
    for row in rows:  # the acceptance: anomalies unguarded, none guarded, work done, no failures
        cells = [c.strip() for c in row.strip("|").split("|")]
        twin, anomalies, failed, commits = cells[1], int(cells[3]), int(cells[4]), int(cells[5])
        assert failed == 0 and commits > 0, row
        assert (anomalies > 0) if twin == "unguarded" else (anomalies == 0), row
