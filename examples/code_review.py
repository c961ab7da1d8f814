"""The concurrent code review of the CPL paper (Sect. 2, Fig. 1-2).

Each round the Orchestrator hands a merge candidate to the TestRunner and
the Security agent and, concurrently, proposes it to the Committer.  Each
reviewer reports a first result and later an updated one: the required
checks pass but the full suite may fail; the scan clears but a deeper scan
may find a critical issue.  The Committer merges only if, *in its causal
past*, both reviewers' latest visible states concern this candidate, the
tests passed with no later visible failure, and the scan cleared with no
later visible critical issue — an update still in transit does not count
(Fig. 2).  It tells the Orchestrator, which counts merges.

    cpl validate examples/code_review.py
    cpl show examples/code_review.py --lifeline Committer
    cpl run examples/code_review.py --sim --seed 7 --arg rounds=5 --trace review.json
"""

from choreo import Choreography, coin

c = review = Choreography("code_review")
Orchestrator, TestRunner, Security, Committer = c.lifelines(
    "Orchestrator", "TestRunner", "Security", "Committer")

Status = c.symbols("Status", "pending", "passed", "failed", "cleared", "critical")
Verdict = c.symbols("Verdict", "merged", "rejected")

rounds = c.input("rounds", int, default=3, at=Orchestrator)
round_ = c.var("round", int, init={Orchestrator: 0})
merges = c.var("merges", int, init={Orchestrator: 0})
candidate = c.var("candidate", str)
status = c.var("status", Status)
test_status = c.var("test_status", Status)  # the Committer's copy of the last report it got
scan_status = c.var("scan_status", Status)
decision = c.var("decision", Verdict)

MERGE = ("@TestRunner.candidate == candidate && @Security.candidate == candidate"
         " && @TestRunner(status != failed S status == passed)"
         " && @Security(status != critical S status == cleared)")


def next_candidate(variables, rng):
    number = variables["round"] + 1
    return number, f"c{number}"


def required_checks(variables, rng):
    return "passed" if coin(rng, 0.9) else "failed"


def full_suite(variables, rng):
    return "failed" if variables["status"] == "passed" and coin(rng, 0.3) \
        else variables["status"]


def quick_scan(variables, rng):
    return "cleared" if coin(rng, 0.9) else "critical"


def deep_scan(variables, rng):
    return "critical" if coin(rng, 0.2) else variables["status"]


def count_merge(variables, rng):
    return variables["merges"] + 1


with c.while_("round < rounds", at=Orchestrator, label="another round?"):
    c.act(Orchestrator, next_candidate, assigns=[round_, candidate])
    with c.parallel():
        with c.thread():  # the tests
            c.send(Orchestrator, TestRunner, candidate, label="patch")
            c.set(TestRunner, status=Status.pending)
            c.act(TestRunner, required_checks, assigns=[status])
            c.send(TestRunner, Committer, test_status=status, label="test result")
            c.act(TestRunner, full_suite, assigns=[status], reads=[status])
            c.send(TestRunner, Committer, test_status=status, label="test update")
        with c.thread():  # the security scan
            c.send(Orchestrator, Security, candidate, label="patch")
            c.set(Security, status=Status.pending)
            c.act(Security, quick_scan, assigns=[status])
            c.send(Security, Committer, scan_status=status, label="scan result")
            c.act(Security, deep_scan, assigns=[status], reads=[status])
            c.send(Security, Committer, scan_status=status, label="scan update")
        with c.thread():  # the merge proposal and the decision
            c.send(Orchestrator, Committer, candidate, label="merge proposal")
            with c.if_(MERGE, at=Committer, label="merge?"):
                c.set(Committer, decision=Verdict.merged)
                c.act(Orchestrator, count_merge, assigns=[merges], reads=[merges])
            with c.else_():
                c.set(Committer, decision=Verdict.rejected)

c.result(Orchestrator, round_, merges)
c.result(Committer, candidate, decision)
c.result(TestRunner, status)
c.result(Security, status)
