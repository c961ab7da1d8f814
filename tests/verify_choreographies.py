"""Small random valid choreographies for ``cpl verify``'s brute-force tests.

2–4 lifelines; sends that overtake (two sends to one receiver in a row: delivery
is not FIFO, and a message stays in transit while its receiver does other things);
``c.parallel`` threads on one lifeline (one receiving while another acts or sends);
bounded ``c.while_`` loops (a counter the owner counts); guarded choices whose guard
reads another lifeline's state (``@B.x == 1``: what the owner has seen of ``B``, so
the causal past decides); actions with small rng domains (``randint(0, 2)``,
``choice``, ``coin``).  Every statement has a label of its own, unless labels are
asked to repeat (``labels_in_use``).  Each is small
enough that every interleaving of it runs in well under a second.

:func:`choreographies` draws a :class:`Program` (a plain tree, so hypothesis can
shrink and print it) that :func:`build` turns into a valid ``Choreography``.
"""

from __future__ import annotations

import attrs
from hypothesis import assume
from hypothesis import strategies as st

from choreo import Choreography, coin
from choreo.analysis import validate

NAMES = ("A", "B", "C", "D")
MOST_STATEMENTS = 10  # of size(): a run's events are about twice as many
GUARDS = ("@{other}.x == 1", "x >= 1", "flag", "@{other}.flag", 's == "a"', "@{other}.x > x")


# ------------------------------------------------------------------ actions


def randint(variables, rng):
    return rng.randint(0, 2)


def choose(variables, rng):
    return rng.choice(["a", "b"])


def flip(variables, rng):
    return coin(rng, 0.5)


def increment(variables, rng):
    return variables["x"] + 1


ACTIONS = {"randint": ("x", randint), "choice": ("s", choose), "coin": ("flag", flip),
           "increment": ("x", increment)}


# ------------------------------------------------------------------ programs


@attrs.frozen
class Send:
    sender: int
    receiver: int
    carries: bool  # x, or a signal


@attrs.frozen
class Act:
    lifeline: int
    action: str  # a key of ACTIONS


@attrs.frozen
class If:
    owner: int
    other: int  # tells the owner first (a signal): what the guard reads of it is visible
    guard: str  # of GUARDS, {other} filled
    then: tuple
    otherwise: tuple | None


@attrs.frozen
class While:
    owner: int
    rounds: int
    body: tuple


@attrs.frozen
class Parallel:
    threads: tuple  # of blocks


@attrs.frozen
class Program:
    lifelines: int
    body: tuple


def _statements(count: int, depth: int):
    """Blocks of statements, ``count`` lifelines; compound ones only above ``depth`` 0."""
    lifeline = st.integers(0, count - 1)

    def send(pair_and_carries):
        (sender, offset), carries = pair_and_carries
        return Send(sender, (sender + offset) % count, carries)

    sends = st.tuples(st.tuples(lifeline, st.integers(1, count - 1)), st.booleans()).map(send)
    overtaking = sends.map(lambda s: (s, s))  # the same send twice: the two may overtake
    acts = st.builds(Act, lifeline, st.sampled_from(sorted(ACTIONS)))
    simple = st.one_of(sends, acts, acts, overtaking)
    if depth == 0:
        return simple

    def guarded(owner_other_guard):
        owner, offset, guard = owner_other_guard
        other = (owner + offset) % count
        return owner, other, GUARDS[guard].format(other=NAMES[other])

    block = st.lists(_statements(count, depth - 1), min_size=1, max_size=2).map(_flat)
    ifs = st.builds(lambda og, then, otherwise: If(*og, then, otherwise),
                    st.tuples(lifeline, st.integers(1, count - 1),
                              st.integers(0, len(GUARDS) - 1)).map(guarded),
                    block, st.none() | block)
    whiles = st.builds(While, lifeline, st.integers(1, 2),
                       st.lists(_statements(count, 0), min_size=1, max_size=1).map(_flat))
    parallels = st.builds(Parallel, st.tuples(block, block))
    return st.one_of(simple, ifs, ifs, whiles, parallels)


