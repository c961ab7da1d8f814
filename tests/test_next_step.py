"""Errors that name the next step, each message as its exact text.

Agents' logs given where a trace is expected say which ``cpl merge`` to run;
a merge of logs never closed names the agents that vanished; an agent keeps
an earlier run's log unless told to replace it; a merged trace gets the mode
any new file gets (as a run's trace does); an action that raises shows the
user's own traceback and names an event the trace holds.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cpl.live import LiveError, LogExists, System
from cpl.trace import load_trace

ROOT = Path(__file__).resolve().parent.parent


def cpl(*args, cwd, umask=None):
    return subprocess.run([sys.executable, "-m", "cpl_cli", *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          preexec_fn=None if umask is None else lambda: os.umask(umask))


def system() -> System:
    return System(["Builder", "Tester"], {"ship": ("Builder", "@Tester(result == passed)")},
                  ["result"])


def record(folder: Path, close: bool = True, **options) -> None:
    """Two agents' logs in ``folder``: Tester passes, tells Builder, Builder ships."""
    s = system()
    builder = s.agent("Builder", log=str(folder), **options)
    tester = s.agent("Tester", log=str(folder), **options)
    tester.act(result="passed")
    builder.receive(tester.send("Builder", "report"))
    assert builder.decide("ship") is True
    if close:
        builder.close()
        tester.close()


# ------------------------------------------------ a log where a trace is expected

