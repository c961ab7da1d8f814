"""``cpl run --launcher ray`` on a real Ray: every lifeline a Ray actor.

Ray starts once per test session (the ``ray_cluster`` fixture; every test on a
shared cluster is in this module, so the fixture is the module's, and the cluster
goes when they are done instead of idling under the timing tests that follow; the
runs that start a Ray of their own are in test_runtime_ray_leftovers.py): a head
with the custom resource ``host-a`` and a second node with ``host-b``, both on 127.0.0.1,
token authentication off (``RAY_AUTH_MODE`` set, as every process of the module
inherits), everything Ray writes in a temp folder of its own (``RAY_TMPDIR``: its
``ray_current_cluster`` too, which Ray would otherwise put in ``/tmp/ray`` — and fail
where that folder does not exist), every process it starts tagged or holding a file
in that folder, so that the fixture can tell none is left once it shut Ray down in
``finally``, whether the tests passed, failed or the cluster never came up.
Each ``cpl run`` joins that cluster (``--ray-address``).  After every run no actor
of ours may be alive: Ray names none in the ``cpl`` namespace, and no
``ray::CplLifeline`` worker process remains.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from cpl.trace import load_trace
from runtime.supervisor import session_folder, stay_on_loopback
from runtime_util import (CPL, EXAMPLES, TAG, Cpl, check_messages, check_semantics, holding,
                          tagged, tagged_env, wait_until)

# An idle two-node Ray slows the start of other runs' lifelines on two cores: under
# pytest-xdist these tests share the worker of the sub-second stop timings ("timing"),
# so the two never overlap.
pytestmark = [pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                 reason="ray is not installed (pip install 'causal-guards[ray]')"),
              pytest.mark.xdist_group("timing")]

CODE_REVIEW = str(EXAMPLES / "code_review.py")
LONG = ("--arg", "rounds=100000")  # a run that goes on until it is ended


class Ray:
    """The session's cluster, and what the tests ask of it."""

    def __init__(self, cluster, tag: str):
        import ray
        self.ray, self.cluster, self.tag = ray, cluster, tag
        self.address = cluster.address

    def node_with(self, resource: str) -> str:
        return next(node["NodeID"] for node in self.ray.nodes()
                    if node["Alive"] and resource in node["Resources"])

    def actors(self) -> list[str]:
        """The names of our actors Ray knows alive."""
        return [actor["name"] for actor in self.ray.util.list_named_actors(all_namespaces=True)
                if actor["namespace"] == "cpl"]

    def workers(self) -> list[int]:
        """The worker processes of our actors on this machine."""
        return [pid for pid, line in tagged(self.tag).items() if "CplLifeline" in line]

    def actor(self, lifeline: str, timeout: float = 30.0):
        """The handle of ``lifeline``'s actor, once it is there."""
        names = wait_until(lambda: [n for n in self.actors() if n.endswith(f".{lifeline}")],
                           timeout)
        assert names, f"no actor for {lifeline}: {self.actors()}"
        return self.ray.get_actor(names[0], namespace="cpl")

    def none_left(self) -> None:
        """No actor of ours alive, no worker process of one (Ray ends them in ms)."""
        assert wait_until(lambda: not self.actors() and not self.workers(), 10.0), \
            (self.actors(), self.workers())


