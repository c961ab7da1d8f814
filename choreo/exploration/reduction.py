"""Which runs ``cpl verify`` makes: one per message sequence chart, by a partial-order reduction.

Why one run per MSC is enough: a CPL guard's value depends only on the causal
past, and each lifeline's next event is a function of its own history — its
store, its monitor, its threads — which the MSC fixes.  Two runs that differ
only in how independent events of different lifelines were interleaved are one
MSC, and every guard, result and detector that reads the causal order sees
them alike.

**What can differ between MSCs.**  A plain receive takes exactly one message
(its key names the send statement and the loop iteration), and the two messages
a branch-by-message receive accepts come from the two exclusive branches of
one decision, so at most one of them is ever sent.  A lifeline's next event is
therefore fixed by its history, except (1) when several of its threads could
move (``c.parallel``): which one goes next, including a thread's receive of a
message that is *still in transit* while another thread acts; and (2) the
outcome of an action's draws (:mod:`.outcomes`).

**The exploration** is a depth-first search over the choice points of (1) and
(2), each run replayed from the start through the simulator's ``pick`` seam
(stateless, as in Godefroid's VeriSoft and Concuerror: memory grows with the
depth of a run, not with the number of MSCs).  At each step:

* A lifeline that has one movable thread and one enabled event is *forced*:
  nothing another lifeline does can change what its next event is, and firing
  it now or later gives the same MSC.  Forced events are fired first, without
  a choice point.
* Otherwise every lifeline that can move is at a *decision*.  The first one
  (in the plan's order), ``L`` with enabled events ``e1 … ek``, branches into
  k + 1 alternatives: "L's next event is ``ei``" for each i, and — when one of
  its movable threads waits for a message not yet arrived — "L's next event is
  none of them" (*defer*): ``e1 … ek`` are put to sleep for ``L`` (Godefroid's
  sleep sets, over a dependence in which every two events of one lifeline
  depend and events of different lifelines do not), and the run goes on with
  the other lifelines until a new event of ``L`` is enabled; ``L``'s sleeping
  events wake when ``L`` fires.

**Every MSC is run.**  Take an MSC ``M`` reachable by some run; follow the
search along it.  A forced event of ``L`` is ``L``'s next event in ``M``: it stays
enabled until ``L`` fires, and a maximal run ends only when nothing is enabled.
At a decision, ``L``'s next event in ``M`` is either enabled now (its branch) or
a receive of a message not yet sent (the defer branch exists: the waiting
thread's message is missing), and commuting events of different lifelines
keeps a run's MSC.  So some run of the search is a linearization of ``M``.

**No MSC is run twice.**  Two sibling branches disagree on ``L``'s next event
after the same history of ``L``, which the MSC records (its kind, label,
values and the send it takes; the choreography's labels tell statements
apart), so no MSC lies below two siblings.  Where two statements in parallel
threads of one lifeline are recorded alike (kind, label, the lifeline a message
goes to or comes from), a trace cannot tell them apart: the search then
remembers the MSCs it ran and abandons a repeat (:mod:`.alike`).  A run in
which no event can happen but sleeping ones is *blocked*: its MSC lies below
an earlier sibling, so it is abandoned and counted as such, never as an MSC.
An action's outcome sequences that set the same values are one branch
(:mod:`.verifier`).

Runs that fail or reach ``--max-steps`` end where they stop: their trace is
what happened first under this order (the failing lifeline's history is
exact, the others' progress is the reduction's).
"""

from __future__ import annotations

from typing import Callable

from cpl.errors import EXIT_USAGE, CplError

# A test switch: "no-defer" drops the defer alternative, a reduction known to be wrong
# (the brute-force test must catch it).  None: the reduction above.
BREAK: str | None = None


class NotDeterministic(CplError):
    """A replay of a path took another turn: the choreography is not a function of its
    inputs and the verifier's choices (an action read a clock, a file, a global)."""

    exit_code = EXIT_USAGE


class Blocked(Exception):
    """The run can only go on with events put to sleep: its MSC was run already."""


