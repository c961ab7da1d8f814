"""``choreo.verify(..., workers=N)``: the same report as one worker, from worker processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import choreo
from choreo import Choreography, load_one
from choreo.exploration import verify_pool
from choreo.exploration.explore import Source

ROOT = Path(__file__).resolve().parent.parent
LOST_UPDATE = str(ROOT / "examples" / "anomalies" / "lost_update.py")


def _tiny() -> Choreography:
    c = Choreography("tiny")
    a, b = c.lifelines("A", "B")
    x = c.var("x", int, init=1)
    c.send(a, b, x, label="x")
    return c


def _late(trace) -> bool:
    """Fires in MSCs far down the search's order: the merge must count what comes before."""
    return trace.meta["path"].startswith("1")


def _odd(trace) -> bool:
    """Fires in many subtrees: only the earliest in the search's order is the first."""
    return trace.meta["path"].endswith("1")


def _report(c, workers: int, tmp_path: Path, source=None, traces: bool = True,
            **options) -> dict:
    """The report as JSON, with the counterexample file's bytes and the traces written."""
    out = tmp_path / f"w{workers}"
    out.mkdir()
    (out / "traces").mkdir()
    report = choreo.verify(c, workers=workers, source=source,
                           counterexample=str(out / "counterexample.jsonl"),
                           traces=str(out / "traces") if traces else None, **options)
    found = report.to_json()
    assert 1 <= found.pop("workers") <= workers  # the processes used: test_more_workers_than_mscs
    found.pop("seconds")
    found["counterexample"] = (out / "counterexample.jsonl").read_bytes() \
        if found["counterexample"] else None
    found["traces"] = {name: (out / "traces" / name).read_bytes()
                       for name in sorted(os.listdir(out / "traces"))}
    return found


@pytest.fixture
def pools(monkeypatch) -> list:
    """The number of worker processes each search started (none: it ran in this process)."""
    started: list = []
    real = verify_pool.in_pool

    def counted(chunks, workers, *rest):
        started.append(workers)
        return real(chunks, workers, *rest)
    monkeypatch.setattr(verify_pool, "in_pool", counted)
    return started


@pytest.mark.parametrize("path, name, detectors, traces", [
    (LOST_UPDATE, "unguarded", "catalog", True),
    (LOST_UPDATE, "guarded", {"late": _late, "odd": _odd}, False),  # 596 MSCs: no files
    (str(ROOT / "examples" / "relay.py"), None, {"late": _late, "odd": _odd}, True),
    (str(ROOT / "examples" / "parallel_tools.py"), None, "catalog", True),
])
def test_two_workers_report_what_one_does(path, name, detectors, traces, tmp_path, pools):
    c = load_one(path, name)
    one = _report(c, 1, tmp_path, traces=traces, detectors=detectors)
    two = _report(c, 2, tmp_path, Source(path, name), traces=traces, detectors=detectors)
    assert pools == [2]  # the search was split, not run here
    assert two == one
    assert one["mscs"] >= 2 and len(one["traces"]) == (one["mscs"] if traces else 0)
    if name == "guarded":  # the merge order is tested: firings in later subtrees
        assert one["first"]["late"]["index"] > 1 and one["first"]["odd"]["index"] > 1
        assert one["result"] == "complete" and one["counterexample"]


def test_spawned_workers_load_the_choreography_from_its_file(tmp_path, pools, monkeypatch):
    import multiprocessing
    path = str(ROOT / "examples" / "parallel_tools.py")  # its report says not enumerable
    c = load_one(path)
    one = _report(c, 1, tmp_path)
    monkeypatch.setattr(verify_pool, "_context",
                        lambda source: multiprocessing.get_context("spawn") if source else None)
    assert _report(c, 2, tmp_path, Source(path)) == one
    assert pools == [2] and one["bound"] == "not enumerable"
    assert _report(c, 3, tmp_path) == one  # no source: no spawned worker, one process
    assert pools == [2]


def test_a_tree_of_one_msc(tmp_path, pools):
    one = _report(_tiny(), 1, tmp_path)
    assert one["mscs"] == 1 and one["result"] == "complete"
    assert _report(_tiny(), 4, tmp_path) == one


def test_more_workers_than_mscs(tmp_path, pools):
    relay = load_one(str(ROOT / "examples" / "relay.py"))
    one = _report(relay, 1, tmp_path)
    assert one["mscs"] == 2
    assert _report(relay, 8, tmp_path) == one
    assert pools == [2]  # one process per subtree, no more
    assert choreo.verify(relay, workers=8, detectors=None).workers == 2  # as the report says
    assert choreo.verify(_tiny(), workers=4, detectors=None).workers == 1  # here: one subtree


def test_max_runs_bounds_the_split_search(pools):
    c = load_one(LOST_UPDATE, "guarded")
    report = choreo.verify(c, workers=2, max_runs=40, counterexample=None)
    assert pools == [2]
    assert not report.complete and report.bound == "max-runs"
    assert 0 < report.mscs <= 40 and report.exit_code == 3
    assert report.why == f"stopped after {report.mscs} MSCs (--max-runs)"


def test_max_runs_above_the_tree_is_the_whole_tree(tmp_path, pools, monkeypatch):
    c = load_one(LOST_UPDATE, "unguarded")
    one = _report(c, 1, tmp_path, traces=False, max_runs=170)
    assert one["result"] == "complete" and one["mscs"] <= 170
    jobs: list = []
    real = verify_pool._Queue.__next__
    monkeypatch.setattr(verify_pool._Queue, "__next__",
                        lambda queue: jobs.append(real(queue)) or jobs[-1])
    assert _report(c, 2, tmp_path, traces=False, max_runs=170) == one
    # The budget went out in slices, and subtrees that used theirs up went on from there.
    assert len(jobs) > verify_pool.SPLIT * 2


def test_time_limit_bounds_it():
    report = choreo.verify(load_one(LOST_UPDATE, "guarded"), workers=2, time_limit=1e-9,
                           counterexample=None)
    assert not report.complete and report.bound == "time-limit"


def test_each_sees_every_msc_once(pools):
    c = load_one(LOST_UPDATE, "unguarded")
    seen: list = []
    report = choreo.verify(c, workers=2, each=lambda trace: seen.append(trace.meta["path"]),
                           counterexample=None)
    assert pools == []  # each is a callable of this process: the search runs here
    assert len(seen) == len(set(seen)) == report.mscs
    assert report.mscs == choreo.verify(c, counterexample=None).mscs


def test_the_clusters_steps_add_up_to_one_search():
    """docs/cluster.md's split: one fresh search per prefix (as a Ray task makes), the parts
    merged whatever order they come back in."""
    from cpl.anomalies import detect
    from choreo.execution import prepare
    from choreo.exploration.reduction import Tree
    from choreo.exploration.verifier import Search

    plan = prepare(load_one(LOST_UPDATE, "unguarded"))

    def search():
        return Search(plan, plan.inputs((), None), (detect, {"late": _late, "odd": _odd}),
                      100_000, False, None, None)
    one = search().run(Tree(), None, None)
    driver = search()
    split = verify_pool.prefixes(driver, 16)
    assert len(split) >= 16 and split == sorted(split)
    parts = [verify_pool.search_below(search(), prefix) for prefix in reversed(split)]
    tally = verify_pool.merged(driver, parts)
    for name in ("mscs", "runs", "blocked", "statuses", "decisions", "detectors", "first",
                 "failures", "work", "bounds"):
        assert getattr(tally, name) == getattr(one, name), name
    assert tally.example[0] == one.example[0] and one.first["late"][2] > 1
