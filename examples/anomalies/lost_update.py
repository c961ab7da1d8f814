"""Lost update: the deer-flow to-do list that disappears when the run completes.

deer-flow issue #3123 ("the to-do list shown during streaming disappears
after the run completes"), S10 of the anomaly catalog.  The Planner reads the
to-do list (null: none yet) from its owner, the channel `Todos`, hands the
task to the Reporter and commits its plan, `todos = ["search the web", "write
the report"]`, which is streamed to the UI.  Concurrently the Reporter writes
its report and commits its state update `{report, todos}` — with `todos =
null`, because it never read the list: a partial update.  Under last write
wins, when the Reporter's update is applied after the Planner's, the list is
gone: the UI showed it while streaming and shows `null` at the end.  The
Reporter's write did not read the Planner's and the Planner's contribution is
absent from the final value: a lost update (outside the A1-A6 catalog; the
detector is `lost_update`).

Every read is served by `Todos` in one `serve` event and every update is a
request `Todos` receives (`commit_req`), decides and, if it accepts, applies
(`apply`), each in one `c.atomic(Todos)` block — the variable convention from
which `cpl.anomalies.detect` rebuilds the operations.  A rejected update gets
a 409 that carries the current list and its version; the agent regenerates
from them and tries again (at most `BUDGET` attempts), in both choreographies.

Guarded, `Todos` accepts an update only under G_occ and G_noclobber,
`guards.g_occ("todos")` and `guards.g_noclobber("todos")`:

    req_base_ver_todos == ver_todos && (!(req_val_todos == null) || val_todos == null)

Owner: the channel `Todos`; pattern P-owner, exact: every write of the list
is decided on its owner's lifeline, against the current version.  G_occ
(ETag/OCC) rejects a write that does not name the current version as its
base — a blind write names none; G_noclobber is the reducer contract of
deer-flow's fix (a null update never clobbers a list).  So the Reporter's
first update is refused, and its retry carries the list it was sent back:
nothing is lost.  Unguarded, the guard is one that always holds.

Try it:

    cpl validate examples/anomalies/lost_update.py --name guarded
    cpl run examples/anomalies/lost_update.py --name unguarded --sim --seed 8 --trace u8.json
    cpl run examples/anomalies/lost_update.py --name guarded --sim --seed 8 --trace g8.json
    cpl eval g8.json
    python -c "import cpl.anomalies as a, cpl.trace.files as t; print(a.detect(t.load_trace('u8.json'))['lost_update'])"
    cpl explore examples/anomalies/lost_update.py --name unguarded --runs 200
    cpl explore examples/anomalies/lost_update.py --name guarded --runs 200

Seed 8, unguarded — the detector reports `[LostUpdate(k=1, m=2,
cell='todos')]`, the Planner's write (1) lost to the Reporter's (2):

    Planner: todos = ["search the web", "write the report"], commits = 1, aborts = 0, retries = 0
    Reporter: report = "report: 3 sources, 2 findings", commits = 1, aborts = 0, retries = 0
    Todos: val_todos = null, val_report = "report: 3 sources, 2 findings"
    UI: streamed = ["search the web", "write the report"], final = null

Seed 8, guarded — both guards are false at the Reporter's first update
(`cpl eval u8.json 'req_base_ver_todos == ver_todos' --lifeline Todos` shows
`Todos.13  Todos  choice  false` on the unguarded trace too); the retry is
accepted:

    Planner: todos = ["search the web", "write the report"], commits = 1, aborts = 0, retries = 0
    Reporter: report = "report: 3 sources, 2 findings", commits = 1, aborts = 1, retries = 1
    Todos: val_todos = ["search the web", "write the report"], val_report = "report: 3 sources, 2 findings"
    UI: streamed = ["search the web", "write the report"], final = ["search the web", "write the report"]

Over 200 runs (`cpl explore FILE --name NAME --runs 200`: seeds 0..199, the
mixed adversarial schedules), every run ends ok.  Unguarded, lost_update fires
in 125 runs (62.5%), with 400 commits, 0 aborts, 0 retries.  Guarded, it fires
in none, and both agents still commit in every run: 400 commits, with 275
rejected updates (aborts: the Reporter's 200 blind first updates among them)
and 275 retries.

For every MSC (`cpl verify`; docs/cli.md and docs/anomalies.md, "Proved
prevention"), both searches complete.  Unguarded, 94 of the 164 message
sequence charts lose the Planner's list, the first in MSC 1 (`cpl explore`
met one at seed 1, late delivery):

    $ cpl verify examples/anomalies/lost_update.py --name unguarded --counterexample bad.jsonl; echo "exit status $?"
    cpl verify examples/anomalies/lost_update.py --name unguarded: complete, every MSC within the bounds
      164 MSCs in 164 runs
      statuses: ok 164
      decisions: accept planner?    true 164, false 0
                 accept reporter?   true 164, false 0
                 planner attempt?   true 164, false 164
                 planner retry?     true 0, false 164
                 reporter attempt?  true 164, false 164
                 reporter retry?    true 0, false 164
      detectors: lost_update: fired in 94 of 164 MSCs, first in MSC 1 (path 0.0.0.0.0.0.0.0.0.0)

Guarded, none of its 596 does (more MSCs: a rejected update and its retry
are events too):

    $ cpl verify examples/anomalies/lost_update.py --name guarded; echo "exit status $?"
    cpl verify examples/anomalies/lost_update.py --name guarded: complete, every MSC within the bounds
      596 MSCs in 596 runs
      statuses: ok 596
      decisions: accept planner?    true 596, false 182
                 accept reporter?   true 596, false 862
                 planner attempt?   true 778, false 596
                 planner retry?     true 182, false 596
                 reporter attempt?  true 1,458, false 596
                 reporter retry?    true 862, false 596
      detectors: nothing fired (causal_cascade, lost_update, phantom_tool,
                   stale_generation, tool_effect_reordering)
"""  # noqa: E501 (the runs shown are real output, verbatim: tests compare them)

