"""Three asyncio agents guarded by CPL: a code review whose merge waits for its own report.

The Author proposes candidates to the TestRunner and the Committer at once;
the TestRunner reports each candidate's tests; the Committer merges a
candidate only if, in its causal past, the TestRunner's latest report is
about this candidate and its tests passed with no failure since.  A
proposal that arrives before its report is not merged on the strength of
the previous candidate's report: c2, whose tests fail, is proposed while
c1's passing report is the latest the Committer has seen.  The Committer
tells the Author its verdict before the next candidate is proposed.  The lines
marked ``# cpl`` are all that guarding the agents added (tests/test_live.py
counts them).

    python examples/embedding/asyncio_review.py --logs logs/
    cpl merge logs/ -o review.jsonl && cpl eval review.jsonl

A second run into the same folder stops on one line naming the log that is there
(exit 2): add ``--overwrite`` to replace the earlier run's logs.
"""

import argparse
import asyncio

from cpl.live import LogExists, System  # cpl

MERGE = "@TestRunner(status != failed S status == passed) && @TestRunner.candidate == candidate"
SYSTEM = System(["Author", "TestRunner", "Committer"], {"merge": ("Committer", MERGE)},  # cpl
                ["status", "candidate"])  # cpl
CANDIDATES = {"c1": ["passed"], "c2": ["failed"], "c3": ["failed", "passed"]}


async def author(me, inboxes):
    for candidate in CANDIDATES:
        for peer in ("TestRunner", "Committer"):
            await inboxes[peer].put((candidate, me.send(peer, "proposal").text))  # cpl
        verdict, token = await inboxes["Author"].get()
        me.receive(token)  # cpl
        print(f"{candidate}: {verdict}")


async def test_runner(me, inboxes):
    for _ in CANDIDATES:
        candidate, token = await inboxes["TestRunner"].get()
        me.receive(token, candidate=candidate)  # cpl
        for status in CANDIDATES[candidate]:
            me.act("tests ran", status=status)  # cpl
            await inboxes["Committer"].put((status, me.send("Committer", "report").text))  # cpl


async def committer(me, inboxes):
    for candidate in CANDIDATES:
        merged = False
        for step in range(1 + len(CANDIDATES[candidate])):  # the proposal, then each report
            value, token = await inboxes["Committer"].get()
            me.receive(token, **({"candidate": value} if step == 0 else {}))  # cpl
            merged = merged or me.decide("merge")  # cpl
        verdict = "merged" if merged else "refused"
        await inboxes["Author"].put((verdict, me.send("Author", verdict).text))  # cpl


async def main(logs, overwrite):
    agents = {name: SYSTEM.agent(name, log=logs, overwrite=overwrite)  # cpl
              for name in SYSTEM.lifelines}
    inboxes = {name: asyncio.Queue() for name in SYSTEM.lifelines}
    await asyncio.gather(author(agents["Author"], inboxes),
                         test_runner(agents["TestRunner"], inboxes),
                         committer(agents["Committer"], inboxes))
    for agent in agents.values():
        agent.close()  # cpl


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--logs", default=None, help="a folder for the agents' logs")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's logs")
    args = parser.parse_args()
    try:
        asyncio.run(main(args.logs, args.overwrite))
    except LogExists as error:  # an earlier run's logs are kept unless --overwrite
        parser.exit(2, f"{parser.prog}: {error.path} exists already: give --overwrite to "
                       f"replace it\n")
