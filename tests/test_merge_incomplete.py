"""Nothing lost, no "ok" unearned: a merge that cannot place every event says so
(also for ``time``s of the wrong type, and within ``cpl merge``'s memory bound).

Each trigger the campaign found dropped events while the trace said ``ok`` and ``cpl
merge`` exited 0: two of three agents' logs, one forged token, a log that could not be
opened under a low limit on open files, a line over 64 MiB, a log whose header names
another lifeline.  Here each gives an ``incomplete`` trace naming the first event not
placed, its log and why (exit 1), every line not placed kept beside the trace, and the
readers say so before anything else.  Conservation is checked throughout: the events in
the trace plus those kept are every event the logs hold.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys

import pytest

from cpl.live import System
from cpl.trace import load_trace
from cpl_cli import main
from runtime_util import CPL, ROOT, tagged_env

MERGE = "@TestRunner(status != failed S status == passed)"
A_RUN = {"format": "cpl-parts/1",
         "header": {"lifelines": ["A", "B"], "vars": ["x"], "init": {"A": {}, "B": {}}},
         "meta": {"choreography": "c", "seed": 0, "inputs": {}, "run": "r"}}


def cpl(folder, *args, limit_files: int | None = None, timeout: float = 60.0):
    """``cpl args`` to its end; ``limit_files``: under that limit on open files, soft and
    hard (so nothing can lift it)."""
    def limited():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit_files, limit_files))
    return subprocess.run([*CPL, *args], cwd=folder, capture_output=True, text=True,
                          timeout=timeout, env=tagged_env("merge-incomplete"),
                          preexec_fn=limited if limit_files else None)


def system() -> System:
    return System(["Author", "TestRunner", "Committer"], {"merge": ("Committer", MERGE)},
                  ["status"])


def review(folder, forged: bool = False) -> None:
    """Agents' logs in ``folder/logs``: Author asks, TestRunner reports, Committer decides
    and tells Author; ``forged``: Committer takes a token TestRunner never sent (from a
    copy of TestRunner that logs nothing) before the genuine one."""
    s = system()
    agents = {name: s.agent(name, log=str(folder / "logs") + "/") for name in s.lifelines}
    author, runner, committer = agents["Author"], agents["TestRunner"], agents["Committer"]
    runner.receive(author.send("TestRunner", "ask"))
    runner.act(status="passed")
    report = runner.send("Committer", "report")
    if forged:
        impostor = system().agent("TestRunner")
        for _ in range(5):
            token = impostor.send("Committer", "report")
        committer.receive(token)
    committer.receive(report)
    committer.decide("merge")
    author.receive(committer.send("Author", "done"))
    author.act()
    for agent in agents.values():
        agent.close()


def logged(paths) -> int:
    """Events in agents' logs or a run's logs (lines but headers and end lines)."""
    count = 0
    for path in paths:
        for line in path.read_text().splitlines():
            value = json.loads(line)
            count += "kind" in value
    return count


def kept(folder, trace="t.jsonl") -> list[dict]:
    lines = (folder / f"{trace}.unplaced.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"format": "cpl-unplaced/1", "trace": trace}
    return [json.loads(line) for line in lines[1:]]


def incomplete(merged, folder, trace="t.jsonl") -> dict:
    """The merged trace's meta, checked to be an incomplete one said as such."""
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert f"cpl merge: {trace} is incomplete: the merge could not" in merged.stderr
    assert "Traceback" not in merged.stderr and "internal error" not in merged.stderr
    meta = load_trace(folder / trace).meta
    assert meta["status"] == "incomplete" and meta["error"] in merged.stderr
    return meta


def test_two_of_three_agents_logs_name_the_receive_and_the_missing_log(tmp_path):
    review(tmp_path)
    logs = tmp_path / "logs"
    merged = cpl(tmp_path, "merge", "logs/Author.jsonl", "logs/Committer.jsonl", "-o", "t.jsonl")
    meta = incomplete(merged, tmp_path)
    assert "the first: line 2 of logs/Committer.jsonl (Committer.1) is a receive of " \
           "TestRunner:1, whose send is in none of the logs (there is no log of TestRunner)" \
           in meta["error"]
    about = meta["incomplete"]
    assert (about["lifeline"], about["event"], about["line"]) == ("Committer", "Committer.1", 2)
    assert about["ended"] == {"status": "ok"} and about["kept"] == "t.jsonl.unplaced.jsonl"
    trace = load_trace(tmp_path / "t.jsonl")
    events = [line.get("event") for line in kept(tmp_path)]
    assert len(trace.events) + len(events) == logged([logs / "Author.jsonl",
                                                        logs / "Committer.jsonl"])
    assert [event["id"] for event in events] == ["Author.2", "Author.3", "Committer.1",
                                                 "Committer.2", "Committer.3"]
    said = cpl(tmp_path, "eval", "t.jsonl")
    assert said.stderr.startswith("warning: t.jsonl is incomplete: the merge could not place "
                                  "every event: 5 lines of 2 lifelines' logs not placed"), \
        said.stderr
    whole = cpl(tmp_path, "merge", "logs", "-o", "t.jsonl", "--force")  # every log: whole,
    assert whole.returncode == 0, whole.stderr  # and what an earlier merge kept is gone
    assert load_trace(tmp_path / "t.jsonl").meta["status"] == "ok"
    assert not (tmp_path / "t.jsonl.unplaced.jsonl").exists()