@pytest.fixture(scope="module")
def ray_cluster():
    tag = f"ray-session-{uuid.uuid4().hex[:12]}"
    folder = session_folder("cpl-rayt-")  # short: Ray adds up to 67 bytes to its socket paths;
    # 0700, Ray's own folders inside it (its temp_dir "r", RAY_TMPDIR's "ray") 0777
    os.mkdir(os.path.join(folder, "ray"))  # where Ray writes ray_current_cluster (RAY_TMPDIR/ray)
    settings = {TAG: tag, "RAY_AUTH_MODE": "disabled", "RAY_TMPDIR": folder,
                "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}  # 127.0.0.1 stays 127.0.0.1
    saved = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)

    def ours() -> dict[int, str]:
        return {**tagged(tag), **holding(folder)}

    try:
        import ray
        from ray.cluster_utils import Cluster
        stay_on_loopback()  # the variable above is too late if this process imported ray already
        cluster = Cluster()  # no node yet: a head that fails half-started is still shut down
        try:
            cluster.add_node(num_cpus=1, resources={"host-a": 1}, node_ip_address="127.0.0.1",
                             include_dashboard=False, temp_dir=os.path.join(folder, "r"))
            cluster.add_node(num_cpus=1, resources={"host-b": 1}, node_ip_address="127.0.0.1")
            ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
            yield Ray(cluster, tag)
        finally:
            try:
                ray.shutdown()
            finally:
                cluster.shutdown()
    finally:  # and whatever Ray did not end: none may outlive the module
        left = wait_until(lambda: not ours(), 15.0) or ours()
        for pid in ([] if left is True else left):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        still = wait_until(lambda: not ours(), 10.0) or ours()
        shutil.rmtree(folder, ignore_errors=True)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        assert left is True, (f"Ray processes left after the session, killed now"
                              f"{'' if still is True else f' (alive still: {still})'}: {left}")


def title(pid: int) -> str:
    """A process's title as ``ps`` shows it: its command line, NULs as spaces."""
    with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
    return ""


def on_ray(ray_cluster, *args: str) -> tuple[str, ...]:
    return ("run", CODE_REVIEW, "--launcher", "ray", "--ray-address", ray_cluster.address,
            *args)


def write(folder, name: str, data) -> str:
    path = folder / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_the_flagship_split_across_two_nodes_decides_as_the_semantics(ray_cluster, tmp_path):
    a, b = ray_cluster.node_with("host-a"), ray_cluster.node_with("host-b")
    place = write(tmp_path, "place.json", {
        "Orchestrator": {"resources": ["host-a"]}, "TestRunner": {"node": a},
        "Security": {"resources": {"host-b": 0.5}}, "Committer": {"node": b}})
    trace = tmp_path / "t.jsonl"
    with Cpl(tmp_path, *on_ray(ray_cluster, "--arg", "rounds=3", "--place", place,
                                "--trace", str(trace))) as run:
        assert run.wait(60) == 0, run.err
        out = run.out
    assert out.splitlines()[0].startswith("Orchestrator: round = 3")
    loaded = load_trace(trace)
    assert loaded.meta["status"] == "ok"
    nodes = {name: where["node"] for name, where in loaded.meta["nodes"].items()}
    assert nodes == {"Orchestrator": a, "TestRunner": a, "Security": b, "Committer": b}
    assert set(loaded.meta["hosts"].values()) == {"127.0.0.1"}
    assert check_semantics(loaded) == 7
    check_messages(loaded)
    evaluated = subprocess.run([*CPL, "eval", str(trace)], capture_output=True, text=True,
                               timeout=60)
    assert evaluated.returncode == 0 and "7 decisions re-checked: all agree" in evaluated.stdout
    ray_cluster.none_left()


def test_a_long_stream_between_actors_reaches_the_trace_whole(ray_cluster, tmp_path):
    """Actors ship their log lines: the last thousands of them may still be on the way
    when an actor's call returns, and the supervisor must hear them all before it ends
    the actors (it used to stop listening at the return, and a run ended ok with a
    quarter of its receives missing)."""
    count = 20000
    trace = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", str(EXAMPLES.parent / "bench" / "stream_loop.py"), "--arg",
             f"count={count}", "--launcher", "ray", "--ray-address", ray_cluster.address,
             "--trace", str(trace)) as run:
        assert run.wait(120) == 0, run.err
    loaded = load_trace(trace)
    assert loaded.meta["status"] == "ok" and not loaded.meta.get("unplaced")
    assert check_messages(loaded) == (2 * count + 1, 2 * count + 1)
    ray_cluster.none_left()


