"""A3 causal cascade: a result that survives the retraction of the plan it rests on.

The story (docs/anomalies.md, "A3 -- causal cascade"; spec scenario S6).  A
Planner commits a plan, operation p1, at the Store.  An Executor reads the
plan -- the Store serves it with its writer, so the Executor now depends on
p1 (``dep_p1``) -- and commits its result, operation j1, with
``req_dep_p1 = true``; later it is to send an irreversible e-mail.
Concurrently the Supervisor reviews the plan and, half of the time, retracts
it: ``aborted_p1 = true``, sent to the Store, which compensates (the plan is
rolled back).  Without a cascade, j1 survives with an aborted predecessor,
and its e-mail leaks a result built on a retracted plan.  No guard at j1's
commit can prevent this alone: p1 may be aborted *after* j1 commits.

The guards -- three pieces, all at the places that own the facts:

* "commit j1?", the Store, in one ``c.atomic(Store)`` block with the apply:
  guarded ``g3_commit(["p1"])`` (P-owner: every predecessor committed and not
  aborted); unguarded ``!(req_dep_p1 == true) || committed_p1 == true``, the
  L1-class baseline that checks only that the predecessor committed;
* "cascade to j1?", the Store, when it processes abort(p1), in one atomic
  block with the compensation: guarded ``g3_cascade("j1", ["p1"])`` (P-owner:
  j1 depends on p1, p1 is aborted, j1 is not yet) -- then the Store sets
  ``aborted_j1`` and sends abort(j1) to the Executor.  This is what makes the
  catalog's predicate false of the final history;
* "send e-mail?", the Executor, before its irreversible effect: guarded
  ``g3_ext(["p1"])`` (P-stable: p1 is visibly *final*, which the Supervisor
  sets only when it confirms the plan, and which cannot be revoked), conjoined
  in both twins with ``status == committed && !(cancelled == true)``.  The
  Executor decides after it heard from the Supervisor (p1 final) or from the
  Store (abort(j1) or no cascade) -- that wait is the gate's "wait until then".

Why the unguarded cascade guard is not ``false``.  The twins must differ only
in guard texts, and the validator rejects a constant ``false`` guard whose
branch would be dead code.  So the unguarded twin's cascade rule is a real,
plausible policy that never fires here: ``dep_j1_p1 == true && aborted_p1 ==
true && !(committed_j1 == true)`` -- "a commit is durable: cascade only to
dependents that have not committed yet".  The Store records ``dep_j1_p1`` in
the very event that commits j1 (``committed_j1 = true``), so this guard is
false at every evaluation: the baseline never cascades, exactly the
compensating runtime of the story that rolls back only the aborted operation.

The records (cpl.anomalies.extract): the Store's applies set ``op = "apply"``,
``writer``, ``w_plan``/``w_result``, ``committed_p1``/``committed_j1``, with
``req_dep_p1`` in the store (j1's ``preds``); the serve sets ``op = "serve"``,
``op_agent`` and ``rd_Executor_plan``; the Supervisor and the cascade set
``aborted_p1``/``aborted_j1``.  ``detect(trace)["causal_cascade"]`` fires when
j1 survives with p1 aborted among its predecessors.  Nothing here is retried
(a retracted plan leaves nothing to redo): ``retries`` stays 0; the Executor
counts a surviving result as a commit, a rejected or cascaded one as an abort.

Try it::

    cpl validate examples/anomalies/causal_cascade.py --name guarded
    cpl show examples/anomalies/causal_cascade.py --name guarded --lifeline Store
    cpl run examples/anomalies/causal_cascade.py --name unguarded --sim --seed 4 --trace u4.json
    cpl run examples/anomalies/causal_cascade.py --name guarded --sim --seed 4 --trace g4.json
    cpl eval g4.json
    cpl explore examples/anomalies/causal_cascade.py --name unguarded --runs 200
    cpl explore examples/anomalies/causal_cascade.py --name guarded --runs 200
    cpl run examples/anomalies/causal_cascade.py --name guarded --trace zmq.json   # over ZeroMQ

With seed 4 j1 commits before the Supervisor's retraction reaches the Store.
Unguarded, j1 survives and the e-mail goes out::

    $ cpl run examples/anomalies/causal_cascade.py --name unguarded --sim --seed 4 --trace u4.json
    Planner: plan = "escalate ticket 7"
    Executor: status = "committed", cancelled = false, emailed = true, commits = 1, aborts = 0, retries = 0
    Store: committed_p1 = true, aborted_p1 = true, committed_j1 = true, aborted_j1 = false
    Sup: verdict = "retract"

guarded, the abort cascades to j1 and the e-mail is held::

    $ cpl run examples/anomalies/causal_cascade.py --name guarded --sim --seed 4 --trace g4.json
    Planner: plan = "escalate ticket 7"
    Executor: status = "committed", cancelled = true, emailed = false, commits = 0, aborts = 1, retries = 0
    Store: committed_p1 = true, aborted_p1 = true, committed_j1 = true, aborted_j1 = true
    Sup: verdict = "retract"
    $ cpl eval g4.json
    Sup.3  Sup  retract p1?: recorded true, computed true  agrees
    Store.12  Store  commit j1?: recorded true, computed true  agrees
    Store.18  Store  cascade to j1?: recorded true, computed true  agrees
    Executor.10  Executor  send e-mail?: recorded false, computed false  agrees
    4 decisions re-checked: all agree
    $ python -c "from cpl.anomalies import detect; from cpl.trace.files import load_trace; print([detect(load_trace(f))['causal_cascade'] for f in ('u4.json', 'g4.json')])"
    [[Cascade(j=2, p=1)], []]

(With seed 0 the retraction comes first: the guarded Store rejects j1 at
commit instead.)  Over 200 runs (``cpl explore``, mixed schedules) the
Supervisor retracts p1 in 104; the unguarded twin keeps j1 on the aborted p1
in 95 runs (47.5 %) -- in the other 9 the Executor read the plan after it was
rolled back, so it depended on nothing -- and the guarded one in none: 76
cascades and 19 rejections at commit, 105 results kept and e-mailed (``commits``
105, ``aborts`` 95, ``retries`` 0, no failed run).
"""  # noqa: E501 (the runs shown are real output, verbatim: tests compare them)

