"""``c.atomic(Store)``: a shared store that serves requests one at a time, in arrival order.

The story: two agents read a shared to-do list and its version
from a Store, each adds an item and sends the update with the version it
read; the Store accepts an update only if ``req_ver == ver``.  Served by two
threads of the Store, both guards can be judged against the same version
before either write commits — a lost update.  With the read and the
guard-and-write each in a ``c.atomic(Store)`` block, no seed loses one.
"""

from __future__ import annotations

import textwrap

import pytest

from choreo import ChoreographyError, Choreography, load_one, validate
from choreo.analysis.local import LAtomic, LChoose
from choreo.execution.runner import calls
from choreo.execution.plan import prepare
from choreo.analysis.project import project
from choreo.analysis.show import show
from choreo.execution.simulate import Simulator, simulate
from choreo.execution.status import DEADLOCK, OK
from choreo_util import cpl, marked, write
from cpl.trace import load_trace
from runtime_util import check_messages, check_semantics, run_cpl

SEEDS = range(300)
ITEMS = {"Alice": "milk", "Bob": "eggs"}

TODOS = '''
import contextlib

ATOMIC = True


def add(item):
    def write(variables, rng):
        return variables["todos"] + [item]
    write.reads = ["todos"]
    return write


def apply(variables, rng):
    return variables["req_todos"], variables["ver"] + 1


def serve(Store):
    return c.atomic(Store) if ATOMIC else contextlib.nullcontext()


c = Choreography("todos")
Alice, Bob, Store = c.lifelines("Alice", "Bob", "Store")
todos = c.var("todos", object, init={Store: []})
ver = c.var("ver", int, init={Store: 0})
req_todos = c.var("req_todos", object)
req_ver = c.var("req_ver", int)
with c.parallel():
    for agent, item in ((Alice, "milk"), (Bob, "eggs")):
        with c.thread():
            with serve(Store):
                c.send(agent, Store, label=f"read {agent}")
                c.send(Store, agent, todos, ver, label=f"snapshot {agent}")
            c.act(agent, add(item), assigns=[todos], label=f"add {item}")
            with serve(Store):
                c.send(agent, Store, req_todos=todos, req_ver=ver, label=f"update {agent}")
                with c.if_("req_ver == ver", at=Store, label=f"fresh {agent}?"):
                    c.act(Store, apply, assigns=[todos, ver], reads=[req_todos, ver],
                          label="apply")
                    c.send(Store, agent, label=f"ok {agent}")
                with c.else_():
                    c.send(Store, agent, label=f"conflict {agent}")
c.result(Store, todos, ver)
'''


def todos(tmp_path, atomic: bool = True):
    source = TODOS if atomic else TODOS.replace("ATOMIC = True", "ATOMIC = False")
    path = write(tmp_path, source, "todos.py" if atomic else "todos_plain.py")
    return path, load_one(str(path))


def accepted(trace) -> list[tuple[str, int]]:
    """(agent, the version its update was judged against) for every accepted update,
    from the Store's store replayed along its events."""
    store, found = dict(trace.init["Store"]), []
    for e in trace.events:
        if e.lifeline != "Store":
            continue
        store.update(e.set)
        if e.kind == "choice" and e.outcome:
            found.append((e.label[len("fresh "):-1], store["req_ver"]))
    return found


def lost_update(trace, results) -> bool:
    """Two updates accepted against the same version, or an accepted item missing at the end."""
    versions = [v for _, v in accepted(trace)]
    final = results["Store"]["todos"]
    return len(set(versions)) < len(versions) or \
        any(ITEMS[agent] not in final for agent, _ in accepted(trace))


def served_whole(trace) -> bool:
    """Each request's Store events are consecutive at the Store: nothing of the other agent's
    between the receive of its request and the reply."""
    store = [e.label for e in trace.events if e.lifeline == "Store"]
    for position, label in enumerate(store):
        if label.startswith(("read ", "update ")):
            agent = label.split()[1]
            reply = ("snapshot",) if label.startswith("read ") else ("ok", "conflict")
            for later in store[position + 1:]:
                if agent not in later and later != "apply":
                    return False
                if later.split()[0] in reply:
                    break
    return True