COMMANDS = {
    "eval": ("eval", "{}"),
    "render": ("render", "{}", "-o", "t.svg"),
    "explain": ("explain", "{}", "Builder.3"),
    "export": ("export", "{}", "--otlp", "t.json"),
    "detect": ("detect", "{}"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_log_or_log_folder_given_as_a_trace_says_to_merge_it_first(tmp_path, command):
    record(tmp_path / "logs")
    for given, what in (("logs", "a folder of agents' logs (cpl.live)"),
                        ("logs/Tester.jsonl", "an agent's log (cpl.live)")):
        ran = cpl(*(word.format(given) for word in COMMANDS[command]), cwd=tmp_path)
        assert (ran.returncode, ran.stdout) == (1, ""), ran.stderr
        assert ran.stderr == (f"error: {given}: {what}, not a trace: merge the agents' logs "
                              f"into one trace first: cpl merge logs -o run.jsonl\n")
    assert sorted(os.listdir(tmp_path)) == ["logs"]  # nothing drawn or exported


def test_the_merge_it_names_works_as_printed(tmp_path):
    record(tmp_path / "logs")
    said = cpl("eval", "logs/Builder.jsonl", cwd=tmp_path).stderr
    command = said.rstrip("\n").rsplit(": ", 1)[1].split()
    assert command[:2] == ["cpl", "merge"]
    assert cpl(*command[1:], cwd=tmp_path).returncode == 0
    checked = cpl("eval", "run.jsonl", cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.endswith(
        "1 decision re-checked: all agree\n"), checked.stdout + checked.stderr


def test_a_log_beside_other_files_names_the_logs_to_merge(tmp_path):
    """``cpl merge FOLDER`` would refuse a trace among the logs: the logs are named."""
    record(tmp_path)
    (tmp_path / "old.jsonl").write_text('{"format": "cpl-msc/1", "lifelines": ["A"]}\n')
    ran = cpl("eval", "Tester.jsonl", cwd=tmp_path)
    assert ran.stderr == ("error: Tester.jsonl: an agent's log (cpl.live), not a trace: merge "
                          "the agents' logs into one trace first: cpl merge ./Builder.jsonl "
                          "./Tester.jsonl -o run.jsonl\n")


def parts(folder: Path) -> None:
    """A run's parts folder as ``cpl run --trace`` leaves it when its trace is not whole:
    ``run.json`` and a log per lifeline (empty: a run stopped before its first event)."""
    from runtime.supervisor.parts import Parts, log_of
    folder.mkdir()
    Parts(str(folder), {"lifelines": ["Builder", "Tester"]}, {"status": "ok"}).keep()
    for index in range(2):
        Path(log_of(str(folder), index)).touch()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_runs_parts_folder_given_as_a_trace_says_to_merge_it(tmp_path, command):
    parts(tmp_path / "t.jsonl.parts")
    ran = cpl(*(word.format("t.jsonl.parts") for word in COMMANDS[command]), cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (1, ""), ran.stderr
    assert ran.stderr == ("error: t.jsonl.parts: a run's parts folder (its lifelines' logs, "
                          "kept by cpl run until its trace is whole), not a trace: rebuild the "
                          "trace from it first: cpl merge t.jsonl.parts -o t.jsonl\n")
    assert sorted(os.listdir(tmp_path)) == ["t.jsonl.parts"]  # nothing drawn or exported


def test_the_parts_merge_it_names_works_as_printed_and_a_renamed_folder_makes_run_jsonl(
        tmp_path):
    parts(tmp_path / "t.jsonl.parts")
    parts(tmp_path / "kept")
    for folder, trace in (("t.jsonl.parts", "t.jsonl"), ("kept/", "run.jsonl")):
        said = cpl("eval", folder, cwd=tmp_path).stderr
        command = said.rstrip("\n").rsplit(": ", 1)[1].split()
        assert command == ["cpl", "merge", folder, "-o", trace], said
        assert cpl(*command[1:], cwd=tmp_path).returncode == 0
        assert cpl("eval", trace, cwd=tmp_path).returncode == 0


def test_a_folder_without_logs_and_a_broken_trace_say_what_they_said(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "t.jsonl").write_text('{"format": "cpl-msc/1", "lifeline": "A"}\n')
    assert cpl("eval", "empty", cwd=tmp_path).stderr == (
        "error: empty: cannot read the trace: it is a directory; name a trace file in it\n")
    assert "unknown top-level field 'lifeline'" in cpl("eval", "t.jsonl", cwd=tmp_path).stderr


# ------------------------------------------------ merging logs never closed


def test_a_merge_of_logs_never_closed_names_the_agents_on_stderr(tmp_path):
    record(tmp_path / "logs", close=False)
    merged = cpl("merge", "logs", "-o", "run.jsonl", cwd=tmp_path)
    assert merged.returncode == 0  # the trace is whole as far as the logs go: written, said
    assert merged.stdout == "run.jsonl: 4 events of 2 lifelines, 0 messages in transit, " \
                            "0 unplaced\n"
    assert merged.stderr == (
        "cpl merge: warning: 2 agents never closed their logs (killed, or still running): "
        "Builder and Tester\n"
        "  run.jsonl holds every event logged so far and says 'vanished'; if they are still "
        "running, merge again after they close\n")
    assert load_trace(tmp_path / "run.jsonl").meta["status"] == "vanished"


def test_one_agent_never_closed_is_named_alone_and_closed_logs_merge_quietly(tmp_path):
    s = system()
    with s.agent("Builder", log=str(tmp_path / "logs")):
        tester = s.agent("Tester", log=str(tmp_path / "logs"))
        tester.act(result="passed")
    merged = cpl("merge", "logs", "-o", "run.jsonl", cwd=tmp_path)
    assert merged.stderr == (
        "cpl merge: warning: 1 agent never closed its log (killed, or still running): Tester\n"
        "  run.jsonl holds every event logged so far and says 'vanished'; if it is still "
        "running, merge again after it closes\n")
    tester.close()
    again = cpl("merge", "logs", "-o", "again.jsonl", cwd=tmp_path)
    assert (again.returncode, again.stderr) == (0, "")


# ------------------------------------------------ an earlier run's log


def test_an_agent_refuses_to_replace_an_earlier_runs_log(tmp_path):
    record(tmp_path / "logs")
    before = (tmp_path / "logs" / "Builder.jsonl").read_bytes()
    with pytest.raises(LiveError) as refused:
        system().agent("Builder", log=str(tmp_path / "logs"))
    assert str(refused.value) == (
        f"Builder's log {tmp_path / 'logs' / 'Builder.jsonl'} exists already (an earlier "
        f"run's?): move or delete it first (after cpl merge, if its events matter), or give "
        f"overwrite=True with log= to replace it")
    assert isinstance(refused.value, LogExists)  # for a program to catch, with the log's path
    assert refused.value.path == str(tmp_path / "logs" / "Builder.jsonl")
    assert (tmp_path / "logs" / "Builder.jsonl").read_bytes() == before


def test_two_agents_given_one_log_file_do_not_share_it(tmp_path):
    s = system()
    with s.agent("Builder", log=str(tmp_path / "one.jsonl")):
        with pytest.raises(LiveError, match="Tester's log .*one.jsonl exists already"):
            s.agent("Tester", log=str(tmp_path / "one.jsonl"))


def test_overwrite_replaces_an_earlier_runs_log(tmp_path):
    record(tmp_path / "logs")
    record(tmp_path / "logs", overwrite=True)  # the same run again: one run's logs
    merged = cpl("merge", "logs", "-o", "run.jsonl", cwd=tmp_path)
    assert merged.returncode == 0 and merged.stdout.startswith("run.jsonl: 4 events")


# ------------------------------------------------ file modes


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_a_merged_trace_has_the_mode_of_a_run_trace(tmp_path, umask):
    record(tmp_path / "logs")
    assert cpl("merge", "logs", "-o", "merged.jsonl", cwd=tmp_path, umask=umask).returncode == 0
    ran = cpl("run", ROOT / "examples" / "relay.py", "--sim", "--trace", "run.jsonl",
              cwd=tmp_path, umask=umask)
    assert ran.returncode == 0, ran.stderr
    modes = {name: stat.S_IMODE((tmp_path / name).stat().st_mode)
             for name in ("merged.jsonl", "run.jsonl")}
    assert modes == {"merged.jsonl": 0o666 & ~umask, "run.jsonl": 0o666 & ~umask}
    assert [name for name in os.listdir(tmp_path) if "merging" in name] == []


# ------------------------------------------------ an action that raises

PIPELINE = '''from choreo import Choreography
from checks import run_suite

c = Choreography("pipeline")
Builder, Tester = c.lifelines("Builder", "Tester")
result = c.var("result", str)


def build(variables, rng):
    return "built"


async def run_tests(variables, rng):
    return run_suite(variables["result"])


c.act(Builder, build, assigns=[result])
c.send(Builder, Tester, result, label="artifact")
c.act(Tester, run_tests, assigns=[result])
'''

CHECKS = '''def run_suite(artifact):
    return parse(artifact)


def parse(text):
    raise RuntimeError(f"cannot parse {text!r}")
'''

RAISED = '''cpl run: pipeline.py:14: error: Tester, after Tester.1: action 'run_tests' raised RuntimeError: cannot parse 'built'
  where the action raised (most recent call last):
    File "pipeline.py", line 14, in run_tests
      return run_suite(variables["result"])
    File "checks.py", line 2, in run_suite
      return parse(artifact)
    File "checks.py", line 6, in parse
      raise RuntimeError(f"cannot parse {text!r}")
  (trace written to t.jsonl)
'''  # noqa: E501 (what cpl run prints, verbatim)


@pytest.mark.parametrize("mode", ["--sim", "processes"])
def test_an_action_that_raises_shows_the_users_frames_and_an_event_the_trace_holds(
        tmp_path, mode):
    """The frames of the user's two files, none of ours nor asyncio's (the action is
    awaited), without CPL_DEBUG; ``after Tester.1``, the last event the trace holds of
    Tester (the failed one was never taken).  The line is the innermost one in the
    action's own file, as before."""
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    (tmp_path / "checks.py").write_text(CHECKS)
    env = {k: v for k, v in os.environ.items() if k != "CPL_DEBUG"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    ran = subprocess.run([sys.executable, "-m", "cpl_cli", "run", "pipeline.py",
                          "--trace", "t.jsonl", *([mode] if mode == "--sim" else [])],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert ran.returncode == 1
    assert ran.stdout == 'Builder: result = "built"\nTester: result = "built"\n'
    assert ran.stderr == RAISED
    trace = load_trace(tmp_path / "t.jsonl")
    assert [e.id for e in trace.events if e.lifeline == "Tester"][-1] == "Tester.1"
    first, _, rest = RAISED.partition("\n")
    assert trace.meta["error"] == first.removeprefix("cpl run: ")
    assert trace.meta["traceback"] == rest.rsplit("\n  (trace", 1)[0]


def test_a_lifeline_that_fails_before_its_first_event_says_so(tmp_path):
    (tmp_path / "first.py").write_text(
        'from choreo import Choreography\n'
        'c = Choreography("first")\n'
        'A, B = c.lifelines("A", "B")\n'
        'x = c.var("x", int)\n'
        'c.act(A, lambda v, rng: 1 // 0, assigns=[x], label="divide")\n'
        'c.send(A, B, x)\n')
    ran = cpl("run", "first.py", "--sim", cwd=tmp_path)
    assert ran.stderr == (
        "cpl run: first.py:5: error: A, before its first event: action 'divide' raised "
        "ZeroDivisionError: integer division or modulo by zero\n"
        "  where the action raised (most recent call last):\n"
        '    File "first.py", line 5, in <lambda>\n'
        "      c.act(A, lambda v, rng: 1 // 0, assigns=[x], label=\"divide\")\n")


def test_a_deep_traceback_keeps_its_innermost_frames_and_a_recursion_is_one_line():
    from choreo.execution.actions import MOST_FRAMES, user_traceback
    namespace: dict = {}
    exec("def f0():\n    raise ValueError('deep')\n" + "".join(
        f"def f{k}():\n    return f{k - 1}()\n" for k in range(1, 30)), namespace)
    try:
        namespace["f29"]()
    except ValueError as error:
        lines = user_traceback(error).split("\n")
    assert lines[:2] == ["  where the action raised (most recent call last):",
                         f"    ... {31 - MOST_FRAMES} earlier frames"]
    assert lines[-1] == '    File "<string>", line 2, in f0'  # no source: a line a frame
    assert len(lines) == 2 + MOST_FRAMES

    def down(n):
        return down(n + 1)
    try:
        down(0)
    except RecursionError as error:
        text = user_traceback(error)
    assert "in down\n      return down(n + 1)\n    [Previous line repeated " in text
    assert text.count("in down") == 3 and "in test_a_deep_traceback" in text
