"""A trace survives its supervisor, and a full disk loses no run.

``cpl run --trace T`` over processes keeps the lifelines' logs in ``T.parts``
until T is whole.  Killing ``cpl run`` (``kill -9``) at a random moment must
leave parts from which ``cpl merge`` rebuilds a valid trace whose every
decision re-checks against the reference semantics, and no lifeline process
may outlive it.  A trace that cannot be written (``EFBIG`` under
``RLIMIT_FSIZE``, the same path as ``ENOSPC``) still prints the results, names
the file and how far it got, and keeps the parts for ``cpl merge``.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import signal
import subprocess
import time

import pytest

from cpl.trace import load_trace
from cpl_cli import main
from runtime.frames.control import SUPERVISOR_SILENCE
from runtime_util import (CPL, EXAMPLES, Cpl, check_messages, check_semantics,
                          lifeline_processes, tagged_env, wait_until)

CODE_REVIEW = str(EXAMPLES / "code_review.py")
RESULT_LINES = ("Orchestrator: ", "TestRunner: ", "Security: ", "Committer: ")


def cpl(folder, *args, limit: int | None = None, timeout: float = 60.0):
    """``cpl args`` to its end, optionally under ``RLIMIT_FSIZE`` = ``limit`` bytes (a write
    past it fails with EFBIG, as a full disk fails with ENOSPC)."""
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return subprocess.run([*CPL, *args], cwd=folder, capture_output=True, text=True,
                          timeout=timeout, env=tagged_env("recovery"),
                          preexec_fn=limited if limit else None)


def logged_events(parts) -> int:
    return sum(sum(1 for _ in open(log, "rb")) for log in parts.glob("*.jsonl"))


def test_kill_9_of_the_supervisor_at_random_moments_recovers_every_trace(tmp_path, capsys):
    """10 runs, each killed at a random moment (the first while its lifelines start, the
    others up to 1.5 s into their events): 10 traces recovered, every decision agrees."""
    rng = random.Random(16)
    began = time.monotonic()
    recovered = []
    for attempt in range(10):
        trace_path = tmp_path / f"run{attempt}.jsonl"
        parts = tmp_path / f"run{attempt}.jsonl.parts"
        with Cpl(tmp_path, "run", CODE_REVIEW, "--arg", "rounds=100000", "--seed",
                 str(attempt), "--trace", str(trace_path)) as run:
            # (B023: wait_until calls each lambda in this attempt, with this attempt's parts)
            assert wait_until(lambda: (parts / "run.json").exists(), 30.0), run.err  # noqa: B023
            if attempt:
                assert wait_until(lambda: logged_events(parts), 30.0), run.err  # noqa: B023
                time.sleep(rng.uniform(0.0, 1.5))
            os.kill(run.process.pid, signal.SIGKILL)
            run.process.wait(10)
            gone = wait_until(lambda: not lifeline_processes(run.tag), SUPERVISOR_SILENCE + 5)
            assert gone, f"lifelines outlived their supervisor: {lifeline_processes(run.tag)}"
        logged = logged_events(parts)
        assert main(["eval", str(trace_path)]) == 0
        told = capsys.readouterr().err
        assert f"cpl merge {parts} -o {trace_path}" in told, told
        merged = cpl(tmp_path, "merge", parts.name, "-o", trace_path.name)
        assert merged.returncode == 0, merged.stderr
        trace = load_trace(trace_path)
        assert trace.meta["status"] == "vanished" and trace.meta["unplaced"] == 0, trace.meta
        assert len(trace.events) == logged  # every logged event is in the trace
        check_messages(trace)
        decisions = check_semantics(trace)
        assert main(["eval", str(trace_path)]) == 0
        rechecked = capsys.readouterr()
        assert re.search(rf"^{decisions} decisions? re-checked: all agree$", rechecked.out, re.M)
        assert rechecked.err == f"note: {trace_path}: its run ended vanished: the supervisor " \
            "vanished before the run ended: cpl merge rebuilt the trace from the lifelines' " \
            "logs\n", rechecked.err
        recovered.append(len(trace.events))
    assert len(recovered) == 10 and min(recovered[1:]) > 0, recovered
    assert time.monotonic() - began < 120
    print(f"recovered {recovered} events in {time.monotonic() - began:.1f} s")


@pytest.mark.parametrize("extra, status, code", [((), "ok", 0),
                                                 (("--timeout", "3"), "timeout", 1)])
def test_a_finished_run_removes_its_parts_and_its_header_named_them(tmp_path, extra, status,
                                                                     code):
    rounds = "100000" if extra else "3"
    done = cpl(tmp_path, "run", CODE_REVIEW, "--arg", f"rounds={rounds}", "--trace", "t.jsonl",
               *extra)
    assert done.returncode == code, done.stderr
    with open(tmp_path / "t.jsonl", encoding="utf-8") as handle:
        assert json.loads(handle.readline())["parts"] == "t.jsonl.parts"
    assert load_trace(tmp_path / "t.jsonl").meta["status"] == status
    assert sorted(os.listdir(tmp_path)) == ["t.jsonl"]
    assert not list(tmp_path.glob("*.parts"))


def _killed_run(folder, name: str):
    """The parts and header-only trace a run leaves when its supervisor is killed."""
    with Cpl(folder, "run", CODE_REVIEW, "--arg", "rounds=100000", "--trace", name) as run:
        assert wait_until(lambda: run.logged() > 50, 30.0), run.err
        os.kill(run.process.pid, signal.SIGKILL)
        run.process.wait(10)
        assert wait_until(lambda: not lifeline_processes(run.tag), SUPERVISOR_SILENCE + 5)
    return folder / name, folder / f"{name}.parts"


def test_every_reader_names_the_command_that_recovers_an_unfinished_trace(tmp_path):
    trace_path, parts = _killed_run(tmp_path, "t.jsonl")
    hint = "cpl merge t.jsonl.parts -o t.jsonl"
    for args, code in ((("eval", "t.jsonl"), 0), (("render", "t.jsonl", "-o", "t.dot"), 0),
                       (("explain", "t.jsonl", "Committer.1"), 2)):
        told = cpl(tmp_path, *args)
        assert told.returncode == code, told.stderr
        assert "the run was cut off" in told.stderr and hint in told.stderr, told.stderr
    (tmp_path / "t.json").write_bytes(b'{\n  "format": "cpl-msc/1",\n  "lifelines": [')
    (tmp_path / "t.json.parts").mkdir()  # a document cut by the kill: not even JSON
    told = cpl(tmp_path, "eval", "t.json")
    assert told.returncode == 1
    assert "note:" in told.stderr and "cpl merge t.json.parts -o t.json" in told.stderr
    again = cpl(tmp_path, "run", CODE_REVIEW, "--trace", "t.jsonl")  # never over the parts
    assert again.returncode == 2 and "t.jsonl.parts" in again.stderr, again.stderr
    # merged as the run went, up to the kill: no end, and no more than the parts hold
    lines = trace_path.read_bytes().splitlines()
    assert b'"end"' not in lines[-1] and len(lines) - 1 <= logged_events(parts)
    assert logged_events(parts) > 50


def test_merge_refuses_to_replace_a_whole_trace_unless_forced(tmp_path):
    trace_path, parts = _killed_run(tmp_path, "t.jsonl")
    assert cpl(tmp_path, "merge", "t.jsonl.parts", "-o", "t.jsonl").returncode == 0
    whole = trace_path.read_bytes()
    again = cpl(tmp_path, "merge", "t.jsonl.parts", "-o", "t.jsonl")
    assert again.returncode == 2 and "--force" in again.stderr, again.stderr
    other = tmp_path / "notes.json"
    other.write_text("mine")
    refused = cpl(tmp_path, "merge", "t.jsonl.parts", "-o", "notes.json")
    assert refused.returncode == 2 and other.read_text() == "mine"
    forced = cpl(tmp_path, "merge", "t.jsonl.parts", "-o", "t.jsonl", "--force")
    assert forced.returncode == 0 and trace_path.read_bytes() == whole
    for form in ("json", "msgpack"):
        assert cpl(tmp_path, "merge", "t.jsonl.parts", "-o", f"t.{form}").returncode == 0
        assert len(load_trace(tmp_path / f"t.{form}").events) == whole.count(b"\n") - 2


def test_a_trace_that_cannot_be_written_keeps_the_results_and_the_parts(tmp_path):
    """EFBIG in the middle of the merge: results printed, the file and how far it got
    named, exit 1, the parts kept; ``cpl merge`` later rebuilds the trace as the run
    ended (its meta left beside the logs)."""
    done = cpl(tmp_path, "run", CODE_REVIEW, "--arg", "rounds=30", "--trace", "t.jsonl",
               limit=100_000)
    assert done.returncode == 1, done.stderr
    assert [line.split(" ")[0] + " " for line in done.stdout.splitlines()] == \
        list(RESULT_LINES)
    assert "cpl run: t.jsonl: cannot write the trace: no room for it (File too large); " \
           "written: 100,000 bytes (at least " in done.stderr, done.stderr
    assert "cpl merge t.jsonl.parts -o t.jsonl" in done.stderr
    parts = tmp_path / "t.jsonl.parts"
    assert logged_events(parts) > 500 and (parts / "end.json").exists()
    merged = cpl(tmp_path, "merge", "t.jsonl.parts", "-o", "t.jsonl")
    assert merged.returncode == 0, merged.stderr
    trace = load_trace(tmp_path / "t.jsonl")
    assert trace.meta["status"] == "ok" and trace.meta["results"]["Orchestrator"]["round"] == 30
    assert len(trace.events) == logged_events(parts)
    check_semantics(trace)


def test_a_simulated_run_that_cannot_write_its_trace_still_prints_its_results(tmp_path):
    done = cpl(tmp_path, "run", CODE_REVIEW, "--sim", "--arg", "rounds=30", "--trace",
               "t.jsonl", limit=50_000)
    assert done.returncode == 1, done.stderr
    assert len(done.stdout.splitlines()) == 4
    assert "t.jsonl: cannot write the trace: no room for it" in done.stderr
    assert "merge" not in done.stderr  # nothing to merge from: the simulator wrote alone


def test_a_merge_that_cannot_write_leaves_the_trace_and_the_parts_as_they_were(tmp_path):
    trace_path, parts = _killed_run(tmp_path, "t.jsonl")
    before = trace_path.read_bytes()
    logs = {log.name: log.read_bytes() for log in parts.iterdir()}
    # Room for what the trace held before, without its end: the merged trace cannot fit,
    # however few events the kill left (a fixed 20,000 bytes held a run killed at 63)
    failed = cpl(tmp_path, "merge", "t.jsonl.parts", "-o", "t.jsonl", limit=len(before))
    assert failed.returncode == 1
    assert "t.jsonl: cannot write the trace: no room for it (File too large); written:" \
        in failed.stderr and "as they were" in failed.stderr, failed.stderr
    assert trace_path.read_bytes() == before
    assert {log.name: log.read_bytes() for log in parts.iterdir()} == logs
    assert not [name for name in os.listdir(tmp_path) if "merging" in name]


# ---------------------------------------------------------------- hostile parts

RUN_JSON = {"format": "cpl-parts/1",
            "header": {"lifelines": ["A", "B"], "vars": ["x"], "init": {"A": {}, "B": {}}},
            "meta": {"choreography": "c", "seed": 0, "inputs": {}, "run": "r"}}
A_SEND = '{"id": "A.1", "lifeline": "A", "kind": "send", "to": "B", "msg": "A:1"}\n'
B_RECV = '{"id": "B.1", "lifeline": "B", "kind": "recv", "msg": "A:1", "set": {"x": 1}}\n'


def _parts(folder, run=RUN_JSON, logs=(A_SEND, B_RECV), name="p"):
    parts = folder / name
    parts.mkdir()
    if run is not None:
        (parts / "run.json").write_text(run if isinstance(run, str) else json.dumps(run))
    for index, text in enumerate(logs):
        if text is not None:
            (parts / f"{index}.jsonl").write_bytes(text if isinstance(text, bytes)
                                                   else text.encode())
    return parts


@pytest.mark.parametrize("run, logs, code, said", [
    (RUN_JSON, (A_SEND, B_RECV), 0, "2 events of 2 lifelines, 0 messages in transit"),
    (RUN_JSON, (A_SEND, None), 0, "1 event of 2 lifelines, 1 message in transit"),
    (RUN_JSON, (A_SEND, B_RECV[:30]), 0, "1 event of"),  # a line cut by the crash
    (RUN_JSON, (A_SEND + "garbage\n" + A_SEND, B_RECV), 1, "line 2 of p/0.jsonl is not JSON"),
    (RUN_JSON, (A_SEND, A_SEND), 1,  # A's line in B's log
     'line 1 of p/1.jsonl is an event of "A", not of "B" whose log this is'),
    (RUN_JSON, (B_RECV, A_SEND), 1, "0 events"),  # each log another's: nothing placed
    (RUN_JSON, (b"\xff\xfe\n", B_RECV), 1, "line 1 of p/0.jsonl is not JSON"),
    (RUN_JSON, (A_SEND.replace('"A:1"', '"A:1", "label": "\\udc80"'), None), 1,
     "line 1 of p/0.jsonl holds a lone surrogate, which no trace can hold"),
    (RUN_JSON, (A_SEND.replace('"A:1"', '"A:1", "label": "\\ud83d\\ude00"'), None), 0,
     "1 event of"),
    (RUN_JSON, ('{"id": "A.1", "lifeline": "A", "kind": "act", "time": 1e999}\n', None), 1,
     "0 events of 2 lifelines, 0 messages in transit, 1 unplaced"),
    (RUN_JSON, ('{"id": "A.1", "lifeline": "A", "kind": "act", "set": ' + "[" * 5000 +
                "]" * 5000 + "}\n", None), 1, "line 1 of p/0.jsonl is nested too deep"),
    (None, (A_SEND, B_RECV), 1, "run.json: cannot read it"),
    ("{not json", (), 1, "not JSON"),
    ("[" * 100_000, (), 1, "not JSON"),
    ('{"format": "cpl-parts/1", "header": {"lifelines": ["A", "A"]}, "meta": {}}', (), 1,
     "distinct names"),
    ('{"format": "cpl-parts/1", "header": {"lifelines": [], "events": []}, "meta": {}}', (), 1,
     "no trace header has"),
    ('{"format": "cpl-parts/1", "header": {"lifelines": [1]}, "meta": []}', (), 1,
     "must be objects"),
    ('{"format": "cpl-parts/1", "header": {"lifelines": ["A"], "init": {"Z": {}}}, '
     '"meta": {}}', (), 1, "do not make a valid trace"),
    ('{"format": "other"}', (), 1, "not a run's parts"),
    ('{"format": "cpl-parts/1", "header": {"lifelines": ["A"], "init": [1]}, "meta": {}}', (), 1,
     '"init" must be an object of objects'),
    ('{"format": "cpl-parts/1", "header": {"lifelines": ["A"], "vars": 7}, "meta": {}}', (), 1,
     '"vars" must be a list'),
], ids=["whole", "a log missing", "a cut line", "garbage", "another's line", "crossed logs",
        "not utf-8", "a lone surrogate", "a surrogate pair", "infinite time", "deep value",
        "no run.json", "run.json not json", "run.json deep", "a lifeline twice",
        "an unknown header field", "wrong types", "init of no lifeline", "another format",
        "init a list", "vars a number"])
def test_hostile_parts_give_a_clear_error_never_a_traceback(tmp_path, run, logs, code, said):
    _parts(tmp_path, run, logs)
    merged = cpl(tmp_path, "merge", "p", "-o", "t.jsonl")
    assert merged.returncode == code, merged.stderr
    assert said in merged.stdout + merged.stderr, merged.stdout + merged.stderr
    assert "Traceback" not in merged.stderr and "internal error" not in merged.stderr
    if code == 0:
        assert load_trace(tmp_path / "t.jsonl").meta["status"] == "vanished"
    elif logs and not said.startswith("run.json"):  # what it could not place is said and kept
        assert "cpl merge: t.jsonl is incomplete: " in merged.stderr, merged.stderr
        meta = load_trace(tmp_path / "t.jsonl").meta
        assert meta["status"] == "incomplete" and meta["incomplete"]["ended"]["status"] == \
            "vanished"
        kept = (tmp_path / "t.jsonl.unplaced.jsonl").read_text().splitlines()
        assert len(kept) == 1 + meta["unplaced"] > 1, kept
    else:
        assert not (tmp_path / "t.jsonl").exists()
        assert [name for name in os.listdir(tmp_path)] == ["p"]


def test_odd_files_in_the_parts_are_not_logs(tmp_path):
    """A log that is a folder, a FIFO (which would block a reader) or a link to an endless
    device: never read, and the trace says so (incomplete, exit 1); a missing folder and
    odd names are clear errors."""
    parts = _parts(tmp_path, logs=())
    (parts / "0.jsonl").mkdir()
    os.mkfifo(parts / "1.jsonl")
    merged = cpl(tmp_path, "merge", "p", "-o", "t.jsonl", timeout=20)
    assert merged.returncode == 1 and "0 events" in merged.stdout, merged.stderr
    assert "the merge could not read all of 2 lifelines' logs; the first: p/0.jsonl is not a " \
           "regular file" in merged.stderr, merged.stderr
    os.rmdir(parts / "0.jsonl")
    os.symlink("/dev/zero", parts / "0.jsonl")
    merged = cpl(tmp_path, "merge", "p", "-o", "u.jsonl", timeout=20)
    assert merged.returncode == 1 and "0 events" in merged.stdout, merged.stderr
    assert load_trace(tmp_path / "u.jsonl").meta["status"] == "incomplete"
    odd = _parts(tmp_path, name="a b\u00e9 \u2028")
    merged = cpl(tmp_path, "merge", odd.name, "-o", "v w.jsonl")
    assert merged.returncode == 0, merged.stderr
    for missing in ("nowhere", "p/run.json", ""):
        told = cpl(tmp_path, "merge", missing, "-o", "x.jsonl")
        assert told.returncode == 1 and "Traceback" not in told.stderr, told.stderr
    told = cpl(tmp_path, "merge", "p", "-o", "nowhere/x.jsonl")
    assert told.returncode == 2 and "nowhere/x.jsonl" in told.stderr, told.stderr


def test_a_trace_header_names_its_parts_only_beside_it(tmp_path):
    header = {"format": "cpl-msc/1", "lifelines": ["A"]}
    for bad in ("../elsewhere", "/etc", "", ".", 7):
        (tmp_path / "t.jsonl").write_text(json.dumps({**header, "parts": bad}) + "\n")
        told = cpl(tmp_path, "eval", "t.jsonl", "true")
        assert told.returncode == 1 and '"parts" must name a folder beside the trace' \
            in told.stderr, told.stderr


def test_a_full_disk_is_worded_as_a_size_limit_is(tmp_path):
    """ENOSPC (/dev/full) says what EFBIG says: no room, the path, how far it got."""
    told = cpl(tmp_path, "run", str(EXAMPLES / "relay.py"), "--sim", "--trace", "/dev/full")
    assert told.returncode == 2, told.stderr
    assert "/dev/full: cannot write the trace: no room for it (No space left on device); " \
           "written: 0 bytes (at least 0 of 0 events)" in told.stderr, told.stderr


def test_a_log_line_longer_than_the_limit_ends_that_log(tmp_path, monkeypatch):
    from cpl.trace import logtail
    monkeypatch.setattr(logtail, "MAX_LINE", len(A_SEND))
    log = tmp_path / "0.jsonl"
    log.write_text(A_SEND + A_SEND.replace("A.1", "A.22").replace("A:1", "A:2"))
    tail = logtail.LogTail(str(log), "A")
    assert [event["id"] for event in iter(tail.take, None)] == ["A.1"]
    assert (tail.stop.line, tail.stop.offset) == (2, len(A_SEND))
    assert tail.stop.why.startswith("is longer than")


def test_a_merge_opens_every_log_even_past_a_low_limit_on_open_files(tmp_path):
    """Each log is open at once while merging; one that cannot be opened would read as empty,
    and its lifeline's events would be silently lost."""
    import json
    import resource
    import subprocess
    import sys
    lifelines = [f"L{i}" for i in range(300)]
    for index, name in enumerate(lifelines):
        event = {"id": f"{name}.1", "lifeline": name, "kind": "act", "set": {"x": index},
                 "time": float(index)}
        (tmp_path / f"{index}.jsonl").write_text(json.dumps(event) + "\n")
    script = (
        "import sys\n"
        "from cpl.trace import merge_logs as merge, read_log\n"
        f"names = tuple({lifelines!r})\n"
        f"logs = {{n: read_log(r'{tmp_path}/' + str(i) + '.jsonl', n) "
        "for i, n in enumerate(names)}\n"
        "written = []\n"
        "merge(logs, names, written.append)\n"
        "print(len(written))\n")
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 20_000)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(len(lifelines))
