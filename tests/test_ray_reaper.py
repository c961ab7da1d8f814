"""The watcher that ends a Ray ``cpl run`` started, once ``cpl run`` is gone
(``runtime.supervisor.ray_reaper``), without Ray: a driver that starts it and stand-ins for
Ray's processes (holding a file in the folder, or working in it, each in a process
group of its own in the driver's session, as Ray's workers are), and one of another
session working there too (someone reading the logs), then the driver killed with -9
or ended."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from runtime_util import ROOT, wait_until

DRIVER = textwrap.dedent("""
    import subprocess, sys, time
    from runtime.supervisor.ray_reaper import Reaper
    folder = sys.argv[1]
    reaper = Reaper(folder)
    open(folder + "/driver.log", "w")  # the driver holds a file there too (Ray's does)
    keeps = [
        subprocess.Popen(["sleep", "300"], stdout=open(folder + "/a.log", "w"),
                         process_group=0),  # a file open in the folder
        subprocess.Popen(["sleep", "301"], cwd=folder, process_group=0),  # working there
        subprocess.Popen(["sleep", "302"], cwd=folder, start_new_session=True),  # not ours
    ]
    print(" ".join(str(p.pid) for p in keeps), flush=True)
    if sys.argv[2] == "end":
        reaper.close()
        print("closed", flush=True)
    time.sleep(300)
""")


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


def driver(folder, how: str) -> tuple[subprocess.Popen, list[int]]:
    process = subprocess.Popen([sys.executable, "-c", DRIVER, str(folder), how],
                               stdout=subprocess.PIPE, text=True, cwd=ROOT,
                               env=dict(os.environ, PYTHONPATH=str(ROOT)),
                               start_new_session=True)
    pids = [int(pid) for pid in process.stdout.readline().split()]
    assert len(pids) == 3 and all(map(alive, pids))
    return process, pids


def test_a_driver_killed_with_9_leaves_no_process_holding_the_folder_nor_the_folder(tmp_path):
    folder = tmp_path / "session"
    folder.mkdir(mode=0o700)
    process, pids = driver(folder, "wait")
    ours, outsider = pids[:2], pids[2]
    try:
        time.sleep(0.3)
        assert all(map(alive, pids)) and folder.exists()  # nothing happens while it lives
        process.kill()
        killed = time.monotonic()
        process.wait(10)
        assert wait_until(lambda: not any(map(alive, ours)) and not folder.exists(), 10), \
            ([pid for pid in ours if alive(pid)], folder.exists())
        assert time.monotonic() - killed < 3
        assert alive(outsider)  # of another session: not the run's
    finally:
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_driver_that_ends_the_watcher_itself_is_spared(tmp_path):
    """A normal end: the driver closes the pipe and waits; the watcher cleans up around it
    (the driver holds a file in the folder, as Ray's driver does) and ends."""
    folder = tmp_path / "session"
    folder.mkdir(mode=0o700)
    process, pids = driver(folder, "end")
    try:
        assert process.stdout.readline().strip() == "closed"
        assert alive(process.pid) and not any(map(alive, pids[:2])) and not folder.exists()
        assert alive(pids[2])
    finally:
        process.kill()
        process.wait(10)
        for pid in pids:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