from choreo import Choreography, coin
from cpl.anomalies import guards

RETRACT = 0.5  # how often the Supervisor retracts the plan

# The Store's commit guard.  Unguarded: the L1-class baseline checks only that the
# predecessor committed.  Guarded: G3_commit, committed and not aborted.
COMMIT = {False: "!(req_dep_p1 == true) || committed_p1 == true",
          True: guards.g3_commit(["p1"]).text}
# The Store's cascade rule, when it processes abort(p1).  Unguarded: the baseline treats
# a commit as durable and cascades only to dependents that have not committed -- but a
# dependency is recorded by the commit itself, so it never cascades.  Guarded: G3_cascade.
CASCADE = {False: "dep_j1_p1 == true && aborted_p1 == true && !(committed_j1 == true)",
           True: guards.g3_cascade("j1", ["p1"]).text}
# The Executor's gate before its irreversible e-mail.  Unguarded: its result committed
# and was not cancelled.  Guarded: that, and G3_ext (the plan is visibly final).
EMAIL_OK = "status == committed && !(cancelled == true)"
EMAIL = {False: EMAIL_OK,
         True: f"{EMAIL_OK} && ({guards.g3_ext(['p1']).text})"}


def make_plan(variables, rng):
    return rng.choice(["refund order 42", "escalate ticket 7", "close ticket 7"])


def commit_plan(variables, rng):
    return variables["req_val_plan"]


commit_plan.reads = ["req_val_plan"]


def serve_plan(variables, rng):
    """A read served with its writer: the plan depends on p1 while p1's write stands."""
    live = variables["committed_p1"] is True and variables["aborted_p1"] is not True
    return "serve", "Executor", variables["val_plan"], live


serve_plan.reads = ["val_plan", "committed_p1", "aborted_p1"]


def execute(variables, rng):
    plan = variables["plan"]
    return f"done: {plan}" if plan is not None else "nothing to do"


execute.reads = ["plan"]


def commit_result(variables, rng):
    return variables["req_val_result"], variables["req_dep_p1"]


commit_result.reads = ["req_val_result", "req_dep_p1"]


def review(variables, rng):
    return "retract" if coin(rng, RETRACT) else "confirm"


review.reads = ["plan"]


def tally(variables, rng):
    kept = variables["status"] == "committed" and variables["cancelled"] is not True
    return int(kept), int(not kept)


tally.reads = ["status", "cancelled"]


