"""A1 stale generation: a booking grounded in a trip date that changed meanwhile.

The travel booking of the anomaly catalog (S2), with the TLC witness's
read-only commit (S1).  The trip state lives in one Store, `TripState`: the
cell `date` ("14 June", version 1) and the cell `booking`.  Three agents run
concurrently:

* `User` moves the trip to "21 June" — a blind write: it reads nothing;
* `Flight` reads the date, generates a booking from it (a long generation)
  and commits it (it writes `booking`);
* `Reminder` reads the date, composes a reminder and commits *read-only*:
  its write set is empty, but its output is still grounded in what it read,
  so its commit goes through the Store too (the catalog's A1 fires on empty
  write sets; validating only writers is the default-SI gap of S3).

Every read is served by the Store in one `serve` event, every commit is a
request the Store receives (`commit_req`), decides and, if it accepts,
applies (`apply`), each in one `c.atomic(TripState)` block — the variable
convention from which `cpl.anomalies.detect` rebuilds the operations.

Unguarded, the Store accepts every commit (last writer wins): when the
user's write lands between an agent's read and its commit, the flight is
booked — or the reminder sent — for 14 June although the trip moved. That is
A1, stale generation, with no fault anywhere.

Guarded, the Store decides with G1_store, `guards.g1_store(["date"])`:

    !(req_reads_date == true) || req_rver_date == ver_date

Owner: the Store; pattern P-owner, exact: every write of `date` and every
commit, read-only ones included, is an event of the Store, whose local order
is the log, so the version an agent declares it read is compared with the
current one where no write can be in transit.  A rejected agent gets a 409,
re-reads and regenerates (at most `BUDGET` attempts; here the second always
succeeds).  An agent-side check `@TripState.ver_date == rver_date` would be
only P-visible: the user's write may not be in the agent's causal past.

Try it:

    cpl validate examples/anomalies/stale_generation.py --name guarded
    cpl run examples/anomalies/stale_generation.py --name unguarded --sim --seed 8 --trace u8.json
    cpl run examples/anomalies/stale_generation.py --name guarded --sim --seed 8 --trace g8.json
    cpl eval g8.json
    python -c "import cpl.anomalies as a, cpl.trace.files as t; print(a.detect(t.load_trace('u8.json'))['stale_generation'])"
    cpl explore examples/anomalies/stale_generation.py --name unguarded --runs 200
    cpl explore examples/anomalies/stale_generation.py --name guarded --runs 200

With seed 8 the user's write is applied first, while the reminder and the
flight are still generating from 14 June.  Unguarded:

    User: new_date = "21 June", commits = 1, aborts = 0, retries = 0
    Flight: booking = "flight on 14 June", commits = 1, aborts = 0, retries = 0
    Reminder: reminder = "your trip starts 14 June", commits = 1, aborts = 0, retries = 0
    TripState: val_date = "21 June", val_booking = "flight on 14 June"

and the detector finds both, `[Stale(i=2, j=1, cell='date'), Stale(i=3, j=1,
cell='date')]` (operation 1 is the user's write).  Guarded, both commits are
rejected, and the retries read the new date:

    User: new_date = "21 June", commits = 1, aborts = 0, retries = 0
    Flight: booking = "flight on 21 June", commits = 1, aborts = 1, retries = 1
    Reminder: reminder = "your trip starts 21 June", commits = 1, aborts = 1, retries = 1
    TripState: val_date = "21 June", val_booking = "flight on 21 June"

Over 200 runs (`cpl explore FILE --name NAME --runs 200`: seeds 0..199, the
mixed adversarial schedules), every run ends ok.  Unguarded, stale_generation
fires in 102 runs (51.0%), with 600 commits, 0 aborts, 0 retries.  Guarded, it
fires in none, and the work is still done: 600 commits, with 126 rejected
commits (aborts) and 126 retries.

For every MSC (`cpl verify`; docs/anomalies.md, "Proved prevention"), both
searches complete.  Unguarded: 11,550 message sequence charts, 5,040 of them
with a stale commit.  Guarded: 115,626 (the rejected agents' retries are
events too), none with a stale commit, and every one books the flight and
sends the reminder.  The complete searches take minutes (52 s and 11 min of
wall time with `--workers 2` on a busy 2-core machine); the search meets its
first stale commit in MSC 911 (`cpl explore` met one at seed 1, late
delivery), which `--max-runs` reaches in seconds:

    $ cpl verify examples/anomalies/stale_generation.py --name unguarded --max-runs 911 | sed -n '1,/MSCs in/p;/detectors:/,/work:/p'
    cpl verify examples/anomalies/stale_generation.py --name unguarded: bounded (max-runs): stopped after 911 MSCs (--max-runs)
      911 MSCs in 911 runs
      detectors: stale_generation: fired in 1 of 911 MSCs, first in MSC 911 (path 0.1.1.0.0.0.0)
    $ cpl verify examples/anomalies/stale_generation.py --name guarded --max-runs 100 | sed -n '1,/MSCs in/p;/detectors:/,/work:/p'
    cpl verify examples/anomalies/stale_generation.py --name guarded: bounded (max-runs): stopped after 100 MSCs (--max-runs)
      100 MSCs in 100 runs
      detectors: nothing fired (causal_cascade, lost_update, phantom_tool,
                   stale_generation, tool_effect_reordering)
"""  # noqa: E501 (the runs shown are real output, verbatim: tests compare them)

from choreo import Choreography
from cpl.anomalies import guards

CELLS = ("date", "booking")
BUDGET = 3  # attempts per agent: a rejected agent re-reads and regenerates, at most twice
LOOP = f"!(done == true) && tries < {BUDGET}"  # the same in both choreographies

