"""Detectors of your own: ``cpl explore --detect`` and ``cpl detect``.

The example's detector (examples/stale_publish.py) is checked against the
runs themselves: it fires exactly in the unguarded runs where the Source's
correction came before the Publisher published, the same count with one
worker, forked and spawned ones, and never in the guarded twin.  A spec that
does not load is a usage error naming it; a detector that raises or returns
junk is that run's error, naming it, and never stops the exploration.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from choreo import load_one
from choreo.exploration.explore import ERROR, explore_file, schedule_of
from choreo.execution.plan import prepare
from choreo.execution.simulate import Simulator
from choreo.exploration.user_detectors import (DetectorError, UserDetector, load_detector,
                                               user_detectors)
from choreo_util import cpl
from cpl.trace import load_trace

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "stale_publish.py"
SPEC = f"{EXAMPLE}:published_stale"
FIG2 = ROOT / "examples" / "traces" / "fig2.json"


def _stale(trace) -> bool:
    """The bad outcome read off the trace another way: the Source's last version is set
    before the publish, and is newer than what was published."""
    ids = [e.id for e in trace.events]
    publish = next(e for e in trace.events if "published" in e.set)
    versions = [(ids.index(e.id), e.set["version"]) for e in trace.events
                if e.lifeline == "Source" and "version" in e.set]
    before = [v for at, v in versions if at < ids.index(publish.id)]
    return publish.set["published"] < before[-1]


@pytest.fixture(scope="module")
def unguarded():
    return prepare(load_one(str(EXAMPLE), "unguarded"))


def test_the_example_detector_fires_exactly_on_the_stale_runs(unguarded):
    simulator = Simulator.of(unguarded)
    detector = UserDetector(SPEC, "published_stale")
    stale = 0
    for seed in range(60):
        trace = simulator.run(seed=seed).trace
        found = detector(trace)
        assert bool(found) == _stale(trace), seed
        if found:
            assert [e.lifeline for e in found] == ["Publisher"]
            stale += 1
    assert 10 < stale < 50  # the race goes both ways


@pytest.mark.parametrize("workers,start", [(1, None), (2, "fork"), (2, "spawn")])
def test_explore_counts_it_beside_the_catalog_with_its_first_seed(workers, start):
    own = user_detectors([SPEC])
    from cpl.anomalies import detect
    result = explore_file(str(EXAMPLE), 120, name="unguarded", detectors=(detect, own),
                          workers=workers, start_method=start)
    simulator = Simulator.of(prepare(load_one(str(EXAMPLE), "unguarded")))
    expected = [seed for seed in range(120)
                if _stale(simulator.run(seed=seed, schedule=schedule_of(seed)).trace)]
    assert result.workers == workers  # the detectors travelled: nothing fell back to one
    assert result.anomalies["published_stale"] == len(expected)
    assert result.first["anomalies"]["published_stale"][0] == expected[0]
    assert result.anomalies["stale_generation"] == 0 and result.statuses == {"ok": 120}
    guarded = explore_file(str(EXAMPLE), 120, name="guarded", detectors=own,
                           workers=workers, start_method=start)
    assert guarded.anomalies == {"published_stale": 0} and guarded.statuses == {"ok": 120}


def test_the_cli_table_and_json(tmp_path):
    result = cpl("explore", EXAMPLE, "--name", "unguarded", "--runs", "12", "--detect", SPEC)
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("published"))
    assert row.split()[1] != "0" and "seed " in row
    assert any(line.startswith("lost_update") for line in result.stdout.splitlines())
    only = cpl("explore", EXAMPLE, "--name", "unguarded", "--runs", "12", "--detect", SPEC,
               "--no-detectors", "--format", "json")
    assert set(json.loads(only.stdout)["anomalies"]) == {"published_stale"}


def test_a_dotted_module_from_the_current_directory(tmp_path):
    (tmp_path / "mychecks").mkdir()
    (tmp_path / "mychecks" / "__init__.py").write_text("")
    (tmp_path / "mychecks" / "stale.py").write_text(
        "def every_publish(trace):\n"
        "    return [e.id for e in trace.events if 'published' in e.set]\n")
    result = cpl("explore", EXAMPLE, "--name", "unguarded", "--runs", "8", "--workers", "2",
                 "--detect", "mychecks.stale:every_publish", "--format", "json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["anomalies"]["every_publish"] == 8


RAISING = """
def boom(trace):
    return 1 / 0

def junk(trace):
    return [42]

def nothing(trace):
    pass

def ghost(trace):
    return ["no such event"]

def fine(trace):
    return ()