class Tree:
    """The current run's choice points, depth first: node ``[chosen, count]`` each.

    ``prefix``: choices fixed from outside (a worker's subtree, a replayed path); the
    search never backtracks into them."""

    def __init__(self, prefix: tuple[int, ...] = ()):
        self.nodes: list[list] = [[chosen, None] for chosen in prefix]
        self.floor = len(prefix)
        self.depth = 0

    def start(self) -> None:
        self.depth = 0

    def decide(self, count: int, what: Callable[[], str]) -> int:
        """The alternative this run takes among ``count`` (``what()`` names the point)."""
        depth = self.depth
        self.depth = depth + 1
        nodes = self.nodes
        if depth == len(nodes):
            nodes.append([0, count])
            return 0
        node = nodes[depth]
        if node[1] is None:  # a prefix's node, reached for the first time
            if node[0] >= count:
                raise NotDeterministic(f"no alternative {node[0]} at choice point {depth + 1} "
                                       f"({what()}: {count} alternatives)")
            node[1] = count
        elif node[1] != count:
            raise NotDeterministic(
                f"the choreography did not replay: at choice point {depth + 1} ({what()}) "
                f"it offered {count} alternatives, before {node[1]}; an action must be a "
                f"function of its variables and rng")
        return node[0]

    def replayed(self) -> bool:
        """This run reached every fixed choice (a replayed path that ends earlier is no
        path of the choreography)."""
        return self.depth >= self.floor

    def path(self) -> str:
        """The choices of the current run, as ``--replay`` takes them."""
        return ".".join(str(node[0]) for node in self.nodes[:self.depth])

    def advance(self) -> bool:
        """On to the next run: the deepest choice point with an alternative left.  False:
        every run below the prefix was made."""
        nodes = self.nodes
        del nodes[self.depth:]  # points a stopped run had no time to reach again
        while len(nodes) > self.floor:
            node = nodes[-1]
            if node[0] + 1 < node[1]:
                node[0] += 1
                return True
            nodes.pop()
        return False


class Reduction:
    """One run's scheduler: ``pick(options)`` for :class:`choreo.execution.Driver`.

    ``act(option)`` is told of each action with a function about to be called (the
    verifier makes its outcomes a choice point)."""

    def __init__(self, tree: Tree, act: Callable):
        self.tree, self.act = tree, act
        self.asleep: dict = {}  # runner -> {(id(thread), message key)} put to sleep

    def pick(self, options: list):
        asleep = self.asleep
        if len(options) == 1:  # the only event anywhere: to defer it would block the run
            option = options[0]
            sleeping = asleep.get(option[0])
            if sleeping is not None and _identity(option) in sleeping:
                raise Blocked
            return self._take(option)
        groups: dict = {}
        for option in options:
            group = groups.get(option[0])
            if group is None:
                groups[option[0]] = [option]
            else:
                group.append(option)
        for runner, group in groups.items():  # a forced event first
            if len(group) == 1 and runner not in asleep and (
                    len(runner.threads) == 1 or len(runner.movable()) == 1):
                return self._take(group[0])
        deciding = []  # (runner, its events not asleep), for each runner that has some
        for runner, group in groups.items():
            sleeping = asleep.get(runner)
            awake = group if sleeping is None else [
                o for o in group if _identity(o) not in sleeping]
            if awake:
                deciding.append((runner, awake))
        last = len(deciding) - 1
        for at, (runner, awake) in enumerate(deciding):
            # Deferring is worth a branch only if a later lifeline can move meanwhile.
            defer = at < last and BREAK != "no-defer" and _awaits(runner)
            alternatives = len(awake) + defer
            chosen = 0 if alternatives == 1 else self.tree.decide(
                alternatives, lambda: f"{runner.name}'s next event")  # noqa: B023 - called now
            if chosen < len(awake):
                return self._take(awake[chosen])
            asleep.setdefault(runner, set()).update(map(_identity, awake))
        raise Blocked

    def _take(self, option):
        self.asleep.pop(option[0], None)  # its events depend on this one: awake again
        want = option[1].want
        if want[0] == "act" and want[1].fn is not None:
            self.act(option)
        return option


def _identity(option) -> tuple:
    """An enabled event, the same while its lifeline does not move."""
    message = option[2]
    return id(option[1]), None if message is None else message.key


def _awaits(runner) -> bool:
    """Some thread that could move next waits for a message not yet here."""
    inbox = runner.inbox
    for thread in runner.movable():
        want = thread.want
        if want[0] == "recv" and not any(key in inbox for key in want[1]):
            return True
    return False
