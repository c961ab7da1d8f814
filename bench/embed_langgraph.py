"""Per-step overhead of the LangGraph adapter (target: <= 10%).

The code-review graph of examples/embedding/langgraph_review.py (5 node runs in 4
supersteps per review; 13 agent events: 4 acts, 4 sends, 4 receives, 1 decision) against
the same graph built from the same node functions with a plain routing function, in the
same run.  Reviews are timed one by one, the variants interleaved review by review in a
rotating order (so a burst of noise hits all alike), in CPU time of this process
(LangGraph runs parallel nodes on its thread pool, whose CPU time counts too); the table
gives the median and quartiles per review and the ratio to the unguarded median.  Variants:
guarded without a log, guarded with one (.jsonl per agent in a temporary folder), and
"adapter alone": the guarded graph whose agents record nothing, i.e. what the adapter and
LangGraph's extra channel cost without cpl.live's events.

    python bench/embed_langgraph.py [--reviews 1500]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples" / "embedding"))

from langgraph.graph import END, START, StateGraph  # noqa: E402

import langgraph_review as review  # noqa: E402
from causal_guards.langgraph import GraphGuards  # noqa: E402

NODE_RUNS = 5  # author, tests, security, committer, merge or reject


class Silent:
    """An agent that records nothing: the adapter's own share of the overhead."""

    def __init__(self, lifeline: str):
        self.lifeline, self.sent = lifeline, 0

    def act(self, *label, **updates) -> None:
        pass

    receive = act

    def send(self, to: str, label: str = "") -> "SilentToken":
        self.sent += 1
        return SilentToken(f"{self.lifeline}:{self.sent}")

    def decide(self, label: str) -> bool:
        return True

    def close(self) -> None:
        pass


class SilentToken:
    def __init__(self, msg: str):
        self.msg = self.text = msg


def review_graph(node, route):
    """The review graph of the example, its nodes made by ``node(lifeline, fn, **wiring)``
    and its merge edge by ``route``: so the guarded and plain graphs are the same graph."""
    g = StateGraph(review.Review)
    g.add_node("author", node("Author", review.author, to=["TestRunner", "Security"]))
    g.add_node("tests", node("TestRunner", review.run_tests, to=["Committer"],
                             reads=["candidate"]))
    g.add_node("security", node("Security", review.scan, to=["Committer"], reads=["candidate"]))
    g.add_node("committer", node("Committer", review.committer, reads=["candidate"]))
    g.add_node("merge", node("Committer", review.merge))
    g.add_node("reject", node("Committer", reject))
    g.add_edge(START, "author")
    g.add_edge("author", "tests")
    g.add_edge("author", "security")
    g.add_edge(["tests", "security"], "committer")
    g.add_conditional_edges("committer", route, ["merge", "reject"])
    g.add_edge("merge", END)
    g.add_edge("reject", END)
    return g.compile()


def reject(state: review.Review) -> dict:
    return {"verdict": "rejected"}  # the example's also explains why: not a step's cost


def plain_graph():
    """As a user writes it without guards: the state decides the merge."""
    return review_graph(lambda lifeline, fn, **wiring: fn,
                        lambda s: "merge" if s["tests"] == "passed" and s["scan"] == "cleared"
                        else "reject")


def guarded_graph(guards: GraphGuards):
    return review_graph(guards.node, guards.route("merge", "merge", "reject"))


def review_once(graph, k: int) -> float:
    """CPU seconds of review ``k`` (every third one breaks the tests: a refused merge)."""
    start = time.process_time()
    graph.invoke({"patch": f"c{k}", "breaks_tests": k % 3 == 0})
    return time.process_time() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=1500)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as logs, \
            GraphGuards(review.system()) as bare, \
            GraphGuards(review.system(), log=logs) as logged, \
            GraphGuards(review.system()) as silent:
        silent._agents = {name: Silent(name) for name in silent._agents}
        variants = {"unguarded": plain_graph(), "adapter alone": guarded_graph(silent),
                    "guarded": guarded_graph(bare), "guarded + log": guarded_graph(logged)}
        for graph in variants.values():  # warm up: imports, compiled graphs, thread pool
            for k in range(20):
                review_once(graph, k)
        times = {name: [] for name in variants}
        order = list(variants)
        for k in range(args.reviews):
            for name in order[k % len(order):] + order[:k % len(order)]:
                times[name].append(review_once(variants[name], k))
    base = statistics.median(times["unguarded"])
    print(f"LangGraph review graph: {args.reviews} reviews of each variant, interleaved one "
          f"by one; CPU time per review, median and quartiles ({NODE_RUNS} node runs each)")
    print(f"{'variant':<15} {'median':>9} {'q1':>9} {'q3':>9} {'ratio':>6} "
          f"{'per node run':>13}")
    for name, runs in times.items():
        q1, median, q3 = statistics.quantiles(runs, n=4)
        print(f"{name:<15} {median * 1e6:>6.0f} µs {q1 * 1e6:>6.0f} µs {q3 * 1e6:>6.0f} µs "
              f"{median / base:>5.2f}x {(median - base) / NODE_RUNS * 1e6:>+9.0f} µs")


if __name__ == "__main__":
    main()
