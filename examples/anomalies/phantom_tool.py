"""A2 phantom tool: a call dispatched to a tool that no longer exists.

The story (docs/anomalies.md, "A2 -- phantom tool"; spec scenarios S5/S5b).
The Agent lists the tool Registry, and its Model plans a call from that list
-- t1, with the signature it saw.  Concurrently the Admin, after the Scanner
flagged t1, removes it from the Registry (or, one time in four, re-signs it:
``sig_t1`` becomes ``"s1b"``).  The Agent then dispatches the call it planned:
to a tool that is gone, or whose signature no longer matches the plan.  No
agent-side guard can prevent this: the removal may still be in transit when
the Agent dispatches (G2_vis is only an early-abort hint).

The guard.  The dispatch is the commit point, and it is decided by the owner
of the registry: the Registry receives the dispatch request (``req_tool``,
``req_sig``, ``req_saw_tool``) and decides "accept dispatch?" in one
``c.atomic(Registry)`` block with the accept itself, so no change of the
registry can come between the decision and the dispatch.

* guarded: ``g2_reg(["t1", "t2"])`` -- P-owner, exact: the planned tool is
  present *now* with the signature pinned at planning.  A rejected Agent lists
  again and re-plans (t2 after a removal, t1 with ``"s1b"`` after a re-signing);
  the loop ``!(done == true) && tries < 3`` is the same in both twins (an
  Agent that runs out of tries would count an abort; with one change per run
  the second try always gets through).
* unguarded: ``req_saw_tool == true`` -- the Registry trusts the Agent's
  listing (the tool was in the list the Agent saw).  Always true here, but not
  a constant, so both twins have the same structure and differ only in guards.

The records (cpl.anomalies.extract): the Registry's serve sets ``op = "serve"``,
``op_agent = "Agent"`` (the read registry: the tools with ``has_<t> == true``
then); the request sets ``op = "commit_req"``; the accepted dispatch sets
``op = "apply"``, ``writer = "Agent"`` with ``req_tool`` the planned tool (the
write registry: the tools present then).  ``detect(trace)["phantom_tool"]``
fires when the planned tool was listed but is absent at the dispatch.  A
re-signing is the stricter L4 model's anomaly (S5b): G2_reg rejects it, the
catalog's membership-only predicate does not report it.

Try it::

    cpl validate examples/anomalies/phantom_tool.py --name guarded
    cpl show examples/anomalies/phantom_tool.py --name guarded --lifeline Registry
    cpl run examples/anomalies/phantom_tool.py --name unguarded --sim --seed 1 --trace u1.json
    cpl run examples/anomalies/phantom_tool.py --name guarded --sim --seed 1 --trace g1.json
    cpl eval g1.json
    cpl explore examples/anomalies/phantom_tool.py --name unguarded --runs 200
    cpl explore examples/anomalies/phantom_tool.py --name guarded --runs 200
    cpl run examples/anomalies/phantom_tool.py --name guarded --trace zmq.json   # over ZeroMQ

With seed 1 the removal lands between the listing and the dispatch.  The
unguarded Registry accepts the call to t1 although ``has_t1 = false``::

    $ cpl run examples/anomalies/phantom_tool.py --name unguarded --sim --seed 1 --trace u1.json
    Agent: planned = "t1", commits = 1, aborts = 0, retries = 0
    Model: planned = "t1", pinned_sig = "s1"
    Scanner: finding = "t1 is deprecated"
    Admin: change = "remove"
    Registry: has_t1 = false, sig_t1 = "s1", reg_ver = 1

the guarded one rejects it, and the Agent re-plans t2::

    $ cpl run examples/anomalies/phantom_tool.py --name guarded --sim --seed 1 --trace g1.json
    Agent: planned = "t2", commits = 1, aborts = 0, retries = 1
    Model: planned = "t2", pinned_sig = "s2"
    Scanner: finding = "t1 is deprecated"
    Admin: change = "remove"
    Registry: has_t1 = false, sig_t1 = "s1", reg_ver = 1
    $ cpl eval g1.json | tail -n 1
    6 decisions re-checked: all agree
    $ python -c "from cpl.anomalies import detect; from cpl.trace.files import load_trace; print([detect(load_trace(f))['phantom_tool'] for f in ('u1.json', 'g1.json')])"
    [[Phantom(i=1, tool='t1')], []]

Over 200 runs (``cpl explore``, mixed schedules) the unguarded twin dispatches
a removed tool in 85 runs (42.5 %), the guarded one in none, with a call
made in all 200 runs (``commits`` 200, ``retries`` 103, ``aborts`` 0, no failed
run).
"""  # noqa: E501 (the runs shown are real output, verbatim: tests compare them)

from choreo import Choreography, coin
from cpl.anomalies import guards

TOOLS = ("t1", "t2")
MAX_TRIES = 3

# The Registry's guard at "accept dispatch?".  Unguarded: the Registry trusts the
# agent's listing -- the tool was in the list the agent saw (always so here, but not
# a constant).  Guarded: G2_reg, the tool is present *now* with the pinned signature.
UNGUARDED = "req_saw_tool == true"
GUARDED = guards.g2_reg(TOOLS).text


def count_try(variables, rng):
    return variables["tries"] + 1


count_try.reads = ["tries"]


def plan(variables, rng):
    """The agent's generation: it prefers t1 when the listing had it, and pins the
    signature it saw."""
    tool = "t1" if variables["saw_t1"] is True else "t2"
    return tool, variables["listed_sig_" + tool], True