# ------------------------------------------------------------------ the lost update


def test_without_atomic_the_store_loses_updates_and_the_race_check_says_so(tmp_path):
    _, c = todos(tmp_path, atomic=False)
    assert {e.kind for e in validate(c).errors} == {"thread-race"}
    simulator = Simulator(c, project(c))  # run it anyway: the bug is real, not only reported
    lost = 0
    for seed in SEEDS:
        result = simulator.run(seed=seed)
        assert result.status == OK
        lost += lost_update(result.trace, result.results)
    assert 20 <= lost < len(SEEDS), lost  # 62 of 300 when written


def test_with_atomic_no_seed_loses_an_update_and_every_request_is_served_whole(tmp_path):
    _, c = todos(tmp_path)
    assert validate(c).ok, validate(c).render_errors()
    simulator = Simulator(c)
    both = 0
    for seed in SEEDS:
        result = simulator.run(seed=seed)
        assert result.status == OK, (seed, result.error)
        updates = accepted(result.trace)
        assert updates and not lost_update(result.trace, result.results), seed
        assert result.results["Store"]["ver"] == len(updates)
        assert served_whole(result.trace), seed
        both += len(updates) == 2  # read, update, read, update: both fresh
    assert 0 < both < len(SEEDS), both  # 21 of 300 when written


def test_the_check_on_traces_does_see_interleaving(tmp_path):
    _, c = todos(tmp_path, atomic=False)
    simulator = Simulator(c, project(c))
    assert not all(served_whole(simulator.run(seed=seed).trace) for seed in range(50))


# ------------------------------------------------------------ the Runner, step by step


def _runners(c):
    plan = prepare(c)
    stores = plan.stores(plan.inputs())
    return {name: plan.runner(name, stores[name], 0) for name in plan.lifelines}


def _label(option) -> str:
    _, thread, message = option
    return message.label if message is not None else thread.want[1].label


def _fire(runners, name: str, label: str):
    runner = runners[name]
    (option,) = [o for o in runner.enabled() if _label(o) == label]
    _, message = runner.fire(option, runner.start(option) if calls(option) else None)
    if message is not None:
        runners[message.receiver].deliver(message)


def _offered(runners, name: str) -> set[str]:
    return {_label(o) for o in runners[name].enabled()}


def test_the_first_request_to_arrive_is_served_first_and_holds_the_store(tmp_path):
    _, c = todos(tmp_path)
    runners = _runners(c)
    assert _offered(runners, "Store") == set()
    _fire(runners, "Bob", "read Bob")
    # Alice's thread waits at the start of its block: it blocks nobody
    assert _offered(runners, "Store") == {"read Bob"}
    _fire(runners, "Alice", "read Alice")
    assert _offered(runners, "Store") == {"read Bob", "read Alice"}
    _fire(runners, "Store", "read Bob")  # Bob's thread holds the Store now
    assert _offered(runners, "Store") == {"snapshot Bob"}
    assert runners["Store"].inbox  # Alice's request waits in the inbox, not offered
    _fire(runners, "Store", "snapshot Bob")  # the block is left: released
    assert _offered(runners, "Store") == {"read Alice"}
    _fire(runners, "Bob", "snapshot Bob")
    _fire(runners, "Bob", "add eggs")
    _fire(runners, "Bob", "update Bob")
    _fire(runners, "Store", "read Alice")
    assert _offered(runners, "Store") == {"snapshot Alice"}  # Bob's update waits its turn
    _fire(runners, "Store", "snapshot Alice")
    _fire(runners, "Store", "update Bob")
    assert _offered(runners, "Store") == {"fresh Bob?"}
    _fire(runners, "Store", "fresh Bob?")
    _fire(runners, "Store", "apply")
    _fire(runners, "Store", "ok Bob")
    assert runners["Store"].holder is None
    for step in ("snapshot Alice", "add milk", "update Alice"):
        _fire(runners, "Alice", step)
    for step in ("update Alice", "fresh Alice?", "conflict Alice"):
        _fire(runners, "Store", step)
    _fire(runners, "Alice", "conflict Alice")
    _fire(runners, "Bob", "ok Bob")
    assert all(r.done for r in runners.values())
    assert runners["Store"].store["todos"] == ["eggs"] and runners["Store"].store["ver"] == 1


