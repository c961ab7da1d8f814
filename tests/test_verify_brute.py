"""``cpl verify`` runs every MSC exactly once: checked against brute force.

The oracle (tests/brute_force.py) runs every interleaving and every rng outcome,
replayed from scratch, and knows nothing of verify's reduction; the MSCs are
compared by ``cpl.trace.msc_key``, the one definition of MSC identity.

* random small choreographies (tests/verify_choreographies.py): verify's MSCs are
  exactly the brute force's, none passed twice; the memoised and normal-form
  searches (for bigger spaces) agree with the plain one where it is small;
* every example, each variant: the same, by the normal-form search, at smaller
  inputs where the full space is too big for it (said in ``EXAMPLES``);
* seeded simulations (``cpl explore``'s mixed schedules): every MSC one finds is
  among verify's — where verify's whole set is too big for the suite (the twins at
  their defaults, the flagship), found in verify's tree by a search pruned to it;
* a reduction with the defer alternative dropped (``reduction.BREAK``) fails.
"""

from __future__ import annotations

import os

import attrs

import pytest
from hypothesis import HealthCheck, Phase, assume, given, settings

import choreo
from brute_force import NotEnumerable, every_run
from choreo.execution import Simulator
from choreo.exploration.explore import schedule_of
from cpl.trace import msc_key
from verify_choreographies import choreographies

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAIN_RUNS = 300  # past this many interleavings, a random choreography's oracle is the normal form


def verified(choreography, args=()) -> tuple:
    """(verify's report, the msc_key of every trace it passed, in order)."""
    keys: list = []
    report = choreo.verify(choreography, args=args, detectors=None,
                           each=lambda trace: keys.append(msc_key(trace)))
    return report, keys


def assert_every_msc_once(report, keys: list, expected: frozenset) -> None:
    assert len(keys) == len(set(keys)), "verify ran an MSC twice"
    missing, extra = expected - set(keys), set(keys) - expected
    assert not missing and not extra, (f"verify missed {len(missing)} MSCs and ran "
                                       f"{len(extra)} that no run has")
    assert report.complete and report.bound is None
    assert report.mscs == len(expected)


def _oracle(choreography):
    """Every interleaving when there are few; else the normal-form search (checked against
    every interleaving by the test below)."""
    try:
        return every_run(choreography, max_runs=PLAIN_RUNS)
    except AssertionError:
        return every_run(choreography, normal=True)


# ------------------------------------------------------------ the oracle itself


def test_the_brute_force_finds_a_hand_counted_space():
    """A's two threads send in either order, B's two threads take them in either order,
    and A draws one of three values first: 2 x 2 x 3 MSCs, by every search."""
    c = choreo.Choreography("counted")
    a, b = c.lifelines("A", "B")
    x = c.var("x", int, init=0)
    c.act(a, lambda variables, rng: rng.randint(0, 2), assigns=[x], label="draw")
    with c.parallel():
        with c.thread():
            c.send(a, b, x, label="first")
        with c.thread():
            c.send(a, b, label="second")
    for search in ({}, {"memo": True}, {"normal": True}):
        runs = every_run(c, **search)
        assert len(runs.keys) == 12 and runs.statuses == {"ok": runs.runs}, search
    assert every_run(c).runs == 3 * 6  # every interleaving: 6 of the 4 events, per value
    assert every_run(choreo.load_one(os.path.join(ROOT, "examples/relay.py"))).runs == 56


# ------------------------------------------------------------ random choreographies

RANDOM = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


@RANDOM
@given(choreographies())
def test_verify_runs_every_msc_of_a_random_choreography_once(drawn):
    _, choreography = drawn
    report, keys = verified(choreography)
    assert_every_msc_once(report, keys, _oracle(choreography).keys)


@settings(RANDOM, max_examples=40)
@given(choreographies())
def test_the_faster_searches_find_what_every_interleaving_finds(drawn):
    """The memoised and normal-form searches, which the bigger spaces rely on, against
    every interleaving (where there are few enough)."""
    _, choreography = drawn
    try:
        plain = every_run(choreography, max_runs=PLAIN_RUNS)
    except AssertionError:
        return  # too many interleavings to run them all here
    assert every_run(choreography, memo=True).keys == plain.keys
    assert every_run(choreography, normal=True).keys == plain.keys


@settings(RANDOM, phases=[Phase.generate])  # the first disagreement is enough: no shrinking
@given(choreographies())
def _verify_agrees_with_brute_force(drawn):
    _, choreography = drawn
    report, keys = verified(choreography)
    assert set(keys) == _oracle(choreography).keys