GUARDED = guards.g1_store(["date"]).text  # every read of the Store is a read of `date`
UNGUARDED = "ver_date >= 0"  # always true: last writer wins (a constant `true` would
#                              make the rejection branch dead code, which validation refuses)


def serve(agent):
    def serve(variables, rng):
        return "serve", agent, variables["val_date"]
    serve.reads = ["val_date"]
    serve.__name__ = f"serve {agent}"
    return serve


def apply(agent, writes):
    def apply(variables, rng):
        values = {"op": "apply", "writer": agent}
        for cell in CELLS:
            written = cell in writes
            values["w_" + cell] = written
            values["val_" + cell] = variables["req_val_" + cell] if written \
                else variables["val_" + cell]
            values["ver_" + cell] = variables["ver_" + cell] + (1 if written else 0)
        return values
    apply.reads = [f"{kind}_{cell}" for cell in CELLS for kind in ("req_val", "val", "ver")]
    apply.__name__ = f"apply {agent}"
    return apply


def move_trip(variables, rng):
    """The user (through a third agent) moves the trip; it writes without reading."""
    return "21 June"


def book_flight(variables, rng):
    """A long generation grounded in the date read."""
    return f"flight on {variables['rval_date']}"


move_trip.reads, book_flight.reads = [], ["rval_date"]


def compose_reminder(variables, rng):
    """Read-only: the reminder is sent to the user, nothing is written to the Store."""
    return f"your trip starts {variables['rval_date']}"


compose_reminder.reads = ["rval_date"]


def bump(name):
    def bump(variables, rng):
        return variables[name] + 1
    bump.reads = [name]
    bump.__name__ = f"count {name}"
    return bump


def build(name: str, guard: str) -> Choreography:
    c = Choreography(name)
    User, Flight, Reminder, TripState = c.lifelines("User", "Flight", "Reminder", "TripState")
    # the Store: each cell's value and version, and the standard variables
    c.var("val_date", object, init={TripState: "14 June"})
    c.var("ver_date", int, init={TripState: 1})
    c.var("val_booking", object, init={TripState: None})
    c.var("ver_booking", int, init={TripState: 0})
    op, op_agent = c.var("op", str), c.var("op_agent", str)
    rd = {agent: c.var(f"rd_{agent}_date", object) for agent in ("flight", "reminder")}
    for variable, kind in (("writer", str), ("w_date", bool), ("w_booking", bool),
                           ("req_agent", str), ("req_reads_date", bool),
                           ("req_rver_date", object), ("req_val_date", object),
                           ("req_val_booking", object)):
        c.var(variable, kind)
    # the agents: what they read, generate and count
    c.var("rval_date", object)
    rver_date = c.var("rver_date", object)
    new_date, booking = c.var("new_date", str), c.var("booking", str)
    reminder = c.var("reminder", str)
    agents = (User, Flight, Reminder)
    c.var("done", bool, init={a: False for a in agents})
    tries = c.var("tries", int, init={a: 0 for a in agents})
    commits = c.var("commits", int, init={a: 0 for a in agents})
    aborts = c.var("aborts", int, init={a: 0 for a in agents})
    retries = c.var("retries", int, init={a: 0 for a in agents})

    # (lifeline, agent name, reads date?, generation, what it generates, the cells it writes)
    plans = ((User, "user", False, move_trip, new_date, ("date",)),
             (Flight, "flight", True, book_flight, booking, ("booking",)),
             (Reminder, "reminder", True, compose_reminder, reminder, ()))
    with c.parallel():
        for agent, who, reads, generate, output, writes in plans:
            with c.thread():
                with c.while_(LOOP, at=agent, label=f"{who} attempt?"):
                    with c.if_("tries > 0", at=agent, label=f"{who} retry?"):
                        c.act(agent, bump("retries"), assigns=[retries])
                    c.act(agent, bump("tries"), assigns=[tries])
                    if reads:  # read the date: served by the Store in one event
                        with c.atomic(TripState):
                            c.send(agent, TripState, label=f"read {who}")
                            c.act(TripState, serve(who), assigns=[op, op_agent, rd[who]])
                            c.send(TripState, agent, rval_date="val_date",
                                   rver_date="ver_date", label=f"snapshot {who}")
                    c.act(agent, generate, assigns=[output], label=generate.__name__)
                    carried = {"req_val_date": new_date} if "date" in writes else \
                        {"req_val_booking": booking} if "booking" in writes else {}
                    if reads:
                        carried["req_rver_date"] = rver_date
                    with c.atomic(TripState):  # the commit request, the guard and the apply
                        c.send(agent, TripState, label=f"commit {who}", **carried)
                        absent = {field: None for field in
                                  ("req_val_date", "req_val_booking", "req_rver_date")
                                  if field not in carried}
                        c.set(TripState, label=f"commit_req {who}", op="commit_req",
                              req_agent=who, req_reads_date=reads, **absent)
                        with c.if_(guard, at=TripState, label=f"accept {who}?"):
                            c.act(TripState, apply(who, writes),
                                  assigns=["op", "writer", *(f"{kind}_{cell}" for cell in CELLS
                                                             for kind in ("w", "val", "ver"))])
                            c.send(TripState, agent, label=f"ok {who}")
                            c.set(agent, done=True)
                            c.act(agent, bump("commits"), assigns=[commits])
                        with c.else_():
                            c.send(TripState, agent, label=f"409 {who}")
                            c.act(agent, bump("aborts"), assigns=[aborts])
    for agent, _, _, _, output, _ in plans:
        c.result(agent, output, commits, aborts, retries)
    c.result(TripState, "val_date", "val_booking")
    return c


unguarded = build("unguarded", UNGUARDED)
guarded = build("guarded", GUARDED)