# ----------------------------------------------- projection, show, knowledge of choice


def test_show_prints_the_block_in_the_store_program_only(tmp_path):
    path, c = todos(tmp_path)
    result = cpl("show", path, "--lifeline", "Store")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[3:7] == ["      atomic",
                          "        recv signal ← Alice  \"read Alice\"",
                          "        send todos, ver → Alice  \"snapshot Alice\"",
                          "      atomic"]
    assert "atomic" not in show(project(c), "Alice")


def test_a_choice_inside_the_block_is_told_by_control_and_the_tell_is_inside_it(tmp_path):
    path = write(tmp_path, """
        c = Choreography("told")
        Agent, Store = c.lifelines("Agent", "Store")
        ver = c.var("ver", int, init={Store: 0})
        seen1, seen2 = c.var("seen1", bool), c.var("seen2", bool)
        with c.parallel():
            for n in (1, 2):
                with c.thread():
                    with c.atomic(Store):
                        c.send(Agent, Store, label=f"ask {n}")
                        with c.if_("ver == 0", at=Store, label=f"first {n}?"):
                            c.set(Store, ver=1)
                            c.send(Store, Agent, label=f"yes {n}")
                            c.set(Agent, **{f"seen{n}": True})
    """)
    c = load_one(str(path))
    report = validate(c)
    assert report.ok, report.render_errors()
    assert [d.told for d in report.projection.decisions] == [("Agent",), ("Agent",)]
    (par,) = report.projection.program("Store").body
    for thread in par.threads:
        (block,) = thread
        assert isinstance(block, LAtomic) and isinstance(block.body[1], LChoose)
        assert block.body[1].tell == ("Agent",)
    firsts = 0
    for seed in range(100):
        result = simulate(c, seed=seed)
        assert result.status == OK, result.error
        store = [e for e in result.trace.events if e.lifeline == "Store"]
        # ask, choice, tell (then: set, send): a block's events are consecutive
        kinds = [e.kind for e in store]
        assert kinds[:3] == ["recv", "choice", "send"], kinds
        firsts += [e.outcome for e in store if e.kind == "choice"] == [True, False]
    assert firsts == 100  # exactly one request finds ver == 0, always the first served


def test_a_block_in_a_loop_is_released_every_round_and_a_loop_inside_one_ends_it(tmp_path):
    path = write(tmp_path, """
        c = Choreography("rounds")
        Agent, Other, Store = c.lifelines("Agent", "Other", "Store")
        n = c.var("n", int, init={Agent: 0})
        k = c.var("k", int, init={Store: 0})
        with c.parallel():
            with c.thread():
                with c.while_("n < 3", at=Agent, label="again?"):
                    c.act(Agent, lambda v, r: v["n"] + 1, assigns=[n], reads=[n])
                    with c.atomic(Store):
                        c.send(Agent, Store, label="tick")
                        c.send(Store, Agent, label="tock")
            with c.thread():
                with c.atomic(Store):
                    c.send(Other, Store, label="hello")
                    with c.while_("k < 2", at=Store, label="count?"):
                        c.act(Store, lambda v, r: v["k"] + 1, assigns=[k], reads=[k])
                    c.send(Store, Other, label="bye")
    """)
    c = load_one(str(path))
    assert validate(c).ok, validate(c).render_errors()
    for seed in range(100):
        result = simulate(c, seed=seed)
        assert result.status == OK, (seed, result.error)
        store = [e.label for e in result.trace.events if e.lifeline == "Store"]
        assert store.count("tick") == 3
        start = store.index("hello")
        assert store[start:start + 7] == ["hello", "count?", "compute k", "count?",
                                          "compute k", "count?", "bye"], (seed, store)


