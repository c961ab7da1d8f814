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
from pathlib import Path

from cpl.semantics.reference import recheck
from cpl.trace import load_trace

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "runtime.cli"]


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
        for host, words in commands:
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