def killed_mid_run(ray_cluster, tmp_path, kill, *args: str) -> tuple[dict, str, float]:
    """A long run, ``kill(ray_cluster)`` once its lifelines are under way: the trace's meta,
    the run's stderr, and the seconds from the kill to the run's end."""
    trace = tmp_path / "t.jsonl"
    with Cpl(tmp_path, *on_ray(ray_cluster, *LONG, "--trace", str(trace), *args)) as run:
        assert wait_until(lambda: run.logged() > 200 or run.process.poll() is not None, 60)
        assert run.process.poll() is None, run.err
        kill(ray_cluster)
        killed = time.monotonic()
        code = run.wait(30)
        took = time.monotonic() - killed
        err = run.err
    assert code == 1, err
    loaded = load_trace(trace)  # whole, and valid: every decision still re-checks
    check_semantics(loaded)
    check_messages(loaded)
    ray_cluster.none_left()
    return loaded.meta, err, took


def test_kill_9_of_an_actors_process_ends_the_run_as_died(ray_cluster, tmp_path):
    def kill(ray):
        pid = ray.ray.get(ray.actor("Security").where.remote())[3]
        os.kill(pid, signal.SIGKILL)
    meta, err, took = killed_mid_run(ray_cluster, tmp_path, kill)
    assert meta["status"] == "died" and meta["died"]["lifeline"] == "Security"
    assert "lifeline Security died: its actor died because its worker process has died" \
        in err
    assert took < 5, took


def test_ray_kill_of_an_actor_ends_the_run_as_died(ray_cluster, tmp_path):
    meta, err, took = killed_mid_run(
        ray_cluster, tmp_path, lambda ray: ray.ray.kill(ray.actor("Committer")))
    assert meta["status"] == "died" and meta["died"]["lifeline"] == "Committer"
    assert "lifeline Committer died: its actor died because it was killed by `ray.kill`" in err
    assert took < 5, took


def test_removing_a_lifelines_node_ends_the_run_as_died(ray_cluster, tmp_path):
    node = ray_cluster.cluster.add_node(num_cpus=1, resources={"host-c": 1},
                                        node_ip_address="127.0.0.1")
    # The others kept off host-c: an actor asks for no CPU, so Ray may put any lifeline on
    # the new node, and its removal would then end two lifelines, either named first.
    place = write(tmp_path, "place.json", {
        "TestRunner": {"resources": ["host-c"]},
        **{name: {"resources": ["host-a"]} for name in ("Orchestrator", "Security", "Committer")}})
    meta, err, took = killed_mid_run(ray_cluster, tmp_path,
                                     lambda ray: ray.cluster.remove_node(node), "--place", place)
    assert meta["status"] == "died" and meta["died"]["lifeline"] == "TestRunner"
    assert "lifeline TestRunner died: its actor died because its node has died" in err
    assert took < 8, took  # removing the node waits for its processes to end


def test_ctrl_c_interrupts_the_run_and_ends_every_actor(ray_cluster, tmp_path):
    trace = tmp_path / "t.jsonl"
    with Cpl(tmp_path, *on_ray(ray_cluster, *LONG, "--trace", str(trace))) as run:
        assert wait_until(lambda: run.logged() > 200 or run.process.poll() is not None, 60)
        run.ctrl_c()
        assert run.wait(30) == 130, run.err
    assert load_trace(trace).meta["status"] == "interrupted"
    ray_cluster.none_left()


@pytest.mark.parametrize("number, streaming", [(signal.SIGINT, 5), (signal.SIGTERM, 1)],
                         ids=["INT", "TERM"])