NOT_A_FUNCTION = 3
"""


@pytest.mark.parametrize("function,says", [
    ("boom", "detector 'boom' ({spec}) raised ZeroDivisionError: division by zero"),
    ("junk", "detector 'junk' ({spec}) returned int 42 among its events"),
    ("nothing", "detector 'nothing' ({spec}) returned NoneType None; return an iterable"),
    ("ghost", "detector 'ghost' ({spec}) returned 'no such event', which is no event"),
])
def test_a_bad_detector_is_each_runs_error_naming_it_never_fatal(tmp_path, function, says):
    checks = tmp_path / "checks.py"
    checks.write_text(RAISING)
    spec = f"{checks}:{function}"
    result = cpl("explore", EXAMPLE, "--name", "unguarded", "--runs", "6", "--workers", "2",
                 "--detect", spec)
    assert result.returncode == 0 and "Traceback" not in result.stderr + result.stdout
    assert any(line.split()[:2] == [ERROR, "6"] for line in result.stdout.splitlines())
    assert says.format(spec=spec) in result.stdout


@pytest.mark.parametrize("spec,says", [
    ("nothing_here", "give MODULE:FUNCTION"),
    (":f", "give MODULE:FUNCTION"),
    ("x.py:", "give MODULE:FUNCTION"),
    ("{checks}:no such", "is not a Python function name"),
    ("{checks}:boo", "has no function 'boo'; did you mean 'boom'?"),
    ("{checks}:NOT_A_FUNCTION", "'NOT_A_FUNCTION' is a int, not a function"),
    ("{tmp}/absent.py:f", "no such detector file"),
    ("{tmp}:f", "a directory, not a detector file"),
    ("no_such_module_xyz:f", "cannot import no_such_module_xyz: not found"),
    ("1bad.module:f", "neither a file.py nor a dotted module name"),
    ("{broken}:f", "ZeroDivisionError"),
    ("x" * 5000 + ":f", "longer than 1000 characters"),
])
@pytest.mark.parametrize("command", ["explore", "detect"])
def test_a_spec_that_does_not_load_is_a_usage_error_naming_it(tmp_path, spec, says, command):
    checks, broken = tmp_path / "checks.py", tmp_path / "broken.py"
    checks.write_text(RAISING)
    broken.write_text("x = 1 / 0\n")
    spec = spec.format(checks=checks, tmp=tmp_path, broken=broken)
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"format": "cpl-msc/1", "lifelines": ["A"], "events": []}))
    target = [EXAMPLE, "--name", "unguarded", "--runs", "3"] if command == "explore" \
        else [trace]
    result = cpl(command, *target, "--detect", spec, cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert says in result.stderr and f"cpl {command}: --detect" in result.stderr


def test_detect_names_the_events_and_exits_like_a_linter(tmp_path, unguarded):
    simulator = Simulator.of(unguarded)
    bad = next(s for s in range(40) if _stale(simulator.run(seed=s).trace))
    good = next(s for s in range(40) if not _stale(simulator.run(seed=s).trace))
    for seed, code in ((bad, 1), (good, 0)):
        path = tmp_path / f"s{seed}.jsonl"
        ran = cpl("run", EXAMPLE, "--name", "unguarded", "--sim", "--seed", seed,
                  "--trace", path)
        assert ran.returncode == 0, ran.stderr
        result = cpl("detect", path, "--detect", SPEC)
        assert result.returncode == code, result.stdout + result.stderr
        publish = next(e for e in load_trace(path).events if "published" in e.set)
        if code:
            assert result.stdout.splitlines()[:2] == [
                "published_stale: fired at 1 event", f'  {publish.id}  Publisher  "publish"']
        assert result.stdout.splitlines()[-1].startswith("did not fire: stale_generation")
        found = json.loads(cpl("detect", path, "--detect", SPEC, "--format", "json").stdout)
        assert [row["event"] for row in found["published_stale"]] == ([publish.id] if code
                                                                       else [])


def test_detect_shows_the_catalogs_witness_at_its_event(tmp_path):
    path = tmp_path / "u8.json"
    anomalies = ROOT / "examples" / "anomalies" / "stale_generation.py"
    assert cpl("run", anomalies, "--name", "unguarded", "--sim", "--seed", 8,
               "--trace", path).returncode == 0
    result = cpl("detect", path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0] == "stale_generation: fired at 2 events"
    assert lines[2].startswith("    Stale: i #2 (agent reminder, event ")
    applied = {e.id for e in load_trace(path).events if e.set.get("op") == "apply"}
    assert lines[1].split()[0] in applied and lines[3].split()[0] in applied
    nothing = cpl("detect", path, "--no-detectors")  # nothing left to run: a usage error
    assert nothing.returncode == 2 and "add --detect MODULE:FUNCTION" in nothing.stderr


def test_detect_goes_on_past_a_detector_that_raises(tmp_path):
    checks = tmp_path / "checks.py"
    checks.write_text(RAISING)
    trace = ROOT / "examples" / "traces" / "fig2.json"
    result = cpl("detect", trace, "--detect", f"{checks}:boom", "--detect", f"{checks}:fine")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "cpl detect: detector 'boom'" in result.stderr and "ZeroDivisionError" in result.stderr
    assert "fine" in result.stdout.splitlines()[-1]


@pytest.mark.parametrize("content,says", [
    ("{", "error: "), ("", "error: "), ('{"format": "cpl-msc/1"}', "error: ")])
def test_detect_on_a_malformed_trace_is_one_line_exit_1(tmp_path, content, says):
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = cpl("detect", path)
    assert result.returncode == 1 and result.stderr.startswith(says)
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_odd_names_in_a_trace_are_escaped(tmp_path):
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"format": "cpl-msc/1", "lifelines": ["P\x1b[31m"], "events": [
        {"id": "e\x1b]0;x\x07", "lifeline": "P\x1b[31m", "kind": "act", "label": "l\u202e"}]}))
    checks = tmp_path / "checks.py"
    checks.write_text("def every(trace):\n    return trace.events\n")
    result = cpl("detect", path, "--no-detectors", "--detect", f"{checks}:every")
    assert result.returncode == 1 and "\x1b" not in result.stdout and "\\x1b" in result.stdout


def test_names_collide_with_the_catalog_take_the_spec(tmp_path):
    checks = tmp_path / "checks.py"
    checks.write_text("def lost_update(trace):\n    return []\n")
    spec = f"{checks}:lost_update"
    assert list(user_detectors([spec], ["lost_update"])) == [spec]
    assert load_detector(spec) is load_detector(spec)  # imported once
    with pytest.raises(DetectorError):
        user_detectors([f"{checks}:nope"])


# ------------------------------------------------ the example runs as the others do


@pytest.mark.parametrize("name", ["unguarded", "guarded"])
def test_the_example_validates_and_every_decision_rechecks(name):
    from choreo.analysis import validate
    from cpl.semantics.reference import recheck
    from cpl.trace.files import dumps_trace, loads_trace
    choreography = load_one(str(EXAMPLE), name)
    assert validate(choreography).ok
    simulator = Simulator.of(prepare(choreography))
    for seed in range(20):
        result = simulator.run(seed=seed, schedule=schedule_of(seed))
        assert result.status == "ok", result.error
        trace = loads_trace(dumps_trace(result.trace))
        assert all(recorded == computed for _, recorded, computed in recheck(trace))
        if name == "guarded":
            assert [e.kind for e in trace.events].count("choice") == 1


def test_the_guarded_twin_over_zeromq_publishes_and_never_stale(tmp_path):
    from runtime_util import check_semantics, run_cpl
    for seed in (0, 1):
        path = tmp_path / f"g{seed}.jsonl"
        code, out, err, _ = run_cpl(tmp_path, "run", str(EXAMPLE), "--name", "guarded",
                                    "--seed", str(seed), "--trace", str(path))
        assert code == 0, err
        assert "published = " in out and "(unset)" not in out
        trace = load_trace(path)
        assert check_semantics(trace) == 1
        assert UserDetector(SPEC, "published_stale")(trace) == []


def test_a_detector_that_prints_leaves_the_json_alone(tmp_path):
    checks = tmp_path / "noisy.py"
    checks.write_text("print('loading')\n\ndef noisy(trace):\n    print('hello')\n    return []\n")
    for argv in (["explore", EXAMPLE, "--name", "unguarded", "--runs", "3"], ["detect", FIG2]):
        result = cpl(*argv, "--detect", f"{checks}:noisy", "--format", "json")
        assert json.loads(result.stdout)["anomalies" if argv[0] == "explore" else "noisy"] \
            is not None
        assert "hello" in result.stderr and "loading" in result.stderr


def test_a_detectors_error_cannot_drive_the_terminal(tmp_path):
    checks = tmp_path / "evil.py"
    checks.write_text("def evil(trace):\n    raise ValueError('\\x1b[2J\\u202e gone')\n")
    result = cpl("explore", EXAMPLE, "--name", "unguarded", "--runs", "2",
                 "--detect", f"{checks}:evil")
    assert result.returncode == 0 and "\x1b" not in result.stdout and "\u202e" not in result.stdout
    assert "raised ValueError: \\x1b[2J\\u202e gone" in result.stdout


def test_a_dotted_module_imports_again_in_spawned_workers(tmp_path, monkeypatch):
    (tmp_path / "spawnchecks.py").write_text(
        "def every_publish(trace):\n"
        "    return (e for e in trace.events if 'published' in e.set)\n")
    monkeypatch.chdir(tmp_path)
    own = user_detectors(["spawnchecks:every_publish"])
    result = explore_file(str(EXAMPLE), 16, name="unguarded", detectors=own, workers=2,
                          start_method="spawn")
    assert result.workers == 2 and result.anomalies == {"every_publish": 16}


def test_every_catalog_witness_says_which_of_its_fields_is_where_it_happened():
    """cpl detect shows a witness at the event of one of its records (``_WHERE``): a new
    witness class of the catalog must be named there, not fall back to a guess."""
    import attrs

    from cpl.anomalies import detectors
    from cpl_cli.detect import _WHERE
    witnesses = {name: cls for name, cls in vars(detectors).items()
                 if attrs.has(cls) and cls.__module__ == detectors.__name__}
    assert set(witnesses) == set(_WHERE), (set(witnesses), set(_WHERE))
    for name, field in _WHERE.items():
        assert field in attrs.fields_dict(witnesses[name]), (name, field)