def _flat(statements) -> tuple:
    """A block: an overtaking pair is two statements."""
    out: list = []
    for statement in statements:
        out.extend(statement if isinstance(statement, tuple) else (statement,))
    return tuple(out)


@st.composite
def programs(draw) -> Program:
    count = draw(st.integers(2, 4))
    body = draw(st.lists(_statements(count, 1), min_size=2, max_size=4).map(_flat))
    while len(body) > 1 and size(body) > MOST_STATEMENTS:  # small: the last ones go
        body = body[:-1]
    return Program(count, body)


def size(node) -> int:
    """Statements, a loop's body counted once a round: a bound on the events a run has."""
    if isinstance(node, (tuple, list)):
        return sum(size(n) for n in node)
    if isinstance(node, Program):
        return size(node.body)
    if isinstance(node, If):
        return 4 + size(node.then) + size(node.otherwise or ())
    if isinstance(node, While):
        return node.rounds * (2 + size(node.body)) + 1
    if isinstance(node, Parallel):
        return size(node.threads)
    return 2 if isinstance(node, Send) else 1


# ------------------------------------------------------------------ building


def build(program: Program, labels_in_use: int | None = None) -> Choreography:
    """The choreography a program describes (it may not validate: see :func:`choreographies`).
    ``labels_in_use``: statements of a kind share that many labels (``m0``, ``m1``, ...), so
    parallel threads may have statements a trace cannot tell apart."""
    c = Choreography("random")
    lifelines = c.lifelines(*NAMES[:program.lifelines])
    x = c.var("x", int, init=0)
    c.var("s", str, init="a")
    c.var("flag", bool, init=False)
    numbers = iter(range(10 ** 6))

    def block(statements) -> None:
        for node in statements:
            n = next(numbers)
            label = n if labels_in_use is None else n % labels_in_use
            if isinstance(node, Send):
                variables = (x,) if node.carries else ()
                c.send(lifelines[node.sender], lifelines[node.receiver], *variables,
                       label=f"m{label}")
            elif isinstance(node, Act):
                target, fn = ACTIONS[node.action]
                c.act(lifelines[node.lifeline], fn, assigns=[target],
                      reads=["x"] if node.action == "increment" else [], label=f"a{label}")
            elif isinstance(node, If):
                c.send(lifelines[node.other], lifelines[node.owner], label=f"t{label}")
                with c.if_(node.guard, at=lifelines[node.owner], label=f"c{label}"):
                    block(node.then)
                if node.otherwise is not None:
                    with c.else_():
                        block(node.otherwise)
            elif isinstance(node, While):
                owner = lifelines[node.owner]
                counter = c.var(f"k{n}", int, init={owner: 0})
                with c.while_(f"k{n} < {node.rounds}", at=owner, label=f"w{label}"):
                    c.act(owner, increment_of(counter.name), assigns=[counter],
                          reads=[counter], label=f"r{label}")
                    block(node.body)
            else:
                with c.parallel():
                    for thread in node.threads:
                        with c.thread():
                            block(thread)

    block(program.body)
    return c


def increment_of(name: str):
    def count(variables, rng):
        return variables[name] + 1
    return count


@st.composite
def twin_threads(draw) -> Program:
    """A program that starts with two threads doing the same statements (built with
    shared labels, a trace cannot tell the two threads' statements apart)."""
    program = draw(programs())
    thread = draw(st.lists(_statements(program.lifelines, 0), min_size=1, max_size=2)
                  .map(_flat))
    body = (Parallel((thread, thread)), *program.body)
    while len(body) > 1 and size(body) > MOST_STATEMENTS:
        body = body[:-1]
    return Program(program.lifelines, body)


@st.composite
def choreographies(draw, labels_in_use: int | None = None,
                   twins: bool = False) -> tuple[Program, Choreography]:
    """(program, its valid choreography): small, and valid (races and guards that never
    change are drawn again).  ``labels_in_use``: as for :func:`build`; ``twins``: the
    program starts with :func:`twin_threads`."""
    program = draw(twin_threads() if twins else programs())
    assume(size(program) <= MOST_STATEMENTS)  # a single statement too big: rare
    choreography = build(program, labels_in_use)
    assume(validate(choreography).ok)
    return program, choreography
