"""A Ray that ``cpl run --launcher ray`` starts for itself leaves nothing.

Killed with -9, ``cpl run`` used to leave ``ray::DashboardAgent`` and
``ray::RuntimeEnvAgent`` running and its session folder, open to all (0777), on
disk; with a read-only HOME it could not start Ray at all (``~/.ray``).  Here
``cpl run`` starts its own Ray (``--ray-address local``) with a HOME where
nothing can be made, in a temp folder of the test's own (short: Ray's socket
paths must fit), so that its session folder is known and every process holding
it is found (``holding``; Ray's agents rename themselves, so the test's tag in
their environment is not enough).  Each run costs a Ray start-up (5-25 s on two
busy cores), so five runs start together and each is killed at its own moment
of it, from the folder's making to the actors' serving (and a sixth is sent
SIGTERM in it): the test takes about one start-up, not six.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from cpl.trace import load_trace
from runtime.supervisor import RUN_FOLDER
from runtime_util import CPL, EXAMPLES, check_semantics, holding, tagged, tagged_env, \
    wait_until

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                 reason="ray is not installed (pip install 'causal-guards[ray]')"),
              pytest.mark.xdist_group("timing")]  # with the other Ray tests: one Ray at a time

CODE_REVIEW = str(EXAMPLES / "code_review.py")


class OwnRay:
    """One ``cpl run ... --launcher ray --ray-address local`` in a session of its own, with
    a temp folder and an unusable HOME (a path under a regular file: nothing can be made
    there, as root too) of its own, and no Ray settings of ours."""

    def __init__(self, folder: Path, *args: str):
        self.tag = uuid.uuid4().hex
        base = tempfile.gettempdir()
        self.temp = tempfile.mkdtemp(prefix="cplr", dir=base if len(base) <= 12 else "/tmp")
        (folder / "home").write_text("a file: no folder can be made under it")
        env = tagged_env(self.tag)
        for name in [name for name in env if name.startswith("RAY_")]:
            env.pop(name)  # the Ray tests' RAY_AUTH_MODE and RAY_TMPDIR are not a user's
        env.update(TMPDIR=self.temp, HOME=str(folder / "home" / "user"))
        self.err_path = folder / f"err.{self.tag[:8]}.txt"
        with open(self.err_path, "wb") as err:
            self.process = subprocess.Popen([*CPL, "run", CODE_REVIEW, "--launcher", "ray",
                                             "--ray-address", "local", *args],
                                            stdout=subprocess.DEVNULL, stderr=err,
                                            stdin=subprocess.DEVNULL, cwd=folder, env=env,
                                            start_new_session=True)
        self.started = time.monotonic()

    def session(self) -> str | None:
        """Its Ray session folder, once made."""
        found = [str(p) for p in Path(self.temp).glob(f"{RUN_FOLDER}*")]
        return found[0] if found else None

    def ours(self) -> dict[int, str]:
        """Every live process of the run: tagged, or holding its session folder."""
        session = self.session()
        return {**tagged(self.tag), **(holding(session) if session else {})}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        for pid in self.ours():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.temp, ignore_errors=True)

    @property
    def err(self) -> str:
        return self.err_path.read_text(errors="replace")


def titles(pids) -> list[str]:
    found = []
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as handle:
            found.append(handle.read().rstrip(b"\0").replace(b"\0", b" ").decode())
    return found


def serving(run: OwnRay) -> bool:
    return sum(t.startswith("ray::CplLifeline(") for t in titles(run.ours())) == 4


def seen(name: str):
    return lambda run: any(name in line for line in run.ours().values())


# The moments of a Ray start-up at which a cpl run is killed, earliest first.
MOMENTS = {
    "session folder made": lambda run: run.session() is not None,
    "gcs_server up": seen("gcs_server"),
    "raylet up": seen("/raylet "),
    "agents up": lambda run: seen("ray::DashboardAgent")(run) and
    seen("ray::RuntimeEnvAgent")(run),
    "actors serving": serving,
}


# Who is stopped when, and how: five kills at five moments, and a SIGTERM while Ray starts
# (``ray.init`` set a SIGTERM handler of its own that raised SystemExit where it landed:
# in a finaliser, the exception was lost and the run went on).
STOPS = {**{moment: (moment, signal.SIGKILL) for moment in MOMENTS},
         "SIGTERM while Ray starts": ("gcs_server up", signal.SIGTERM)}


def test_kill_9_of_cpl_run_leaves_no_ray_process_and_no_session_folder(tmp_path):
    """Six runs started together, five killed with -9 at five moments of the start-up, one
    sent SIGTERM in it: within seconds no process of any is left (Ray's agents included),
    nor its session folder, which was 0700 while it lived; the SIGTERM ended its run as
    Ctrl-C does (130); and each actor's title named its lifeline (once serving)."""
    began = time.monotonic()
    with contextlib.ExitStack() as stack:
        runs = {name: stack.enter_context(OwnRay(tmp_path, "--arg", "rounds=100000"))
                for name in STOPS}
        stopped, sessions = {}, {}
        while len(stopped) < len(runs) and time.monotonic() - began < 120:
            for name, run in runs.items():
                moment, number = STOPS[name]
                if name in stopped:
                    continue
                assert run.process.poll() is None, (name, run.err)
                if not MOMENTS[moment](run):
                    continue
                sessions[name] = session = run.session()
                mode = os.stat(session).st_mode & 0o777
                assert mode == 0o700, (name, oct(mode))  # Ray's own folder inside is 0777
                if moment == "actors serving":
                    named = sorted(t.split(" ")[0] for t in titles(run.ours())
                                   if t.startswith("ray::CplLifeline("))
                    assert named == [f"ray::CplLifeline({n})" for n in
                                     ("Committer", "Orchestrator", "Security", "TestRunner")]
                run.process.send_signal(number)
                stopped[name] = time.monotonic()
            time.sleep(0.05)
        assert len(stopped) == len(runs), {n: r.err for n, r in runs.items() if n not in stopped}
        codes = {name: run.process.wait(30) for name, run in runs.items()}
        assert codes == {name: -9 if number == signal.SIGKILL else 130
                         for name, (_, number) in STOPS.items()}, codes
        said = runs["SIGTERM while Ray starts"].err
        assert "interrupted" in said and "Traceback" not in said and "SystemExit" not in said, \
            said
        left = wait_until(lambda: not any(run.ours() for run in runs.values()) and
                          not any(map(os.path.exists, sessions.values())), 20)
        assert left, {n: (r.ours(), os.path.exists(sessions[n])) for n, r in runs.items()}
        ended = time.monotonic()
    print(f"stopped after (s): { {n: round(t - began, 1) for n, t in stopped.items()} }; "
          f"all gone {ended - max(stopped.values()):.2f} s after the last stop, "
          f"{ended - began:.1f} s in all")


def test_a_run_on_its_own_ray_with_an_unusable_home_ends_ok_and_leaves_nothing(tmp_path):
    """A read-only HOME (Ray would write ``~/.ray/auth_token`` there) is no obstacle: the
    run's Ray gets a token of its own; and at the end nothing of it is left."""
    trace = tmp_path / "t.jsonl"
    with OwnRay(tmp_path, "--trace", str(trace)) as run:
        assert run.process.wait(120) == 0, run.err
        assert ".ray" not in run.err and "Traceback" not in run.err, run.err
        left = wait_until(lambda: not run.ours() and run.session() is None, 10)
        assert left, (run.ours(), run.session())
    loaded = load_trace(trace)
    assert loaded.meta["status"] == "ok" and set(loaded.meta["hosts"].values()) == {"127.0.0.1"}
    check_semantics(loaded)