def build(name: str, guarded: bool) -> Choreography:
    c = Choreography(name)
    Planner, Executor, Store, Sup = c.lifelines("Planner", "Executor", "Store", "Sup")
    Status = c.symbols("Status", "committed", "rejected")
    Verdict = c.symbols("Verdict", "retract", "confirm")

    # Store: cells, operation status and the convention of cpl.anomalies.extract.
    val_plan = c.var("val_plan", object)
    val_result = c.var("val_result", object)
    c.var("w_plan", bool)
    c.var("w_result", bool)
    c.var("op", str)
    c.var("op_agent", str)
    c.var("req_agent", str)
    c.var("writer", str)
    rd_plan = c.var("rd_Executor_plan", object)
    from_p1 = c.var("from_p1", bool)  # the value served was written by p1
    c.var("req_val_plan", object)
    c.var("req_val_result", str)
    c.var("req_dep_p1", bool)
    committed_p1 = c.var("committed_p1", bool, init={Store: False})
    committed_j1 = c.var("committed_j1", bool, init={Store: False})
    aborted_p1 = c.var("aborted_p1", bool, init={Store: False, Sup: False})
    aborted_j1 = c.var("aborted_j1", bool, init={Store: False})
    dep_j1_p1 = c.var("dep_j1_p1", bool, init={Store: False})
    # Planner, Executor, Sup.
    plan = c.var("plan", object)
    result = c.var("result", str)
    dep_p1 = c.var("dep_p1", bool)
    status = c.var("status", Status)
    cancelled = c.var("cancelled", bool, init={Executor: False})
    emailed = c.var("emailed", bool, init={Executor: False})
    commits = c.var("commits", int, init={Executor: 0})
    aborts = c.var("aborts", int, init={Executor: 0})
    retries = c.var("retries", int, init={Executor: 0})  # nothing here is retried
    verdict = c.var("verdict", Verdict)
    c.var("final_p1", bool, init={Sup: False})

    # 1. The Planner commits p1.
    c.act(Planner, make_plan, assigns=[plan], label="plan")
    c.send(Planner, Store, req_val_plan=plan, label="commit p1")
    c.set(Store, op="commit_req", req_agent="Planner", req_dep_p1=False)
    c.act(Store, commit_plan, assigns=[val_plan], label="apply p1")
    c.set(Store, op="apply", writer="Planner", w_plan=True, w_result=False, committed_p1=True)
    c.send(Store, Planner, label="p1 committed")
    c.send(Planner, Sup, plan, label="review p1")

    with c.parallel():
        with c.thread():  # 2. the Executor reads the plan (depends on p1) and commits j1
            with c.atomic(Store):
                c.send(Executor, Store, label="read plan")
                c.act(Store, serve_plan, assigns=["op", "op_agent", rd_plan, from_p1],
                      label="serve plan")
                c.send(Store, Executor, label="plan", plan=rd_plan, dep_p1=from_p1)
            c.act(Executor, execute, assigns=[result], label="execute (generation)")
            with c.atomic(Store):
                c.send(Executor, Store, req_val_result=result, req_dep_p1=dep_p1,
                       label="commit j1")
                c.set(Store, op="commit_req", req_agent="Executor", req_val_plan=None)
                with c.if_(COMMIT[guarded], at=Store, label="commit j1?"):
                    c.act(Store, commit_result, assigns=[val_result, dep_j1_p1],
                          label="apply j1")
                    c.set(Store, op="apply", writer="Executor", w_plan=False, w_result=True,
                          committed_j1=True)
                    c.send(Store, Executor, label="j1 committed")
                    c.set(Executor, status=Status.committed)
                with c.else_():
                    c.send(Store, Executor, label="j1 rejected")
                    c.set(Executor, status=Status.rejected)
        with c.thread():  # 3. the Supervisor confirms p1 or retracts it
            c.act(Sup, review, assigns=[verdict], label="review")
            with c.if_("verdict == retract", at=Sup, label="retract p1?"):
                c.set(Sup, aborted_p1=True)
                with c.atomic(Store):
                    c.send(Sup, Store, aborted_p1, label="abort p1")
                    c.set(Store, op="abort", val_plan=None)
                    with c.if_(CASCADE[guarded], at=Store, label="cascade to j1?"):
                        c.set(Store, aborted_j1=True, val_result=None)
                        c.send(Store, Executor, cancelled=aborted_j1, label="abort j1")
                    with c.else_():
                        c.send(Store, Executor, label="no cascade")
            with c.else_():
                c.set(Sup, final_p1=True)
                c.send(Sup, Executor, label="p1 final")

    # 4. The Executor tallies its work and decides its irreversible e-mail.
    c.act(Executor, tally, assigns=[commits, aborts], label="tally")
    with c.if_(EMAIL[guarded], at=Executor, label="send e-mail?"):
        c.set(Executor, emailed=True)

    c.result(Planner, plan)
    c.result(Sup, verdict)
    c.result(Store, committed_p1, aborted_p1, committed_j1, aborted_j1)
    c.result(Executor, status, cancelled, emailed, commits, aborts, retries)
    return c


unguarded = build("unguarded", guarded=False)
guarded = build("guarded", guarded=True)