def test_a_block_outside_any_parallel_is_allowed_and_harmless(tmp_path):
    path = write(tmp_path, """
        c = Choreography("alone")
        A, Store = c.lifelines("A", "Store")
        x = c.var("x", int, init={A: 1})
        with c.atomic(Store):
            c.send(A, Store, x)
            c.send(Store, A, x, label="back")
    """)
    c = load_one(str(path))
    assert validate(c).ok
    assert "  atomic\n    recv x ← A\n" in show(project(c), "Store")
    assert simulate(c, seed=1).status == OK


def test_included_sub_choreographies_keep_their_atomic_blocks_renamed(tmp_path):
    path = write(tmp_path, """
        serve = Choreography("serve")
        Client, Server = serve.lifelines("Client", "Server")
        hits = serve.var("hits", int, init={"Server": 0})
        with serve.atomic(Server):
            serve.send(Client, Server, label="hit")
            serve.act(Server, lambda v, r: v["hits"] + 1, assigns=[hits], reads=[hits])
            serve.send(Server, Client, hits, label="count")

        c = Choreography("host")
        A, B, Store = c.lifelines("A", "B", "Store")
        with c.parallel():
            with c.thread():
                c.include(serve, lifelines={"Client": A, "Server": Store})
            with c.thread():
                c.include(serve, lifelines={"Client": B, "Server": Store})
        c.result(Store, hits)
    """)
    c = load_one(str(path))
    assert validate(c).ok, validate(c).render_errors()
    for seed in range(50):
        result = simulate(c, seed=seed)
        assert result.status == OK and result.results["Store"]["hits"] == 2
        counts = sorted(e.set["hits"] for e in result.trace.events
                        if e.kind == "recv" and e.lifeline in ("A", "B"))
        assert counts == [1, 2], seed  # never both 1: the increments are serialized


# ------------------------------------------------------------------ validation


def test_an_atomic_access_still_races_with_a_non_atomic_one(tmp_path):
    path = write(tmp_path, """
        c = Choreography("half")
        A, B, Store = c.lifelines("A", "B", "Store")
        x = c.var("x", int, init={A: 1, B: 2})
        with c.parallel():
            with c.thread():
                with c.atomic(Store):
                    c.send(A, Store, x)
            with c.thread():
                c.send(B, Store, x)
                c.send(Store, B, x, label="echo")  # <-
    """)
    errors = validate(load_one(str(path))).errors
    assert [(e.kind, e.where.line) for e in errors] == [("thread-race", marked(path))]


def test_an_atomic_block_around_the_whole_parallel_does_not_serialize_its_threads(tmp_path):
    path = write(tmp_path, """
        c = Choreography("outside")
        A, B, Store = c.lifelines("A", "B", "Store")
        x = c.var("x", int, init={A: 1, B: 2})
        with c.atomic(Store):
            with c.parallel():
                with c.thread():
                    c.send(A, Store, x)
                    c.send(Store, A, x, label="echo a")
                with c.thread():
                    c.send(B, Store, x)  # <-
    """)
    errors = validate(load_one(str(path))).errors
    assert [(e.kind, e.where.line) for e in errors] == [("thread-race", marked(path))]


