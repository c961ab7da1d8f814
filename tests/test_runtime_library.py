"""``runtime.run``: a run over processes as one library call, whose result is what ``cpl run``
prints — the same lifelines' results, status and exit code, its trace written, its parts
gone once the trace is whole."""

from __future__ import annotations

import json

import pytest

import runtime
from cpl.trace import load_trace
from runtime_util import EXAMPLES, run_cpl

CODE_REVIEW = str(EXAMPLES / "code_review.py")
TOOLS = str(EXAMPLES / "parallel_tools.py")  # its results are the same in every run


def printed_results(out: str) -> dict[str, dict]:
    """``cpl run``'s lines ``Lifeline: name = JSON, ...`` read back."""
    results = {}
    for line in out.splitlines():
        lifeline, _, shown = line.partition(": ")
        results[lifeline] = {name: json.loads(value) for name, _, value in
                             (pair.partition(" = ") for pair in shown.split(", "))}
    return results


def test_the_library_call_returns_what_cpl_run_prints(tmp_path):
    result = runtime.run(TOOLS, trace=str(tmp_path / "lib.jsonl"))
    code, out, err, _ = run_cpl(tmp_path, "run", TOOLS, "--trace", "cli.jsonl")
    assert (code, err) == (0, "")
    assert printed_results(out) == result.results
    assert result.results["Calculator"]["ok"] is True
    assert (result.status, result.error, result.exit_code) == ("ok", None, code)
    assert result.written and result.parts is None
    assert not (tmp_path / "lib.jsonl.parts").exists()
    trace = load_trace(tmp_path / "lib.jsonl")
    assert trace.meta["results"] == result.results and trace.meta["status"] == "ok"


def test_a_run_that_ends_badly_says_so_in_its_result(tmp_path):
    result = runtime.run(CODE_REVIEW, args=["rounds=100000"], timeout=0.5)
    code, _, err, _ = run_cpl(tmp_path, "run", CODE_REVIEW, "--arg", "rounds=100000",
                              "--timeout", "0.5")
    assert (result.status, result.exit_code) == ("timeout", code)
    assert err.strip() == f"cpl run: {result.error}" == "cpl run: stopped after 0.5 s (--timeout)"
    assert result.trace is None and not result.written


def test_a_trace_that_cannot_be_opened_costs_no_run(tmp_path):
    with pytest.raises(runtime.TraceRefused):
        runtime.run(CODE_REVIEW, trace=str(tmp_path / "no" / "such" / "t.jsonl"))
    assert list(tmp_path.iterdir()) == []


def test_a_wrong_hosts_file_is_read_before_the_run_and_leaves_nothing(tmp_path):
    """``--hosts`` is read before ``runtime.run`` claims the parts and opens the trace: its
    usage error leaves neither behind (it left both, when the CLI read it mid-run)."""
    (tmp_path / "hosts.json").write_text('{"hosts": {"h": ["Nobody"]}}')
    code, out, err, _ = run_cpl(tmp_path, "run", CODE_REVIEW, "--hosts", "hosts.json",
                                "--trace", "t.jsonl")
    assert (code, out) == (2, "")
    assert err.startswith("cpl run: --hosts: hosts.json: 'Nobody' is not a lifeline")
    assert not (tmp_path / "t.jsonl").exists() and not (tmp_path / "t.jsonl.parts").exists()


def test_launchers_that_do_not_place_every_lifeline_cost_no_run(tmp_path):
    from runtime.supervisor import launchers_for
    with pytest.raises(ValueError, match="not every lifeline once"):
        runtime.run(TOOLS, trace=str(tmp_path / "t.jsonl"),
                    launchers=launchers_for(["Agent", "Search"], {}, None))
    assert list(tmp_path.iterdir()) == []