def test_a_reduction_without_its_defer_alternative_fails(monkeypatch):
    """The test above can fail: dropping one backtrack point loses MSCs it catches."""
    monkeypatch.setattr("choreo.exploration.reduction.BREAK", "no-defer")
    with pytest.raises(AssertionError):
        _verify_agrees_with_brute_force()


# ------------------------------------------------------------ labels a trace cannot tell apart


def _alike(labels=(None, None)) -> choreo.Choreography:
    """A's two threads send ``x`` unlabelled (both labelled ``x``), B's two take them:
    four runs of the reduction, two MSCs (B takes A's first send first, or its second).
    With two labels, four MSCs."""
    c = choreo.Choreography("alike")
    a, b = c.lifelines("A", "B")
    x = c.var("x", int, init=1)
    with c.parallel():
        for label in labels:
            with c.thread():
                c.send(a, b, x, label=label)
    return c


def test_statements_alike_in_parallel_threads_are_run_once_and_named():
    report, keys = verified(_alike())
    assert_every_msc_once(report, keys, every_run(_alike()).keys)
    assert (report.mscs, report.runs, report.blocked) == (2, 4, 2)
    assert report.alike.startswith("A's parallel threads both have a send labelled 'x' to B (")
    labelled = _alike(("first", "second"))
    report, keys = verified(labelled)
    assert_every_msc_once(report, keys, every_run(labelled).keys)
    assert (report.mscs, report.runs, report.alike) == (4, 4, None)


def test_without_remembering_the_alike_statements_an_msc_is_run_twice(monkeypatch):
    """The test above can fail: the reduction alone runs the alike MSCs twice."""
    monkeypatch.setattr("choreo.exploration.verifier.alike_in_parallel", lambda plan: None)
    report, keys = verified(_alike())
    assert report.mscs == 4 and len(set(keys)) == 2


@settings(RANDOM, max_examples=60)
@given(choreographies(labels_in_use=1, twins=True))
def test_verify_runs_every_msc_once_where_labels_repeat(drawn):
    """Two threads doing the same statements, every send labelled ``m0`` (every action
    ``a0``, ...): a trace cannot tell the threads' statements apart.  The oracle runs
    every interleaving (the faster searches assume distinct labels), so only the spaces
    small enough for it (about 4 in 5 of them)."""
    _, choreography = drawn
    try:
        expected = every_run(choreography, max_runs=PLAIN_RUNS).keys
    except AssertionError:
        assume(False)
    report, keys = verified(choreography)
    assert_every_msc_once(report, keys, expected)


# ------------------------------------------------------------ the examples

# (file, variant, args): every example and variant.  Smaller inputs where the full
# space is too big for the brute force, and why.
EXAMPLES = [
    ("examples/relay.py", "relay", ()),
    ("examples/stale_publish.py", "unguarded", ()),
    ("examples/stale_publish.py", "guarded", ()),
    ("examples/anomalies/phantom_tool.py", "unguarded", ()),
    ("examples/anomalies/phantom_tool.py", "guarded", ()),
    ("examples/anomalies/causal_cascade.py", "unguarded", ()),  # 660 MSCs
    ("examples/anomalies/causal_cascade.py", "guarded", ()),  # 660 MSCs
    ("examples/anomalies/lost_update.py", "unguarded", ()),  # 164 MSCs
    # 596 MSCs, but ~22,000 runs of the normal-form search (a minute): the guarded
    # twin's space is checked by verify's own tests and the seeded runs below
    # ("examples/anomalies/lost_update.py", "guarded", ()),
    # max_tries=0: 540 MSCs (max_tries=1 has more than 8,000, the default 8 far more); no
    # effect is sent, so the twins differ in nothing there: one of them
    ("examples/anomalies/tool_reordering.py", "guarded", ("max_tries=0",)),
    # rounds=1 has 26,244 MSCs; rounds=0 its review never runs a round
    ("examples/code_review.py", "code_review", ("rounds=0",)),
    # stale_generation (both twins): more than 9,000 MSCs, and no input makes it smaller
]
# Not enumerable: its model action answers free text (verify says so, below).
NOT_ENUMERABLE = [("examples/parallel_tools.py", "parallel_tools", ())]


def _load(path: str, name: str):
    return choreo.load_one(os.path.join(ROOT, path), name)


@pytest.mark.parametrize("path,name,args", EXAMPLES, ids=lambda v: str(v))
def test_verify_runs_every_msc_of_each_example_once(path, name, args):
    choreography = _load(path, name)
    report, keys = verified(choreography, args)
    assert_every_msc_once(report, keys, every_run(choreography, args=args, normal=True).keys)


@pytest.mark.parametrize("path,name,args", NOT_ENUMERABLE, ids=lambda v: str(v))
def test_what_brute_force_cannot_enumerate_verify_calls_not_complete(path, name, args):
    choreography = _load(path, name)
    with pytest.raises(NotEnumerable):
        every_run(choreography, args=args, normal=True)
    report, _ = verified(choreography, args)
    assert not report.complete and report.bound == "not enumerable"


