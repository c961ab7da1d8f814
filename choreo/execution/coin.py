"""A coin for actions: ``coin(rng, p)`` is true with probability ``p``.

Why a helper rather than ``rng.random() < p``: a float out of ``random()`` has no
domain an exhaustive check can enumerate, so ``cpl verify`` would have to call
such an action *not complete*.  ``coin`` draws exactly what ``rng.random() < p``
draws from a plain ``random.Random`` (seeded runs and their traces stay as they
were), and under ``cpl verify`` both outcomes are explored.
"""


def coin(rng, p: float) -> bool:
    """True with probability ``p`` (``p`` ≤ 0: never; ≥ 1: always)."""
    flip = getattr(rng, "coin", None)  # cpl verify's rng enumerates both sides
    if flip is not None:
        return flip(p)
    return rng.random() < p