def test_one_forged_token_keeps_what_follows_it_and_names_it(tmp_path, capsys, monkeypatch):
    review(tmp_path, forged=True)
    merged = cpl(tmp_path, "merge", "logs", "-o", "t.jsonl")
    meta = incomplete(merged, tmp_path)
    assert meta["incomplete"]["event"] == "Committer.1" and "is a receive of TestRunner:5, " \
        "whose send is in none of the logs;" in meta["error"]
    trace, events = load_trace(tmp_path / "t.jsonl"), kept(tmp_path)
    assert len(trace.events) + len(events) == logged((tmp_path / "logs").iterdir())
    assert {line["lifeline"] for line in events} == {"Committer", "Author"}  # and after it
    assert meta["unplaced"] == len(events) == 6
    for command in (["eval", "t.jsonl"], ["explain", "t.jsonl", "Committer.3"],
                    ["render", "t.jsonl", "-o", "t.dot"], ["detect", "t.jsonl"],
                    ["export", "t.jsonl", "--otlp", "t.otlp.json"]):
        monkeypatch.chdir(tmp_path)
        main(command)
        said = capsys.readouterr().err
        assert said.startswith("warning: t.jsonl is incomplete: "), (command, said)


def test_a_log_header_naming_another_lifeline_is_said_not_silently_empty(tmp_path):
    review(tmp_path)
    logs = tmp_path / "logs"
    runner = (logs / "TestRunner.jsonl").read_text().splitlines()
    header = json.loads(runner[0])
    (logs / "Author.jsonl").write_text("\n".join([json.dumps({**header, "lifeline": "Author"}),
                                                  *runner[1:]]) + "\n")
    (logs / "TestRunner.jsonl").unlink()
    merged = cpl(tmp_path, "merge", "logs", "-o", "t.jsonl")
    meta = incomplete(merged, tmp_path)
    assert 'the first: line 2 of logs/Author.jsonl is an event of "TestRunner", not of ' \
           '"Author" whose log this is' in meta["error"]
    assert len(load_trace(tmp_path / "t.jsonl").events) + len(kept(tmp_path)) == \
        logged(logs.iterdir())


def parts(folder, logs: list[list], lifelines=("A", "B")) -> None:
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps(
        {**A_RUN, "header": {**A_RUN["header"], "lifelines": list(lifelines),
                             "init": {name: {} for name in lifelines}}}))
    for index, events in enumerate(logs):
        (folder / f"{index}.jsonl").write_bytes(b"".join(
            event if isinstance(event, bytes) else json.dumps(event).encode() + b"\n"
            for event in events))


def ring(size: int) -> tuple[list[list], tuple[str, ...]]:
    """Logs of ``size`` lifelines in a ring: each acts, sends to the next, receives."""
    names = [f"L{index}" for index in range(size)]
    return [[{"id": f"{name}.1", "lifeline": name, "kind": "act", "set": {"x": index},
              "time": 1.0 + index / 1e6},
             {"id": f"{name}.2", "lifeline": name, "kind": "send", "to": names[(index + 1) % size],
              "msg": f"{name}:1", "time": 2.0 + index / 1e6},
             {"id": f"{name}.3", "lifeline": name, "kind": "recv",
              "msg": f"{names[index - 1]}:1", "time": 3.0 + index / 1e6}]
            for index, name in enumerate(names)], tuple(names)


def test_200_logs_under_a_limit_of_64_open_files_are_all_merged(tmp_path):
    """A log that could not be opened was read as empty (749 of 6,001 events, exit 0)."""
    logs, names = ring(200)
    parts(tmp_path / "p", logs, names)
    merged = cpl(tmp_path, "merge", "p", "-o", "t.jsonl", limit_files=64)
    assert merged.returncode == 0, merged.stderr
    assert merged.stdout.startswith("t.jsonl: 600 events of 200 lifelines, 0 messages in "
                                    "transit, 0 unplaced"), merged.stdout
    assert load_trace(tmp_path / "t.jsonl").meta["status"] == "vanished"


def test_a_line_over_64_mib_stops_its_log_and_the_rest_is_kept(tmp_path):
    """A real line of 65 MiB (the limit is the trace reader's): the events after it, and
    the receive of the message sent after it, are kept; the line is named, not copied."""
    long = b'{"id": "A.2", "lifeline": "A", "kind": "act", "label": "' + b"x" * (65 << 20) \
        + b'", "time": 2}\n'
    parts(tmp_path / "p", [
        [{"id": "A.1", "lifeline": "A", "kind": "act", "time": 1}, long,
         {"id": "A.3", "lifeline": "A", "kind": "send", "to": "B", "msg": "A:1", "time": 3}],
        [{"id": "B.1", "lifeline": "B", "kind": "act", "time": 1.5},
         {"id": "B.2", "lifeline": "B", "kind": "recv", "msg": "A:1", "time": 4}]])
    merged = cpl(tmp_path, "merge", "p", "-o", "t.jsonl")
    meta = incomplete(merged, tmp_path)
    assert "the first: line 2 of p/0.jsonl is longer than 64 MiB" in meta["error"]
    assert [event.id for event in load_trace(tmp_path / "t.jsonl").events] == ["A.1", "B.1"]
    lines = kept(tmp_path)
    assert [(line["line"], line.get("too_long"), line.get("event", {}).get("id"))
            for line in lines] == [(2, True, None), (3, None, "A.3"), (2, None, "B.2")]


