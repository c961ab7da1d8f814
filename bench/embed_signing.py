"""What signing costs a cpl.live agent per send and per receive: unsigned, shared secret, keys.

The flagship guard over three agents (as ``embed_core.py``), each mode its own
system: ``unsigned``; ``secret`` (HMAC-SHA256, one key every process shares);
``keys`` (Ed25519, a key per lifeline: a send signs the sender's record, a
receive verifies it and every other lifeline's entry the token carries).
Each agent has its own ``System``, as in its own process, made anew for each
round (a system remembers the signatures it has verified, and each round's
tokens are the same as the last round's).  Timed, ``calls`` calls in a row,
``rounds`` times, the three modes interleaved in each round, CPU seconds
(``timing.timed``), no logs:

* ``send``: TestRunner's sends to the Committer (each a new event, so with
  keys each signs a new record);
* ``receive``: the Committer's receives of those tokens as text (as they
  arrive from another process): the sender's signature checked;
* ``receive relay``: the Committer's receives of the Author's tokens, each
  relaying a TestRunner entry the Committer has not seen (the Author received
  a new TestRunner token before each send): with keys, two signatures checked;
* ``relay seen``: the same, every token relaying one TestRunner entry (the
  common case: one report travels on through an agent): with keys, the
  entry's signature is verified once, then remembered.

Medians in µs per call, with each mode's ratio to ``unsigned`` in the same run.

    PYTHONPATH=$PWD python bench/embed_signing.py [--quick]
"""

from __future__ import annotations

import platform
import sys

from cpl.live import KeyRing, System
from timing import interleaved, median, timed

LIFELINES = ["Author", "TestRunner", "Committer"]
GUARD = ("@TestRunner(status != failed S status == passed) && "
         "@TestRunner.candidate == candidate")
MODES = {"unsigned": {}, "secret": {"secret": b"a benchmark secret of 32 bytes.."},
         "keys": {"keys": KeyRing.generate(LIFELINES)}}


def system(options: dict) -> System:
    return System(LIFELINES, {"merge": ("Committer", GUARD)}, ["status", "candidate"],
                  init={"Committer": {"candidate": "abc"}}, **options)


def operations(options: dict, calls: int) -> dict:
    """One closure per operation, each timing ``calls`` calls on fresh agents."""
    def own(name: str) -> dict:  # what the process of ``name`` is given
        return {"keys": options["keys"].only(name)} if "keys" in options else options

    def agents():  # new systems each round: none has verified a signature yet
        return [system(own(name)).agent(name) for name in LIFELINES]

    def send():
        _, runner, _ = agents()
        runner.act(status="passed", candidate="abc")
        go = runner.send
        return timed(lambda: [go("Committer") for _ in range(calls)])

    def receive():
        _, runner, committer = agents()
        runner.act(status="passed", candidate="abc")
        texts = [runner.send("Committer").text for _ in range(calls)]
        take = committer.receive
        return timed(lambda: [take(t) for t in texts])

    def relay():
        author, runner, committer = agents()
        texts = []
        for _ in range(calls):
            runner.act(status="passed", candidate="abc")
            author.receive(runner.send("Author"))
            texts.append(author.send("Committer").text)
        take = committer.receive
        return timed(lambda: [take(t) for t in texts])

    def relay_seen():
        author, runner, committer = agents()
        runner.act(status="passed", candidate="abc")
        author.receive(runner.send("Author"))
        texts = [author.send("Committer").text for _ in range(calls)]
        take = committer.receive
        return timed(lambda: [take(t) for t in texts])

    return {"send": send, "receive": receive, "receive relay": relay,
            "relay seen": relay_seen}


def run(quick: bool = False) -> dict:
    calls, rounds = (300, 3) if quick else (2_000, 7)
    modes = {mode: operations(options, calls) for mode, options in MODES.items()}
    rows = {}
    for operation in ("send", "receive", "receive relay", "relay seen"):
        times = interleaved({mode: ops[operation] for mode, ops in modes.items()}, rounds)
        rows[operation] = {mode: 1e6 * median(t) / calls for mode, t in times.items()}
    return rows


def main() -> None:
    quick = "--quick" in sys.argv
    rows = run(quick)
    print(f"cpl.live signing per call, flagship guard, µs (median CPU time, modes interleaved "
          f"in one run{', quick' if quick else ''}; {platform.python_version()}, "
          f"{platform.machine()})")
    print(f"{'operation':<15}{'unsigned':>9}{'secret':>9}{'ratio':>8}{'keys':>9}{'ratio':>8}"
          f"{'keys/secret':>13}")
    for operation, cost in rows.items():
        base = cost["unsigned"]
        print(f"{operation:<15}{base:9.2f}{cost['secret']:9.2f}{cost['secret'] / base:7.1f}x"
              f"{cost['keys']:9.2f}{cost['keys'] / base:7.1f}x"
              f"{cost['keys'] / cost['secret']:12.1f}x")


if __name__ == "__main__":
    main()
