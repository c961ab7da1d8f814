"""An action's rng under ``cpl verify``: every draw is a choice among its outcomes.

A lifeline's actions get an :class:`Outcomes` instead of a seeded
``random.Random``.  Python's ``choice``, ``randint``, ``randrange``, ``shuffle`` and
``sample`` all draw through ``_randbelow(n)``: here it takes the outcome the
exploration scripted for this draw (by default the first) and notes the domain
``n``, so the verifier can enumerate every sequence of outcomes an action can
draw.  :func:`choreo.coin` is a two-way draw.  A float (``random()``,
``uniform``, ``gauss``, ``choices``) or raw bits have no domain to enumerate: they
come from a generator seeded by the lifeline and the call, so replays agree, and
the report says the exploration is *not complete* and why.

A draw among more than :data:`DOMAIN_LIMIT` outcomes, or an action with more
than :data:`ACTION_LIMIT` sequences, is a usage error naming the action — or,
with ``sampling``, one seeded outcome and a report that says *sampled*.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from cpl.errors import EXIT_USAGE, CplError

DOMAIN_LIMIT = 64  # outcomes of one draw: randint(1, 64), choice of 64, a coin is 2
ACTION_LIMIT = 1024  # outcome sequences of one action call (shuffle of 6 items: 720)


class DomainTooLarge(CplError):
    """An action draws among more outcomes than verify enumerates."""

    exit_code = EXIT_USAGE


class Outcomes(random.Random):
    """One lifeline's rng for a verify run; :meth:`begin` before each call of an action."""

    enumerates = True  # an LLM action with choices then takes each reply as an outcome

    def __init__(self, lifeline: str, sampling: bool = False):
        super().__init__(lifeline)
        # not ``sample``: that is Random.sample, which actions call
        self.lifeline, self.sampling = lifeline, sampling
        self.script: tuple = ()  # the outcome each draw of this call takes, in order
        self.domains: list[int] = []  # the domain of each enumerated draw of this call
        self.action = ""  # the action's label, for messages
        self.call = ""  # what makes this call's unenumerable draws its own: lifeline, event
        self.seeded = False  # the fallback generator is seeded for this call
        self.unenumerable: dict[str, None] = {}  # why a draw was not enumerated, in order
        self.sampled: dict[str, None] = {}  # which draws were over the limit and sampled

    def begin(self, action: str, call: str, script: tuple = ()) -> None:
        """A call of ``action`` (its label) starts; its draws take ``script`` (then 0s)."""
        self.action, self.call, self.script = action, call, script
        self.domains = []
        self.seeded = False

    # ------------------------------------------------------------ enumerated draws

    def _randbelow(self, n: int) -> int:  # type: ignore[override]
        if n > DOMAIN_LIMIT:
            return self._over_the_limit(f"draws among {n} outcomes", n)
        at = len(self.domains)
        self.domains.append(n)
        return self.script[at] if at < len(self.script) else 0

    def coin(self, p: float) -> bool:
        """:func:`choreo.coin`: both outcomes when ``0 < p < 1``, False first (NaN: False,
        as ``rng.random() < nan`` always is)."""
        if not p > 0:
            return False
        if p >= 1:
            return True
        return self._randbelow(2) == 1

    def sample(self, population, k, *, counts=None):  # type: ignore[override]
        """Random.sample's pool method whatever the population's size: its other method
        draws an index again while it is taken, and a script's outcome is taken forever.
        Each of the ``k`` draws is among the ``n - i`` left: every ordered sample once."""
        if counts is not None:  # Random.sample's own, which samples range(total) by this
            return super().sample(population, k, counts=counts)
        if not isinstance(population, Sequence):
            raise TypeError("Population must be a sequence.  For dicts or sets, use sorted(d).")
        n = len(population)
        if not 0 <= k <= n:
            raise ValueError("Sample larger than population or is negative")
        pool, taken = list(population), []
        for i in range(k):
            j = self._randbelow(n - i)
            taken.append(pool[j])
            pool[j] = pool[n - i - 1]
        return taken

    def _over_the_limit(self, what: str, n: int) -> int:
        where = f"action {self.action!r} on {self.lifeline}"
        if not self.sampling:
            raise DomainTooLarge(
                f"{where} {what}: more than cpl verify enumerates ({DOMAIN_LIMIT} a draw, "
                f"{ACTION_LIMIT} an action); give it a smaller domain, or pass "
                f"--sample-domains to sample it (the report then says sampled)")
        self.sampled[f"{where} {what} (sampled)"] = None
        self._seed_fallback()
        # seeded bits below n, at any size (a float times n overflows past 1e308); not
        # self.getrandbits(), which says "not enumerable"
        while True:
            drawn = random.Random.getrandbits(self, n.bit_length())
            if drawn < n:
                return drawn

    # ------------------------------------------------------------ unenumerable draws

    def random(self) -> float:
        self._unenumerable("random()")
        return super().random()

    def getrandbits(self, k: int) -> int:
        self._unenumerable(f"getrandbits({k})")
        return super().getrandbits(k)

    def unenumerable_bits(self, why: str, k: int) -> int:
        """``k`` seeded bits for a draw the caller says cannot be enumerated, and why (an LLM
        action's seed for a free-text reply)."""
        self.unenumerable[f"action {self.action!r} on {self.lifeline} {why}"] = None
        self._seed_fallback()
        return random.Random.getrandbits(self, k)

    def _unenumerable(self, what: str) -> None:
        self.unenumerable[f"action {self.action!r} on {self.lifeline} called rng.{what}, "
                          f"whose outcomes cannot be enumerated (use choreo.coin "
                          f"for a coin)"] = None
        self._seed_fallback()

    def _seed_fallback(self) -> None:
        """The same values for the same call in every replay of it."""
        if not self.seeded:
            super().seed(self.call)
            self.seeded = True
