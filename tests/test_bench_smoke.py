"""bench/ stays runnable: its workloads are valid traces and --quick produces every row.

Correctness only — timing on a shared machine is no test.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cpl.monitor.offline import evaluate_trace
from cpl.semantics.reference import evaluate_all
from cpl.trace import dump_trace, load_trace

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import ab  # noqa: E402
import metadata_scale  # noqa: E402
import metadata_size  # noqa: E402
import ray_launcher  # noqa: E402
import run as bench_run  # noqa: E402
import verify as bench_verify  # noqa: E402
import workloads as w  # noqa: E402


@pytest.mark.parametrize("make", [w.mixed_trace, w.receive_heavy_trace])
def test_workloads_are_valid_traces_that_round_trip(make, tmp_path):
    trace = make(400)
    path = tmp_path / "trace.json"
    dump_trace(trace, path)
    loaded = load_trace(path)  # validates: every receive after its send, on its lifeline
    assert len(loaded.events) == 400
    assert [e.to_dict() for e in loaded.events] == [e.to_dict() for e in trace.events]


def test_mixed_workload_has_the_asked_mix_and_non_fifo_receives():
    trace = w.mixed_trace(4000)
    counts = w.kind_counts(trace)
    for kind, share in w.MIX_PAPER.items():
        assert abs(counts[kind] / 4000 - share) < 0.05, (kind, counts)
    order = {e.msg: i for i, e in enumerate(trace.events) if e.kind == "send"}
    received = [order[e.msg] for e in trace.events
                if e.kind == "recv" and e.lifeline == "Committer"]
    assert received != sorted(received)  # some message overtakes another


def test_driven_monitors_agree_with_the_reference_on_a_workload_prefix():
    trace = w.mixed_trace(600)
    program, (formula,) = w.compile_program({"Committer": w.GUARD_FULL}, trace.lifelines,
                                            w.PAPER_VARS)
    monitors, handlers = w.monitor_handlers(program, trace.lifelines)
    steps, messages = w.steps(trace, handlers)
    expected = [value for _, value in evaluate_all(trace, formula, "Committer")]
    # drive step by step, reading the Committer's guard after each of its events
    values, box = [], [None] * messages
    for (code, function, slot, updates), event in zip(steps, trace.events):
        if code == w.SEND:
            box[slot] = function()
        elif code == w.RECV:
            function(box[slot], updates)
        elif code == w.ACT:
            function(updates)
        else:
            function()
        if event.lifeline == "Committer":
            values.append(monitors["Committer"].value(formula))
    assert values == expected
    assert [v for _, v in evaluate_trace(trace, w.GUARD_FULL, "Committer")] == expected


def test_metadata_sizes_are_computed_and_local_guards_do_not_grow_them():
    trace = w.mixed_trace(800)
    base = metadata_size.sizes(trace, [w.GUARD_FULL])
    more = metadata_size.sizes(trace, [w.GUARD_FULL, *metadata_size.LOCAL_EXTRA])
    assert all(base.values()) and more == base
    sent, program = metadata_size.messages(trace, [w.GUARD_FULL], prune=False)
    assert all(len(metadata_size.naive_json(m, program)) > len(m.encode()) for _, m in sent)


def test_scaled_metadata_keeps_its_size_and_its_baseline_is_the_old_layout():
    lean = {}
    for count in (4, 24):
        trace = w.scaled_trace(count, 30)
        lean[count], before, carried = metadata_scale.sizes(trace)
        assert carried == ("TestRunner", "Security")
        assert all(a < b for a, b in zip(lean[count], before))
        # the baseline's clocks are what monitors carrying every lifeline ship
        unpruned, _ = metadata_size.messages(trace, [w.GUARD_FULL], prune=False)
        assert [m.vc for _, m in unpruned] == metadata_scale.send_clocks(trace)
    assert max(lean[24]) <= max(lean[4]) + 2  # two clock entries may need a byte more


def test_quick_run_produces_every_benchmark_row(capsys):
    rows = bench_run.run(list(bench_run.BENCHMARKS), quick=True)
    # every row is under the name of the file that measures it
    assert {r.bench for r in rows} == set(bench_run.BENCHMARKS) == {
        "monitors_mixed", "monitor_local", "monitors_receive", "metadata_size", "metadata_scale",
        "simulate_runs", "eval_trace", "stream_throughput", "startup", "render", "lifelines"}
    assert all((BENCH / f"{name}.py").is_file() for name in bench_run.BENCHMARKS)
    assert all(r.value > 0 for r in rows)
    assert "bench" in bench_run.table(rows)
    with pytest.raises(SystemExit):
        bench_run.select("P1")  # benches go by their file names


def test_ab_runs_each_trees_own_bench_and_prints_b_over_a(capsys):
    tree = str(BENCH.parent)
    assert ab.main(["--a", tree, "--b", tree, "--rounds", "1", "--quick",
                    "--only", "monitor_local"]) == 0
    table = capsys.readouterr().out
    assert "| monitor_local | Monitor.act | events/s |" in table
    with pytest.raises(SystemExit):
        ab.main(["--a", tree, "--b", tree, "--only", "P1"])


def test_verify_bench_prices_an_msc_against_a_run_and_finds_the_first_counterexample(
        monkeypatch):
    monkeypatch.setattr(bench_verify, "MIN_CPU", 0.02)  # a smoke run: no minimum to time
    case = "lost_update unguarded"
    rows = bench_verify.run(quick=True, cases=[case], runs=20, time_limit=0.3, first_runs=30,
                            peaks=[case])
    costs = [r for r in rows if r.unit == "ms"]
    assert len(costs) == 2 and all(r.value > 0 and r.baseline_value > 0 for r in costs)
    assert "max-runs" in costs[0].what  # 20 of its MSCs: bounded, and said so
    (first,) = [r for r in rows if r.unit == "MSCs"]
    assert "(lost_update, path" in first.what and first.value >= 1
    assert "lost_update, seed" in first.baseline and first.baseline_value >= 1
    rss, traced = [r for r in rows if r.unit == "MiB"]
    assert rss.value >= rss.baseline_value > 0 and 0 < traced.value < rss.value
    with pytest.raises(SystemExit):
        bench_verify.main(["--only", "P1"])  # cases go by their names


@pytest.mark.xdist_group("timing")  # its Ray head must not overlap the stop timings
def test_ray_bench_runs_local_and_ray_side_by_side_and_leaves_no_ray():
    reason = ray_launcher.unavailable()
    if reason:
        pytest.skip(f"ray bench: {reason} (pip install 'causal-guards[ray]')")
    rows = bench_run.run(["ray_launcher"], quick=True)
    assert all(r.value > 0 for r in rows)
    measured = {r.what for r in rows}
    assert {"Ray actors, → first event, 4 lifelines (code_review.py)",
            "stream Ray actors A→B, CURVE, 601 msgs"} <= measured
    assert "ray_launcher" in bench_run.select("ray_launcher")