plan.reads = ["saw_t1", "listed_sig_t1", "listed_sig_t2"]


def scan(variables, rng):
    return "t1 is deprecated"


def choose_change(variables, rng):
    """The admin's change to t1: mostly a removal, sometimes a new signature (S5b)."""
    return "resign" if coin(rng, 0.25) else "remove"


def change_t1(variables, rng):
    if variables["req_change"] == "remove":
        present, signature = False, variables["sig_t1"]
    else:
        present, signature = variables["has_t1"], variables["sig_t1"] + "b"
    return present, signature, variables["reg_ver"] + 1


change_t1.reads = ["req_change", "has_t1", "sig_t1", "reg_ver"]


def called(variables, rng):
    return variables["commits"] + 1, True


called.reads = ["commits"]


def rejected(variables, rng):
    return variables["retries"] + 1


rejected.reads = ["retries"]


def gave_up(variables, rng):
    return variables["aborts"] + 1


gave_up.reads = ["aborts"]


def build(name: str, guarded: bool) -> Choreography:
    c = Choreography(name)
    Agent, Model, Scanner, Admin, Registry = c.lifelines(
        "Agent", "Model", "Scanner", "Admin", "Registry")
    Change = c.symbols("Change", "remove", "resign")

    # Registry: the tool list and the operation convention of cpl.anomalies.extract.
    has = {t: c.var(f"has_{t}", bool, init={Registry: True}) for t in TOOLS}
    sig = {t: c.var(f"sig_{t}", str, init={Registry: "s" + t[1:]}) for t in TOOLS}
    reg_ver = c.var("reg_ver", int, init={Registry: 0})
    c.var("op", str)
    c.var("op_agent", str)
    c.var("req_agent", str)
    c.var("writer", str)
    c.var("req_tool", str)
    c.var("req_sig", str)
    c.var("req_saw_tool", bool)
    c.var("req_change", Change)
    # Agent: what it listed, what it planned, and the work done.
    saw = {t: c.var(f"saw_{t}", bool) for t in TOOLS}
    listed = {t: c.var(f"listed_sig_{t}", str) for t in TOOLS}
    c.var("rreg_ver", int)
    planned, pinned_sig = c.var("planned", str), c.var("pinned_sig", str)
    saw_planned = c.var("saw_planned", bool)
    done = c.var("done", bool, init={Agent: False})
    tries = c.var("tries", int, init={Agent: 0})
    commits = c.var("commits", int, init={Agent: 0})
    aborts = c.var("aborts", int, init={Agent: 0})
    retries = c.var("retries", int, init={Agent: 0})
    # Admin and Scanner
    change = c.var("change", Change)
    finding = c.var("finding", str)

    with c.parallel():
        with c.thread():  # the agent: list, plan, dispatch; re-plan after a rejection
            with c.while_(f"!(done == true) && tries < {MAX_TRIES}", at=Agent,
                          label="plan a call?"):
                c.act(Agent, count_try, assigns=[tries], label="try")
                with c.atomic(Registry):
                    c.send(Agent, Registry, label="list tools")
                    c.set(Registry, op="serve", op_agent="Agent")
                    c.send(Registry, Agent, label="tool list", rreg_ver=reg_ver,
                           **{f"saw_{t}": has[t] for t in TOOLS},
                           **{f"listed_sig_{t}": sig[t] for t in TOOLS})
                c.send(Agent, Model, *saw.values(), *listed.values(), label="prompt")
                c.act(Model, plan, assigns=[planned, pinned_sig, saw_planned],
                      label="plan (generation)")
                c.send(Model, Agent, planned, pinned_sig, saw_planned, label="plan")
                with c.atomic(Registry):
                    c.send(Agent, Registry, req_tool=planned, req_sig=pinned_sig,
                           req_saw_tool=saw_planned, label="dispatch")
                    c.set(Registry, op="commit_req", req_agent="Agent")
                    with c.if_(GUARDED if guarded else UNGUARDED, at=Registry,
                               label="accept dispatch?"):
                        c.set(Registry, op="apply", writer="Agent")
                        c.send(Registry, Agent, label="tool result")
                        c.act(Agent, called, assigns=[commits, done], label="called")
                    with c.else_():
                        c.send(Registry, Agent, label="no such tool")
                        c.act(Agent, rejected, assigns=[retries], label="re-plan")
        with c.thread():  # the admin removes or re-signs t1, concurrently
            c.send(Admin, Scanner, label="audit t1")
            c.act(Scanner, scan, assigns=[finding], label="scan t1")
            c.send(Scanner, Admin, finding, label="finding")
            c.act(Admin, choose_change, assigns=[change], reads=[finding], label="choose change")
            with c.atomic(Registry):
                c.send(Admin, Registry, req_change=change, label="change t1")
                c.act(Registry, change_t1, assigns=[has["t1"], sig["t1"], reg_ver],
                      label="change t1")

    with c.if_("!(done == true)", at=Agent, label="give up?"):
        c.act(Agent, gave_up, assigns=[aborts], label="give up")

    c.result(Agent, planned, commits, aborts, retries)
    c.result(Model, planned, pinned_sig)
    c.result(Scanner, finding)
    c.result(Admin, change)
    c.result(Registry, has["t1"], sig["t1"], reg_ver)
    return c


unguarded = build("unguarded", guarded=False)
guarded = build("guarded", guarded=True)