# ------------------------------------------------------------ seeded simulations

# 20,000 runs of every example take minutes (1-10 ms a run on a shared 2-core machine,
# 15-280 s an example): the suite takes this many, CPL_SEEDED_RUNS=20000 the full count
# (which found no MSC outside verify's sets; the largest ones, 400 of 540-660 MSCs).
SEEDED_RUNS = int(os.environ.get("CPL_SEEDED_RUNS", "300"))


# Where verify is complete (not stale_generation's twins: see EXAMPLES).
SEEDED = EXAMPLES + [("examples/anomalies/lost_update.py", "guarded", ()),
                     ("examples/anomalies/tool_reordering.py", "unguarded", ("max_tries=0",))]


@pytest.mark.parametrize("path,name,args", SEEDED, ids=lambda v: str(v))
def test_every_msc_a_seeded_run_finds_is_among_verifys(path, name, args):
    choreography = _load(path, name)
    report, keys = verified(choreography, args)
    assert report.complete
    simulator = Simulator(choreography)
    found = {msc_key(simulator.run(seed=seed, args=args, schedule=schedule_of(seed)).trace)
             for seed in range(SEEDED_RUNS)}
    assert found <= set(keys), f"{len(found - set(keys))} MSCs of seeded runs verify never ran"


def test_seeded_runs_find_only_msc_the_brute_force_finds():
    """The oracle and the generator against plain simulation, without verify."""
    @settings(RANDOM, max_examples=40)
    @given(choreographies())
    def check(drawn):
        _, choreography = drawn
        expected = _oracle(choreography).keys
        simulator = Simulator(choreography)
        for seed in range(20):
            run = simulator.run(seed=seed, schedule=schedule_of(seed))
            assert run.ok and msc_key(run.trace) in expected
    check()


# ------------------------------------------------------------ spaces too big to enumerate

# Where verify's whole set is out of the suite's reach (the twins at their defaults, the
# flagship at its default rounds), each seeded run's MSC is looked for in verify's tree
# itself: a search pruned to the runs whose every event so far is the target's next one on
# its lifeline (``msc_key``'s view of an event) finds the target iff the tree holds it.
GUIDED_RUNS = int(os.environ.get("CPL_GUIDED_RUNS", "12"))
BIG = [("examples/anomalies/stale_generation.py", "unguarded", ()),
       ("examples/anomalies/stale_generation.py", "guarded", ()),
       ("examples/anomalies/tool_reordering.py", "unguarded", ()),
       ("examples/anomalies/tool_reordering.py", "guarded", ()),
       ("examples/code_review.py", "code_review", ())]


def _guided(target) -> type:
    """A simulator whose runs stop (as a run the reduction abandons) at the first event
    that is not ``target``'s next one on its lifeline."""
    from choreo.exploration.reduction import Blocked
    lines = {name: list(events) for name, events in msc_key(target)[0]}

    class Guided(Simulator):
        def run(self, **options):
            sends: dict = {}  # msg id -> (sender, its n-th send), as msc_key counts them
            counts: dict = {}
            at: dict = {}

            def follow(event):
                lifeline = event.lifeline
                if event.kind == "send":
                    sends[event.msg] = (lifeline, counts.get(lifeline, 0))
                    counts[lifeline] = counts.get(lifeline, 0) + 1
                one = msc_key(attrs.evolve(target, events=(event,)))[0]
                mine = dict(one)[lifeline][0]
                if event.kind == "recv":
                    mine = mine[:-1] + (sends[event.msg],)
                index = at.get(lifeline, 0)
                if index >= len(lines[lifeline]) or lines[lifeline][index] != mine:
                    raise Blocked
                at[lifeline] = index + 1
            return super().run(sink=follow, **options)
    return Guided


@pytest.mark.parametrize("path,name,args", BIG, ids=lambda v: str(v))
def test_verify_holds_what_seeded_runs_find_where_its_space_is_too_big(path, name, args,
                                                                       monkeypatch):
    from choreo.exploration import verifier
    choreography = _load(path, name)
    simulator = Simulator(choreography)
    for seed in range(GUIDED_RUNS):
        target = simulator.run(seed=seed, args=args, schedule=schedule_of(seed)).trace
        monkeypatch.setattr(verifier, "Simulator", _guided(target))
        keys: list = []
        choreo.verify(choreography, args=args, detectors=None,
                      each=lambda trace: keys.append(msc_key(trace)))  # noqa: B023 - now
        assert keys == [msc_key(target)], f"seed {seed}: verify's tree lacks its MSC"