def test_a_signal_to_cpl_run_alone_stops_a_streaming_run_at_once(ray_cluster, tmp_path, number,
                                                                 streaming):
    """SIGINT or SIGTERM to the ``cpl run`` process only (not its group), while its actors
    ship log lines faster than it merges them: it used to take frames for as long as they
    came (53 s after 15 s of streaming, more than 30 s after 5), and then merge what it had
    taken; now it stops as Ctrl-C does, with every line it took in a whole trace.  Both
    signals take one path (``runtime.supervisor.interrupts``): the shorter stream of the
    second keeps the test's time down."""
    trace = tmp_path / "t.jsonl"
    with Cpl(tmp_path, "run", str(EXAMPLES.parent / "bench" / "stream_loop.py"), "--arg",
             "count=10000000", "--launcher", "ray", "--ray-address", ray_cluster.address,
             "--trace", str(trace)) as run:
        assert wait_until(lambda: run.logged() > 5000 or run.process.poll() is not None, 60)
        time.sleep(streaming)  # streaming on: the supervisor's socket is never empty
        assert run.process.poll() is None, run.err
        run.process.send_signal(number)
        signalled = time.monotonic()
        assert run.wait(30) == 130, run.err
        took = time.monotonic() - signalled
    loaded = load_trace(trace)
    assert loaded.meta["status"] == "interrupted" and not loaded.meta.get("unplaced")
    assert not loaded.meta.get("unmerged") and not loaded.meta.get("unlogged")
    check_messages(loaded)
    # 2-4 s on the 2-core test machine, 6-7 s at a load of 11, most of it merging what was
    # on the way; it was more than 30 s (the run's end not seen in this test's 30)
    assert took < 15, took
    ray_cluster.none_left()


def test_a_timeout_ends_the_run_and_every_actor(ray_cluster, tmp_path):
    trace = tmp_path / "t.jsonl"
    with Cpl(tmp_path, *on_ray(ray_cluster, *LONG, "--timeout", "6", "--trace",
                                str(trace))) as run:
        assert run.wait(60) == 1, run.err
    meta = load_trace(trace).meta
    assert meta["status"] == "timeout" and len(meta["nodes"]) == 4
    ray_cluster.none_left()


def test_a_killed_supervisor_leaves_no_actor(ray_cluster, tmp_path):
    """kill -9 of ``cpl run``: Ray ends the actors its driver owned.  Meanwhile each actor's
    process title (``/proc/PID/cmdline``, what ``ps`` shows) names its lifeline and run."""
    with Cpl(tmp_path, *on_ray(ray_cluster, *LONG)) as run:
        assert wait_until(lambda: len(ray_cluster.workers()) == 4, 60), run.err
        titles = wait_until(lambda: (lambda found: found if len(found) == 4 else [])(sorted(
            t for t in map(title, ray_cluster.workers()) if t.startswith("ray::CplLifeline("))),
            30)
        names = ("Committer", "Orchestrator", "Security", "TestRunner")
        assert [t.split(" ")[0] for t in titles] == [f"ray::CplLifeline({n})" for n in names]
        assert len({t.split(" run ")[1] for t in titles}) == 1, titles  # one run, named
        run.process.kill()
        run.process.wait(10)
    ray_cluster.none_left()


def test_a_lifeline_no_node_can_take_is_not_joined(ray_cluster, tmp_path):
    place = write(tmp_path, "place.json", {"Security": {"resources": {"host-b": 5}}})
    # 10 s: the three others start within it on a busy machine too (3 s did not, at load 10)
    with Cpl(tmp_path, *on_ray(ray_cluster, "--place", place, "--join-timeout", "10",
                                "--trace", str(tmp_path / "t.jsonl"))) as run:
        assert run.wait(60) == 1, run.err
        err = run.err
    assert "not joined: Security" in err
    assert load_trace(tmp_path / "t.jsonl").meta["not_joined"] == ["Security"]
    ray_cluster.none_left()


@pytest.mark.parametrize("entry, said", [
    ({"Security": {"resources": ["host-z"]}}, "no node of the cluster has the resource 'host-z'"),
    ({"Security": {"node": "127.0.0.1"}}, "2 nodes have the address 127.0.0.1: give a node id"),
    ({"Security": {"node": "10.1.2.3"}}, "no alive node of the cluster is '10.1.2.3'"),
])
def test_a_place_the_cluster_cannot_honour_is_a_usage_error(ray_cluster, tmp_path, entry, said):
    place = write(tmp_path, "place.json", entry)
    trace = tmp_path / "t.jsonl"
    result = subprocess.run([*CPL, *on_ray(ray_cluster, "--place", place, "--trace", str(trace))],
                            capture_output=True, text=True, timeout=60,
                            env=tagged_env(uuid.uuid4().hex))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"--place: {place}: entry 'Security': {said}" in result.stderr
    assert not trace.exists()  # a usage error, found before the run: no run, no trace
    ray_cluster.none_left()


