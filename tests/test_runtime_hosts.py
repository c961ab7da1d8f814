"""``cpl run --hosts``: lifelines placed on other hosts join with the printed command.

The hosts are loopback addresses (127.0.0.2, 127.0.0.3): each placed lifeline
binds its inbox there, reads its keys from a per-host connection file that
only its owner can read, and ships its event log to the supervisor.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from cpl.semantics.reference import recheck
from cpl.trace import load_trace
from runtime_util import Cpl, tagged, tagged_env, wait_until

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "cpl_cli"]


def test_lifelines_placed_on_other_hosts_join_by_the_printed_command(tmp_path):
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"supervisor": "127.0.0.1", "hosts": {
        "127.0.0.2": ["TestRunner"], "127.0.0.3": ["Security", "Committer"]}}))
    trace = tmp_path / "t.json"
    run = subprocess.Popen([*CLI, "run", str(ROOT / "examples" / "code_review.py"), "--hosts",
                            str(hosts), "--arg", "rounds=3", "--trace", str(trace)],
                           cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    joined = []
    try:
        commands = []
        while len(commands) < 3:  # the supervisor prints one command per placed lifeline
            line = run.stderr.readline()
            assert line, "the supervisor ended before printing the commands"
            found = re.search(r"on (\S+): cpl (lifeline .*)$", line)
            if found:
                commands.append((found.group(1), found.group(2).split()))
        for _, words in commands:
            connection = Path(words[words.index("--connection") + 1])
            assert oct(connection.stat().st_mode & 0o777) == "0o600"
            assert "secret" in connection.read_text()  # the keys travel in the file only
            joined.append(subprocess.Popen([*CLI, *words], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL))
        out, err = run.communicate(timeout=60)
        codes = [process.wait(timeout=15) for process in joined]  # before any kill below
    finally:
        for process in [run, *joined]:
            if process.poll() is None:
                process.kill()
    assert run.returncode == 0, err
    assert out.splitlines()[0].startswith("Orchestrator: round = 3")
    assert codes == [0, 0, 0]
    loaded = load_trace(trace)
    assert loaded.meta["status"] == "ok"
    assert loaded.meta["hosts"] == {"Orchestrator": "127.0.0.1", "TestRunner": "127.0.0.2",
                                    "Security": "127.0.0.3", "Committer": "127.0.0.3"}
    checks = recheck(loaded)
    assert len(checks) == 7 and all(recorded == computed for _, recorded, computed in checks)
    assert not list(tmp_path.glob("cpl-*.json"))  # the connection files go with the run


def test_a_hosts_file_naming_an_unknown_lifeline_is_a_usage_error(tmp_path):
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"hosts": {"127.0.0.2": ["TestRuner"]}}))
    result = subprocess.run([*CLI, "run", str(ROOT / "examples" / "code_review.py"), "--hosts",
                             str(hosts)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "'TestRuner' is not a lifeline of this choreography" in result.stderr


def test_a_connection_file_others_can_read_is_refused(tmp_path):
    path = tmp_path / "open.json"
    path.write_text("{}")
    os.chmod(path, 0o644)
    result = subprocess.run([*CLI, "lifeline", "A", "--connection", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "readable by its owner only" in result.stderr


def _commands(cpl, count: int) -> list[tuple[str, list[str]]]:
    """The ``cpl lifeline ...`` commands the supervisor printed, once it printed ``count``."""
    def printed():
        found = re.findall(r"on (\S+): cpl (lifeline .*)\n", cpl.err)
        return found if len(found) >= count else None
    found = wait_until(printed, 30.0)
    assert found, f"the commands were not printed; stderr:\n{cpl.err}"
    return [(host, words.split()) for host, words in found]


def test_a_placed_lifeline_joining_15_s_late_still_gives_an_ok_run(tmp_path):
    """The local lifelines wait with the supervisor (it pings them from their hello on),
    however long the placed one takes within --join-timeout: nobody is taken for dead."""
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"hosts": {"127.0.0.2": ["TestRunner"]}}))
    trace = tmp_path / "late.jsonl"
    with Cpl(tmp_path, "run", str(ROOT / "examples" / "code_review.py"), "--hosts",
             str(hosts), "--arg", "rounds=3", "--trace", str(trace)) as cpl:
        [(host, words)] = _commands(cpl, 1)
        assert "waiting 300 s for 1 host(s)" in cpl.err
        time.sleep(15.0)
        assert cpl.process.poll() is None, cpl.err
        joined = subprocess.Popen([*CLI, *words], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=tagged_env(cpl.tag))
        assert cpl.wait(60) == 0, cpl.err
        assert joined.wait(15) == 0
    meta = load_trace(trace).meta
    assert meta["status"] == "ok", meta
    assert meta["hosts"]["TestRunner"] == "127.0.0.2" == host
    assert meta["results"]["Orchestrator"]["round"] == 3


def test_a_placed_lifeline_that_never_joins_ends_the_run_as_not_joined_once_the_wait_is_over(
        tmp_path):
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"hosts": {"127.0.0.2": ["TestRunner"]}}))
    trace = tmp_path / "alone.jsonl"
    with Cpl(tmp_path, "run", str(ROOT / "examples" / "code_review.py"), "--hosts",
             str(hosts), "--join-timeout", "3", "--trace", str(trace)) as cpl:
        _commands(cpl, 1)
        printed = time.monotonic()
        code = cpl.wait(30)
        waited = time.monotonic() - printed
        assert "waiting 3 s for 1 host(s)" in cpl.err
        assert code == 1, cpl.err
        assert waited < 3 + 2, f"the run ended {waited:.1f} s after it said it waits 3 s"
        assert "cpl run: not joined: TestRunner" in cpl.err, cpl.err
        assert "died" not in cpl.err and "no answer" not in cpl.err, cpl.err
        assert wait_until(lambda: not tagged(cpl.tag), 5.0), tagged(cpl.tag)
    meta = load_trace(trace).meta
    assert meta["status"] == "not joined" and meta["not_joined"] == ["TestRunner"], meta
    assert "died" not in meta
    assert not list(tmp_path.glob("cpl-*.json"))  # the connection file went with the run


def test_join_timeout_is_for_hosts_and_a_positive_number_of_seconds(tmp_path):
    review = str(ROOT / "examples" / "code_review.py")
    hosts = tmp_path / "hosts.json"
    hosts.write_text(json.dumps({"hosts": {"127.0.0.2": ["TestRunner"]}}))
    for args, said in ([["--join-timeout", "5"], "--join-timeout is how long to wait"],
                       [["--hosts", str(hosts), "--join-timeout", "0"], "seconds > 0"],
                       [["--hosts", str(hosts), "--join-timeout", "nan"], "seconds > 0"]):
        result = subprocess.run([*CLI, "run", review, *args], capture_output=True, text=True,
                                timeout=60, cwd=tmp_path)
        assert result.returncode == 2 and said in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
