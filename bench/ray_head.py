"""The bench's own Ray head, on loopback: started once, its processes' CPU sampled, stopped.

A session of its own (``ray start --head --block``) so that everything it starts
can be found and ended; :data:`RAY_ENV` in the environment of every process of the
bench keeps one auth mode and keeps 127.0.0.1 on loopback (see ray_launcher.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from stream_throughput import environment

ROOT = Path(__file__).resolve().parent.parent
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
HEAD_TIMEOUT = 120.0  # seconds for `ray start --head` to say it started
SETTLE_MAX = 20.0  # seconds to wait for a quiet cluster before a candidate
QUIET = 0.05  # cores: the cluster is quiet below this (over half a second)
TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def ray_environment(**extra: str) -> dict:
    return {**environment(), **RAY_ENV, **extra}


def load() -> float:
    """The 1-minute load average."""
    return os.getloadavg()[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def session_processes(session: int) -> dict[int, tuple[int, float, int]]:
    """{pid: (start time in ticks, CPU seconds, RSS bytes)} of the processes of ``session``
    (Ray's workers each lead a process group of their own, in the head's session)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == session:  # fields[0] is the state: session is stat's 6th field
            # utime stime cutime cstime: the raylet does not wait for its workers, so a
            # dead worker's time is not in its cutime; CPUSampler catches them alive
            found[int(entry)] = (int(fields[19]), sum(map(int, fields[11:15])) / TICK,
                                 int(fields[21]) * PAGE)
    return found


class CPUSampler:
    """CPU seconds the processes of a session spend while it runs: each process's latest
    reading, sampled every ``interval`` s (a process's last interval before it exits is
    missed), minus what it had spent at the start."""

    def __init__(self, session: int, interval: float = 0.1):
        self.session, self.interval = session, interval
        self.start = {(pid, born): cpu for pid, (born, cpu, _) in
                      session_processes(session).items()}
        self.latest = dict(self.start)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        for pid, (born, cpu, _) in session_processes(self.session).items():
            self.latest[(pid, born)] = cpu

    def _loop(self) -> None:
        while not self.done.wait(self.interval):
            self._sample()

    def stop(self) -> float:
        self.done.set()
        self.thread.join()
        self._sample()
        return sum(cpu - self.start.get(key, 0.0) for key, cpu in self.latest.items())


def kill(pids: list[int]) -> list[str]:
    """SIGKILL each of ``pids``; their command lines."""
    lines = []
    for pid in pids:
        with contextlib.suppress(OSError):
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                         .decode()[:120])
            os.kill(pid, signal.SIGKILL)
    return lines


class Head:
    """A Ray head of the bench's own: started once, stopped in ``close`` (see the module)."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="crb-", dir="/tmp")  # socket paths stay short
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.output: list[str] = []
        command = [os.path.join(os.path.dirname(sys.executable), "ray"), "start", "--head",
                   "--block", "--node-ip-address=127.0.0.1", f"--port={self.port}",
                   "--include-dashboard=false", f"--temp-dir={self.folder}", "--num-cpus=2",
                   "--disable-usage-stats"]
        start = time.perf_counter()
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, start_new_session=True, cwd=ROOT,
                                        env=ray_environment())
        try:
            for line in self.process.stdout:
                self.output.append(line)
                if "Ray runtime started" in line:
                    break
                if time.perf_counter() - start > HEAD_TIMEOUT:
                    raise RuntimeError("ray start --head: no start in time")
            else:
                raise RuntimeError("ray start --head failed:\n" + "".join(self.output[-20:]))
            self.seconds = time.perf_counter() - start
            threading.Thread(target=self._drain, daemon=True).start()
        except BaseException:
            self.close()
            raise

    def _drain(self) -> None:
        for line in self.process.stdout:
            self.output.append(line)

    def processes(self) -> dict[int, tuple[int, float, int]]:
        return session_processes(self.process.pid)

    def cpu(self) -> float:
        """CPU seconds its live processes have spent so far."""
        return sum(cpu for _, cpu, _ in self.processes().values())

    def sampler(self) -> CPUSampler:
        return CPUSampler(self.process.pid)

    def settle(self) -> float:
        """Wait until the cluster spends under QUIET of a core (at most SETTLE_MAX s)."""
        start = time.perf_counter()
        while time.perf_counter() - start < SETTLE_MAX:
            before = self.cpu()
            time.sleep(0.5)
            if (self.cpu() - before) / 0.5 < QUIET:
                break
        return time.perf_counter() - start

    def close(self) -> list[str]:
        """Stop the head and everything in its session; what was left (should be nothing)."""
        session = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)  # ray start --block: drain, stop all
        try:
            self.process.wait(45)
        except subprocess.TimeoutExpired:
            pass
        left = []
        for _ in range(20):
            pids = list(session_processes(session))
            if not pids:
                break
            left = kill(pids)
            time.sleep(0.25)
        self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
        return left
