"""A6 tool-effect reordering: the LangGraph ToolNode story.

One assistant turn plans an order-dependent pipeline -- create_database,
run_migrations, enable_live_traffic -- as one batch of tool calls.  The
ToolNode runs the calls concurrently (LangGraph's ToolNode does it with
``asyncio.gather``): three tool lifelines T1..T3, one per call.  Each tool
externalizes its effect on the World when it completes, so the World sees
the effects in completion order, not in issuance order, and live traffic can
reach a database that does not exist yet.  The results that go back to the
ToolNode hide it: gather returns them in issuance order.

The World follows the record convention of docs/anomalies.md: each applied
effect sets ``applied_op`` (the operation, ``"deploy"``), ``applied_idx``
(its position in issuance order) and ``applied`` (its name), so
``cpl.anomalies.detect(trace)["tool_effect_reordering"]`` sees the batch.
Its own invariant ``live_ok`` turns false for good when live traffic lands
before the database exists: the harm, not just the reordering.

The guard (the only difference between the twins) is the World's, decided
inside ``with c.atomic(World):`` together with the apply it protects:

* ``guarded``: G6_sink, ``cpl.anomalies.guards.g6_sink("deploy", 3)`` --
  owner pattern (P-owner, exact): every effect lands on this one sink, whose
  local order *is* the commit order.  Effect k is applied only if effect k-1
  was applied here before (``O(applied_op == "deploy" && applied_idx ==
  k-1)``); an early effect is turned away and its tool tries again, up to 8
  times (``--arg max_tries=N``; the loop guard ``!(done == true) && tries <
  max_tries`` is the same in both twins).  A tool that runs out of tries gives up (``aborts``): the pipeline
  stops short, it never runs out of order.
* ``unguarded``: ``req_op == "deploy"`` -- any effect of the batch, in the
  order it arrives.  (A literal ``true`` would make the else-branch dead code,
  which validation rejects.)

The World counts ``commits`` (effects applied) and ``retries`` (effects
turned away); each tool reports ``aborts`` (1 if it gave up).

    cpl show examples/anomalies/tool_reordering.py --name guarded --lifeline World
    cpl run examples/anomalies/tool_reordering.py --name unguarded --sim --seed 0 --trace reorder.json
    cpl explore examples/anomalies/tool_reordering.py --name unguarded --runs 200
    cpl explore examples/anomalies/tool_reordering.py --name guarded --runs 200
    cpl run examples/anomalies/tool_reordering.py --name guarded --trace zmq.json   # over ZeroMQ

Seed 0 applied run_migrations, enable_live_traffic, create_database -- live
traffic on a database that did not exist::

    $ cpl run examples/anomalies/tool_reordering.py --name unguarded --sim --seed 0 --trace reorder.json
    ToolNode: call_1 = "create_database", call_2 = "run_migrations", call_3 = "enable_live_traffic"
    World: applied = "create_database", db_exists = true, migrated = false, live_ok = false, commits = 3, retries = 0
    T1: tries = 1, aborts = 0
    T2: tries = 1, aborts = 0
    T3: tries = 1, aborts = 0
    $ python -c "from cpl.anomalies import detect; from cpl.trace.files import load_trace
    print(detect(load_trace('reorder.json'))['tool_effect_reordering'])"
    [Reordering(i=1)]
    $ cpl eval reorder.json | tail -n 1
    9 decisions re-checked: all agree

Over 200 runs (seeds 0..199, mixed schedules) the unguarded twin reorders
the batch in 162 and routes live traffic to a missing database in 108; the
guarded twin in none, still applying 554 of the 600 effects::

    $ cpl explore examples/anomalies/tool_reordering.py --name unguarded --runs 200 | grep -E 'reordering|commits|aborts|retries'
    tool_effect_reordering   162  81.0%  seed 0 (random)
    commits       600        3
    aborts          0        0
    retries         0        0
    $ cpl explore examples/anomalies/tool_reordering.py --name guarded --runs 200 | grep -E 'reordering|commits|aborts|retries'
    tool_effect_reordering     0  0.0%
    commits       554     2.77
    aborts         46     0.23
    retries       726     3.63
"""  # noqa: E501 (the runs shown are real output, verbatim: tests compare them)

from choreo import Choreography
from cpl.anomalies import guards