from choreo import Choreography
from cpl.anomalies import guards

BUDGET = 4  # attempts per agent: a rejected agent regenerates from the state the 409 carries
LOOP = f"!(done == true) && tries < {BUDGET}"  # the same in both choreographies
PLAN = ["search the web", "write the report"]

GUARDED = f"{guards.g_occ('todos').text} && ({guards.g_noclobber('todos').text})"
UNGUARDED = "ver_todos >= 0"  # always true: last writer wins (a constant `true` would
#                               make the rejection branch dead code, which validation refuses)


def serve(agent):
    def serve(variables, rng):
        return "serve", agent, variables["val_todos"]
    serve.reads = ["val_todos"]
    serve.__name__ = f"serve {agent}"
    return serve


def apply(agent):
    def apply(variables, rng):
        todos, report = variables["req_val_todos"], variables["req_val_report"]
        writes_report = report is not None
        return {"op": "apply", "writer": agent, "w_todos": True, "val_todos": todos,
                "ver_todos": variables["ver_todos"] + 1, "w_report": writes_report,
                "val_report": report if writes_report else variables["val_report"]}
    apply.reads = ["req_val_todos", "req_val_report", "ver_todos", "val_report"]
    apply.__name__ = f"apply {agent}"
    return apply


def plan(variables, rng):
    """The Planner adds its steps to the to-do list it read."""
    return (variables["todos"] or []) + [step for step in PLAN
                                         if step not in (variables["todos"] or [])]


def write_report(variables, rng):
    """The Reporter writes the report; its state update carries `todos` as it has it —
    null, since it never read the list (a partial update)."""
    return "report: 3 sources, 2 findings"


plan.reads, write_report.reads = ["todos"], []


def bump(name):
    def bump(variables, rng):
        return variables[name] + 1
    bump.reads = [name]
    bump.__name__ = f"count {name}"
    return bump


