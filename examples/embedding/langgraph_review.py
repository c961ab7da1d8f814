"""The code review as a LangGraph graph, its merge guarded by what the Committer has seen.

The Author hands a patch to the TestRunner and the Security scanner, which run in
parallel (one superstep); the Committer waits for both, then a guarded conditional edge
decides ``merge``: the Committer merges only if, in its causal past, both reviewers'
latest reports concern this very candidate, the tests passed with no later visible
failure and the scan cleared with no later visible critical issue.  Each node is a
lifeline; the tokens ride in the graph state (``cpl: Tokens``), so the guard judges
exactly what reached the Committer through the graph.

Two reviews run through the same agents: ``c1`` breaks the test suite, so its merge is
refused (the failing report is in the Committer's past); ``c2`` passes and is merged
(and ``c1``'s failure does not block it: the guard asks for the latest report, about
``c2``).

    python examples/embedding/langgraph_review.py --logs logs/
    cpl merge logs/ -o review.jsonl && cpl eval review.jsonl
    cpl render review.jsonl -o review.svg

A second run into the same folder stops on one line naming the log that is there
(exit 2): add ``--overwrite`` to replace the earlier run's logs.
"""

import argparse
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

from causal_guards.langgraph import GraphGuards, Tokens
from cpl.live import LogExists, System

LIFELINES = ["Author", "TestRunner", "Security", "Committer"]
MERGE = ("@TestRunner.candidate == candidate && @Security.candidate == candidate"
         " && @TestRunner(tests != failed S tests == passed)"
         " && @Security(scan != critical S scan == cleared)")


class Review(TypedDict, total=False):
    patch: str
    breaks_tests: bool
    candidate: str
    tests: str
    scan: str
    verdict: str
    why: str
    cpl: Tokens


def author(state: Review) -> dict:
    return {"candidate": state["patch"]}


def run_tests(state: Review) -> dict:
    return {"tests": "failed" if state.get("breaks_tests") else "passed"}


def scan(state: Review) -> dict:
    return {"scan": "cleared"}


def committer(state: Review) -> dict:
    return {}


def merge(state: Review) -> dict:
    return {"verdict": "merged"}


def reject(state: Review, agent) -> dict:
    """Runs as the Committer right after its decision: says why, from its own monitor."""
    return {"verdict": "rejected", "why": agent.explain("merge").to_text().rstrip()}


def build(guards: GraphGuards):
    """The review graph, each node wrapped as its lifeline."""
    g = StateGraph(Review)
    g.add_node("author", guards.node("Author", author, to=["TestRunner", "Security"]))
    g.add_node("tests", guards.node("TestRunner", run_tests, to=["Committer"],
                                    reads=["candidate"]))
    g.add_node("security", guards.node("Security", scan, to=["Committer"],
                                       reads=["candidate"]))
    g.add_node("committer", guards.node("Committer", committer, reads=["candidate"]))
    g.add_node("merge", guards.node("Committer", merge))
    g.add_node("reject", guards.node("Committer", reject))
    g.add_edge(START, "author")
    g.add_edge("author", "tests")
    g.add_edge("author", "security")
    g.add_edge(["tests", "security"], "committer")
    g.add_conditional_edges("committer", guards.route("merge", "merge", "reject"),
                            ["merge", "reject"])
    g.add_edge("merge", END)
    g.add_edge("reject", END)
    return g.compile()


def system() -> System:
    return System(LIFELINES, {"merge": ("Committer", MERGE)},
                  variables=["candidate", "tests", "scan", "verdict"])


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", help="folder for one .jsonl log per agent")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's logs")
    args = parser.parse_args(argv)
    verdicts = {}
    try:
        guards = GraphGuards(system(), log=args.logs, overwrite=args.overwrite)
    except LogExists as error:  # an earlier run's logs are kept unless --overwrite
        parser.exit(2, f"{parser.prog}: {error.path} exists already: give --overwrite to "
                       f"replace it\n")
    with guards:
        graph = build(guards)
        for patch, breaks in (("c1", True), ("c2", False)):
            state = graph.invoke({"patch": patch, "breaks_tests": breaks})
            verdicts[patch] = state["verdict"]
            print(f"{patch}: tests {state['tests']}, scan {state['scan']} -> {state['verdict']}")
            if state["verdict"] == "rejected":
                print(state["why"])
    return verdicts


if __name__ == "__main__":
    main()