OP = "deploy"
STEPS = ("create_database", "run_migrations", "enable_live_traffic")
TRIES = 8  # the default of input max_tries

# The World's accept guard.  Unguarded: any effect of the pipeline, in the order it
# arrives (a literal `true` would make the else-branch dead code, which validation
# rejects).  Guarded: G6_sink, effect k only once effect k-1 was applied here.
ACCEPT = {False: f'req_op == "{OP}"', True: guards.g6_sink(OP, len(STEPS)).text}
RETRY = "!(done == true) && tries < max_tries"


def plan(variables, rng):
    """The assistant turn: one batch of tool calls, in the order the pipeline needs."""
    return STEPS


def attempt(variables, rng):
    return variables["tries"] + 1


def apply(variables, rng):
    """The World externalizes the effect it received, whatever state it finds."""
    effect = variables["req_effect"]
    db, migrated = variables["db_exists"], variables["migrated"]
    live_ok = variables["live_ok"]
    if effect == "create_database":
        db = True
    elif effect == "run_migrations":
        migrated = db
    elif effect == "enable_live_traffic":
        live_ok = live_ok and db
    return (variables["req_op"], variables["req_idx"], effect, db, migrated, live_ok,
            variables["commits"] + 1)


def reject(variables, rng):
    return variables["retries"] + 1


def give_up(variables, rng):
    return 0 if variables["done"] else 1


def build(name: str, guarded: bool) -> Choreography:
    c = Choreography(name)
    tool_node, world = c.lifelines("ToolNode", "World")
    tools = c.lifelines(*(f"T{k}" for k in range(1, len(STEPS) + 1)))

    calls = [c.var(f"call_{k}", str) for k in range(1, len(STEPS) + 1)]
    effect = c.var("effect", str)
    op = c.var("op", str, init={tool: OP for tool in tools})
    idx = c.var("idx", int, init={tool: k for k, tool in enumerate(tools, start=1)})
    tries = c.var("tries", int, init={tool: 0 for tool in tools})
    c.input("max_tries", int, default=TRIES, at=tools)
    done = c.var("done", bool, init={tool: False for tool in tools})
    aborts = c.var("aborts", int, init={tool: 0 for tool in tools})

    req_op, req_idx, req_effect = c.var("req_op", str), c.var("req_idx", int), \
        c.var("req_effect", str)
    applied_op, applied_idx, applied = c.var("applied_op", str), c.var("applied_idx", int), \
        c.var("applied", str)
    db_exists = c.var("db_exists", bool, init={world: False})
    migrated = c.var("migrated", bool, init={world: False})
    live_ok = c.var("live_ok", bool, init={world: True})
    commits = c.var("commits", int, init={world: 0})
    retries = c.var("retries", int, init={world: 0})

    c.act(tool_node, plan, assigns=calls, reads=[], label="plan tool calls")
    with c.parallel():
        for step, tool, call in zip(STEPS, tools, calls):
            with c.thread():
                c.send(tool_node, tool, effect=call, label=f"call {step}")
                with c.while_(RETRY, at=tool, label=f"{step}: send effect?"):
                    c.act(tool, attempt, assigns=[tries], reads=[tries], label=f"run {step}")
                    with c.atomic(world):
                        c.send(tool, world, req_op=op, req_idx=idx, req_effect=effect,
                               label=f"effect {step}")
                        with c.if_(ACCEPT[guarded], at=world, label=f"apply {step}?"):
                            c.act(world, apply,
                                  assigns=[applied_op, applied_idx, applied, db_exists,
                                           migrated, live_ok, commits],
                                  reads=[req_op, req_idx, req_effect, db_exists, migrated,
                                         live_ok, commits],
                                  label=f"apply {step}")
                            c.send(world, tool, label=f"applied {step}")
                            c.set(tool, done=True)
                        with c.else_():
                            c.act(world, reject, assigns=[retries], reads=[retries],
                                  label=f"not yet {step}")
                            c.send(world, tool, label=f"retry {step}")
                c.act(tool, give_up, assigns=[aborts], reads=[done], label=f"{step} done")
                c.send(tool, tool_node, label=f"result {step}")
    c.result(world, applied, db_exists, migrated, live_ok, commits, retries)
    for tool in tools:
        c.result(tool, tries, aborts)
    return c


unguarded = build("unguarded", guarded=False)
guarded = build("guarded", guarded=True)