def build(name: str, guard: str) -> Choreography:
    c = Choreography(name)
    Planner, Reporter, Todos, UI = c.lifelines("Planner", "Reporter", "Todos", "UI")
    # the channel owner: the to-do list with its version, the report, the standard variables
    val_todos = c.var("val_todos", object, init={Todos: None})  # null: "no list yet"
    c.var("ver_todos", int, init={Todos: 0})
    c.var("val_report", object, init={Todos: None})
    op, op_agent = c.var("op", str), c.var("op_agent", str)
    rd = {agent: c.var(f"rd_{agent}_todos", object) for agent in ("planner", "reporter")}
    for variable, kind in (("writer", str), ("w_todos", bool), ("w_report", bool),
                           ("req_agent", str), ("req_val_todos", object),
                           ("req_base_ver_todos", object), ("req_val_report", object)):
        c.var(variable, kind)
    # the agents: their copy of the list and of its version, what they produce and count
    agents = (Planner, Reporter)
    todos = c.var("todos", object, init={Reporter: None})  # the Reporter never read it
    base = c.var("base_ver", object, init={Reporter: None})
    report = c.var("report", str)
    c.var("done", bool, init={a: False for a in agents})
    tries = c.var("tries", int, init={a: 0 for a in agents})
    commits = c.var("commits", int, init={a: 0 for a in agents})
    aborts = c.var("aborts", int, init={a: 0 for a in agents})
    retries = c.var("retries", int, init={a: 0 for a in agents})
    streamed, final = c.var("streamed", object), c.var("final", object)

    # (lifeline, agent name, generation, what it generates, carries a report?)
    plans = ((Planner, "planner", plan, todos, False),
             (Reporter, "reporter", write_report, report, True))
    c.send(Planner, Todos, label="read planner")  # the Planner reads the list first
    c.act(Todos, serve("planner"), assigns=[op, op_agent, rd["planner"]])
    c.send(Todos, Planner, todos="val_todos", base_ver="ver_todos", label="snapshot planner")
    with c.parallel():
        for agent, who, generate, output, reports in plans:
            with c.thread():
                if reports:  # the Planner hands the task on while it commits its plan
                    c.send(Planner, Reporter, label="kickoff")
                with c.while_(LOOP, at=agent, label=f"{who} attempt?"):
                    with c.if_("tries > 0", at=agent, label=f"{who} retry?"):
                        c.act(agent, bump("retries"), assigns=[retries])
                    c.act(agent, bump("tries"), assigns=[tries])
                    c.act(agent, generate, assigns=[output], label=generate.__name__)
                    with c.atomic(Todos):  # the update, the guard and the apply
                        if reports:
                            c.send(agent, Todos, req_val_todos=todos, req_base_ver_todos=base,
                                   req_val_report=report, label=f"update {who}")
                            c.set(Todos, label=f"commit_req {who}", op="commit_req",
                                  req_agent=who)
                        else:
                            c.send(agent, Todos, req_val_todos=todos, req_base_ver_todos=base,
                                   label=f"update {who}")
                            c.set(Todos, label=f"commit_req {who}", op="commit_req",
                                  req_agent=who, req_val_report=None)
                        with c.if_(guard, at=Todos, label=f"accept {who}?"):
                            c.act(Todos, apply(who), assigns=[
                                "op", "writer", "w_todos", "val_todos", "ver_todos",
                                "w_report", "val_report"])
                            c.send(Todos, agent, label=f"ok {who}")
                            c.set(agent, done=True)
                            c.act(agent, bump("commits"), assigns=[commits])
                        with c.else_():  # 409, with the current list and version
                            c.act(Todos, serve(who), assigns=[op, op_agent, rd[who]])
                            c.send(Todos, agent, todos="val_todos", base_ver="ver_todos",
                                   label=f"409 {who}")
                            c.act(agent, bump("aborts"), assigns=[aborts])
                if not reports:  # what the UI shows while the run streams
                    c.send(agent, UI, streamed=todos, label="stream")
    c.send(Todos, UI, final=val_todos, label="run complete")  # what it shows at the end
    c.result(Planner, todos, commits, aborts, retries)
    c.result(Reporter, report, commits, aborts, retries)
    c.result(Todos, val_todos, "val_report")
    c.result(UI, streamed, final)
    return c


unguarded = build("unguarded", UNGUARDED)
guarded = build("guarded", GUARDED)
