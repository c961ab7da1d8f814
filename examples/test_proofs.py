"""The examples' guards, proved for every message sequence chart: ``python -m pytest examples``.

Each test asks ``choreo.verify`` for every MSC a choreography can produce and
asserts that the search was complete and that no detector fired in any of
them.  Should one fail, pytest prints the report: how many MSCs fired, the
file the first counterexample was written to, and the ``cpl render`` command
that draws it.
"""

import runpy
from pathlib import Path

import pytest

import choreo
from cpl.anomalies import detect

HERE = Path(__file__).parent


@pytest.mark.parametrize("example", ["anomalies/phantom_tool.py", "anomalies/lost_update.py",
                                     "anomalies/causal_cascade.py"])
def test_the_guarded_twin_is_safe_in_every_msc(example):
    report = choreo.verify(choreo.load_one(str(HERE / example), "guarded"))
    assert report.complete and not report.fired


def test_the_guarded_publisher_never_publishes_a_stale_fact():
    """With a detector of your own beside the catalog's."""
    example = runpy.run_path(str(HERE / "stale_publish.py"))
    report = choreo.verify(example["guarded"],
                           detectors=(detect, {"published_stale": example["published_stale"]}))
    assert report.complete and not report.fired
    assert "published_stale" in report.detectors  # it ran, on every MSC


def test_the_unguarded_twin_has_a_counterexample(tmp_path):
    report = choreo.verify(choreo.load_one(str(HERE / "anomalies/phantom_tool.py"), "unguarded"),
                           counterexample=str(tmp_path / "phantom.jsonl"))
    assert report.complete and report.fired == {"phantom_tool": report.detectors["phantom_tool"]}
    assert report.counterexample == str(tmp_path / "phantom.jsonl")
    assert (tmp_path / "phantom.jsonl").stat().st_size > 0