@pytest.mark.parametrize("content, said", [
    ("{", "is not JSON"),
    ("[]", "must be {"),
    ('{"Securty": {"node": "x"}}', "entry 'Securty' is not a lifeline of this choreography"),
    ('{"Security": "host-b"}', "entry 'Security': give {\"resources\""),
    ('{"Security": {"node": "x", "resources": ["a"]}}', "entry 'Security': give"),
    ('{"Security": {"resources": []}}', "entry 'Security': the resources are a list"),
    ('{"Security": {"resources": [1]}}', "entry 'Security': the resources are a list"),
    ('{"Security": {"resources": {"a": -1}}}', "the amount of 'a' must be a number > 0"),
    ('{"Security": {"resources": {"a": true}}}', "the amount of 'a' must be a number > 0"),
    ('{"Security": {"resources": {"a\\u001b[2J": 1}}}', "is no resource name"),
    ('{"Security": {"node": 7}}', "entry 'Security': the node is a node id or address"),
    ('[' * 100000, "is not JSON"),
], ids=lambda value: str(value)[:40])
def test_a_hostile_place_file_is_a_usage_error_naming_file_and_entry(tmp_path, content, said):
    place = write(tmp_path, "place.json", content)
    result = subprocess.run([*CPL, "run", CODE_REVIEW, "--launcher", "ray", "--ray-address",
                             "local", "--place", place], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"--place: {place}" in result.stderr and said in result.stderr, result.stderr


def test_a_place_that_is_no_file_is_a_usage_error(tmp_path):
    result = subprocess.run([*CPL, "run", CODE_REVIEW, "--launcher", "ray", "--place",
                             str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and f"--place: {tmp_path} is not a regular file" \
        in result.stderr


@pytest.mark.parametrize("args, said", [
    (("--place", "p.json"), "--place is for --launcher ray"),
    (("--ray-address", "local"), "--ray-address is for --launcher ray"),
    (("--launcher", "ray", "--sim"), "--sim runs them all in this process"),
    (("--launcher", "ray", "--ray-address", "nowhere"), "give auto, local or HOST:PORT"),
])
def test_ray_options_out_of_place_are_usage_errors(tmp_path, args, said):
    result = subprocess.run([*CPL, "run", CODE_REVIEW, *args], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path)
    assert result.returncode == 2 and said in result.stderr, result.stderr


def test_without_ray_installed_the_launcher_says_how_to_get_it(tmp_path):
    hide = ("import sys; sys.modules['ray'] = None; from cpl_cli import main; "
            f"sys.exit(main(['run', {CODE_REVIEW!r}, '--launcher', 'ray']))")
    result = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "pip install 'causal-guards[ray]'" in result.stderr


def test_an_actor_makes_its_own_key_pair_and_only_the_public_key_leaves_it(ray_cluster):
    """The run's keys for lifelines on Ray (``Keys.for_run`` of the launcher's public keys,
    as the supervisor makes them) hold no secret: each public key is the one its actor made
    (and the actor refuses a connection holding another)."""
    from choreo import load_one
    from choreo.execution.plan import prepare
    from runtime.frames import Keys
    from runtime.supervisor.ray_launcher import RayActors
    plan = prepare(load_one(CODE_REVIEW))
    launcher = RayActors(plan.lifelines)
    with launcher:
        keys = Keys.for_run(plan.lifelines, launcher.public_keys())
        for name in plan.lifelines:
            assert keys[name].secret == "" and keys[name].public == launcher.found[name][0]
            assert keys[name].lifelines == {n: launcher.found[n][0] for n in plan.lifelines}
        assert keys[""].secret and keys[""].public not in keys[""].lifelines.values()
    ray_cluster.none_left()
