"""docs/anomalies.md cannot drift from the code: every guard text it shows under a
``<!-- guard: FUNCTION ARGS -->`` marker is what the library returns for those
arguments.  (That every python block prints the text of the block after it is
tests/test_readme.py's, as for every document.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cpl.anomalies import guards

DOC = (Path(__file__).resolve().parent.parent / "docs" / "anomalies.md").read_text()
MARKED = re.findall(r"<!-- guard: (\w+) (.*?) -->\n```\n(.*?)\n```", DOC)


def test_the_doc_shows_every_library_function():
    assert {name for name, _, _ in MARKED} | {"g6_issue_after", "g6_sink_counter"} == {
        function.__name__ for function in guards.LIBRARY.values()}


@pytest.mark.parametrize("name,arguments,text", MARKED, ids=[m[0] for m in MARKED])
def test_every_shown_guard_is_the_librarys(name, arguments, text):
    assert getattr(guards, name)(*json.loads(arguments)).text == text


def test_the_doc_stays_in_the_repo():
    """The measured prevention table is filled from cpl explore by its own test
    (test_anomaly_guide.py); here only: no link leaves the repository."""
    assert "## Measured prevention" in DOC
    assert "../shared" not in DOC and "shared/spec" not in DOC