@pytest.mark.parametrize("time", ['"yesterday"', "[1]", "true", "NaN"])
def test_an_event_time_of_the_wrong_type_is_named(tmp_path, time):
    """``"time": "yesterday"`` or ``[1]`` was ``internal error: TypeError``."""
    parts(tmp_path / "p", [
        [{"id": "A.1", "lifeline": "A", "kind": "act", "time": 1},
         b'{"id": "A.2", "lifeline": "A", "kind": "act", "time": ' + time.encode() + b"}\n"],
        [{"id": "B.1", "lifeline": "B", "kind": "act", "time": 2}]])
    merged = cpl(tmp_path, "merge", "p", "-o", "t.jsonl")
    meta = incomplete(merged, tmp_path)
    assert f'the first: line 2 of p/0.jsonl (A.2) cannot be placed: its "time" is ' \
           f'{json.dumps(json.loads(time))}, not a number of seconds' in meta["error"]


def test_a_merge_of_2000_tiny_logs_stays_small(tmp_path):
    """Every event carries a clock of every lifeline, so the merge kept 2,000 clocks
    of 2,000 entries and its check of the trace decoded 2,048 such lines at once (860 MB
    for 2,000 logs of 3 events; 48 MB now).  500 logs here, to stay quick: 98 MB before,
    41 MB now, most of it the interpreter and its modules."""
    logs, names = ring(500)
    parts(tmp_path / "p", logs, names)
    script = ("import resource, subprocess\n"
              f"done = subprocess.run({[*CPL, 'merge', 'p', '-o', 't.jsonl']!r})\n"
              "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    ran = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120, env=tagged_env("merge-incomplete"))
    code, kib = map(int, ran.stdout.split()[-2:])
    assert code == 0, ran.stderr
    assert kib < 70 << 10, f"cpl merge of 500 logs took {kib >> 10} MB"


def test_a_run_whose_last_merge_cannot_place_a_receive_ends_incomplete_and_keeps_its_parts(
        tmp_path, monkeypatch, capsys):
    """The supervisor merges with the same code: a log line it cannot place (here the first
    receive it reads is made to name a message nobody sent, as a damaged log would) ends
    the run ``incomplete`` (exit 1) whatever its own end, which the trace keeps; the parts
    stay, holding what the trace lacks, and ``cpl merge`` of them says the same."""
    import runtime.supervisor.following as following
    from cpl_cli import main

    class Damaged(following.LogTail):
        forged: list = []

        def take(self):
            event = super().take()
            if event is not None and event["kind"] == "recv" and not self.forged:
                self.forged.append(event["id"])
                event = {**event, "msg": "Nobody:1"}
            return event
    monkeypatch.setattr(following, "LogTail", Damaged)
    monkeypatch.chdir(tmp_path)
    code = main(["run", str(ROOT / "examples" / "relay.py"), "--trace", "t.jsonl"])
    told = capsys.readouterr().err
    assert code == 1, told
    meta = load_trace(tmp_path / "t.jsonl").meta
    assert meta["status"] == "incomplete" and meta["incomplete"]["ended"] == {"status": "ok"}
    assert meta["incomplete"]["event"] == Damaged.forged[0] and "is a receive of Nobody:1, " \
        "whose send is in none of the logs" in meta["error"], meta
    assert meta["incomplete"]["kept"] == "t.jsonl.parts" and f"cpl run: {meta['error']}" in told
    assert (tmp_path / "t.jsonl.parts" / "end.json").exists()
    monkeypatch.undo()
    merged = cpl(tmp_path, "merge", "t.jsonl.parts", "-o", "t.jsonl")  # the logs are whole:
    assert merged.returncode == 0, merged.stderr  # the run's own end comes back
    assert load_trace(tmp_path / "t.jsonl").meta["status"] == "ok"


def test_an_incomplete_merge_to_standard_output_keeps_its_lines_beside_the_logs(tmp_path):
    review(tmp_path)
    merged = cpl(tmp_path, "merge", "logs/Author.jsonl", "logs/Committer.jsonl", "-o", "-")
    assert merged.returncode == 1 and "Traceback" not in merged.stderr, merged.stderr
    meta = json.loads(merged.stdout)["meta"]  # the trace, on stdout
    assert meta["status"] == "incomplete"
    assert meta["incomplete"]["kept"] == "logs/Author.jsonl.unplaced.jsonl"
    lines = (tmp_path / "logs/Author.jsonl.unplaced.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"format": "cpl-unplaced/1", "trace": "-"}
    assert len(lines) == 1 + 5