@pytest.mark.parametrize("body, kind, message", [
    ("""
        with c.atomic(Store):  # <-
            c.send(A, B, label="aside")
     """, "empty-atomic", "c.atomic(Store) holds no event of Store: nothing to serialize"),
    ("""
        with c.atomic(Store):  # <-
            pass
     """, "empty-atomic", "c.atomic(Store) holds no event of Store: nothing to serialize"),
    ("""
        with c.atomic("Stor"):  # <-
            c.send(A, Store)
     """, "unknown-lifeline", "unknown lifeline 'Stor' in atomic; did you mean 'Store'?"),
    ("""
        with c.atomic(Store):
            with c.atomic(Store):  # <-
                c.send(A, Store)
     """, "nested-atomic", "c.atomic(Store) inside c.atomic(Store) (line 5): Store already "
         "serves the outer block in one go"),
], ids=["nothing-at-the-lifeline", "empty", "unknown-lifeline", "nested"])
def test_hostile_blocks_are_errors_at_their_line(tmp_path, body, kind, message):
    path = write(tmp_path, 'c = Choreography("hostile")\n'
                 'A, B, Store = c.lifelines("A", "B", "Store")\n' + textwrap.dedent(body))
    c = load_one(str(path))
    (error,) = validate(c).errors
    assert (error.kind, error.message, error.where.line) == (kind, message, marked(path))
    with pytest.raises(ChoreographyError) as raised:
        Simulator(c)
    assert (raised.value.message, raised.value.where.line) == (message, marked(path))
    result = cpl("validate", path)
    assert result.returncode == 2
    assert f"choreo_case.py:{marked(path)}: error: {message}" in result.stderr


def test_an_opener_never_entered_and_nested_blocks_of_two_lifelines(tmp_path):
    c = Choreography("x")
    A, Store = c.lifelines("A", "Store")
    c.atomic(Store)
    with pytest.raises(ChoreographyError, match=r"c.atomic\(...\) was never entered"):
        c.send(A, Store)
    c = Choreography("y")
    A, B, Store = c.lifelines("A", "B", "Store")
    with c.atomic(Store):
        with c.atomic(B):
            c.send(Store, B)
    assert validate(c).ok


# ------------------------------------------------------------------ deadlock


def test_blocks_held_in_opposite_orders_deadlock_and_the_run_says_so(tmp_path):
    path = write(tmp_path, """
        c = Choreography("crossed")
        A, B, S, T = c.lifelines("A", "B", "Sx", "Tx")
        with c.parallel():
            with c.thread():
                with c.atomic(S):
                    c.send(A, S, label="s1")
                    with c.atomic(T):
                        c.send(S, T, label="t1")
                        c.send(T, S, label="back1")
            with c.thread():
                with c.atomic(T):
                    c.send(B, T, label="t2")
                    with c.atomic(S):
                        c.send(T, S, label="s2")
                        c.send(S, T, label="back2")
    """)
    c = load_one(str(path))
    assert validate(c).ok  # lock order is not checked before a run: the run reports it
    simulator = Simulator(c)
    statuses = []
    for seed in range(60):
        result = simulator.run(seed=seed, timeout=10)
        statuses.append(result.status)
        if result.status == DEADLOCK:
            assert "deadlock: no event can happen" in result.error
            assert "Sx waits for another thread to leave c.atomic(Sx)" in result.error
            assert "Tx waits for another thread to leave c.atomic(Tx)" in result.error
    assert set(statuses) == {OK, DEADLOCK}, statuses


# ------------------------------------------------------------------ over ZeroMQ


def test_the_atomic_store_over_processes_serves_whole_and_rechecks(tmp_path):
    path, _ = todos(tmp_path)
    trace_path = tmp_path / "todos.jsonl"
    code, out, err, _ = run_cpl(tmp_path, "run", str(path), "--seed", "2", "--timeout", "40",
                                "--trace", str(trace_path))
    assert code == 0, err
    trace = load_trace(trace_path)
    assert trace.meta["status"] == "ok" and trace.meta["processes"] is True
    check_messages(trace)
    assert check_semantics(trace) == 2
    assert served_whole(trace)
    updates = accepted(trace)
    assert updates and len({v for _, v in updates}) == len(updates)
    assert trace.meta["results"]["Store"]["ver"] == len(updates)
    assert "Store: todos = " in out
    rechecked = cpl("eval", trace_path)
    assert rechecked.returncode == 0, rechecked.stdout + rechecked.stderr
    assert rechecked.stdout.splitlines()[-1] == "2 decisions re-checked: all agree"
