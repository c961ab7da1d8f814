"""Which names are one edit from which, in bounded time: the search behind the rule
that a misspelt variable is an error (:func:`cpl.lang.names.misspelt`).

A guard may hold thousands of names and a schema 100,000 variables, some of them
100,000 characters long: comparing every pair would take minutes, so pairs are
found through what two strings one edit apart must share.
"""

from __future__ import annotations

import functools

from ..errors import GuardError

MOST_COMPARED = 500_000  # pairs of a name and a variable spelt alike enough to be compared
_FEW = 8  # names filed with a variable that are compared at once, not found by its deletions
_INDEXED = 64  # characters: a name at most this long is indexed by its deletions too


@functools.lru_cache(maxsize=8)
def by_length(variables: frozenset, shortest: int) -> tuple[dict, dict]:
    """The variables of at least ``shortest`` characters by length, and an empty dict for
    the caller's verdicts (name -> near variables), kept per variable set: a system checks
    each of its guards against the same variables."""
    lengths: dict[int, list] = {}
    for variable in variables:
        if len(variable) >= shortest:
            lengths.setdefault(len(variable), []).append(variable)
    return lengths, {}


def near(names, lengths: dict) -> dict[str, tuple[str, ...]]:
    """Each name -> the variables (of ``by_length``'s ``lengths``) one edit from it,
    sorted, at most three; bounded in time whatever the names and variables.

    Two strings one edit apart, the shorter ``k`` long, share their first or their
    last ``(k - 1) // 2`` characters (an edit in the first part leaves the rest, an
    edit after it leaves the first part).  So each name is filed under its halves
    for the lengths it can pair with, and each variable within one character of a
    name's length costs six slices and lookups.  A variable filed with more than
    ``_FEW`` names (numbered names share short halves) is looked up by its
    one-character deletions instead, among those of the names of at most ``_INDEXED``
    characters: a few dozen lookups that find only names one edit away (or two, for
    a name of its length sharing a deletion elsewhere).  Only the pairs found are
    compared, with string comparisons (a name may be 100,000 characters long).  More
    than ``MOST_COMPARED`` pairs (long names and variables built to share their
    halves) is a ``GuardError``, found before any is compared, rather than minutes of
    comparing: the names quoted or declared symbols are not looked for."""
    found: dict[str, set] = {n: set() for n in names}
    filed: dict[tuple, dict] = {}  # (name length, variable length, end) -> half -> names
    whole: dict[str, list] = {}  # an indexed name -> [it]
    deleted: dict[str, list] = {}  # an indexed name less one character -> the names
    for name in names:
        for size in (len(name) - 1, len(name), len(name) + 1):
            half = (min(len(name), size) - 1) // 2
            for end, part in ((0, name[:half]), (1, name[len(name) - half:])):
                filed.setdefault((len(name), size, end), {}).setdefault(part, []).append(name)
        if len(name) <= _INDEXED:
            whole[name] = [name]
            for i in range(len(name)):
                deleted.setdefault(name[:i] + name[i + 1:], []).append(name)
    spelt = {len(n) for n in names}
    sizes = {n + d for n in spelt for d in (-1, 0, 1)} & lengths.keys()
    pairs: list = []  # (variable, the names found with it), all found before any is compared
    compared = 0
    for size in sorted(sizes):
        for length in (size - 1, size, size + 1):
            if length not in spelt:
                continue
            half, first, last = (min(length, size) - 1) // 2, filed[length, size, 0], \
                filed[length, size, 1]
            for variable in lengths[size]:
                close = first.get(variable[:half])
                after = last.get(variable[size - half:])
                if after:
                    close = set(close).union(after) if close else after
                if not close:
                    continue
                if len(close) > _FEW and length <= _INDEXED:
                    close = _by_deletions(variable, length, whole, deleted)
                compared += len(close)
                if compared > MOST_COMPARED:
                    raise GuardError(f"the guard's bare names are spelt too much like "
                                     f"{sum(len(lengths[s]) for s in sizes):,} declared "
                                     f"variables to check them all for a misspelling; quote the "
                                     f"names that are constants, or declare them symbols")
                pairs.append((variable, close))
    for variable, close in pairs:
        for name in close:
            if one_edit_apart(name, variable):
                found[name].add(variable)
    return {name: tuple(sorted(near)[:3]) for name, near in found.items()}


def _by_deletions(variable: str, length: int, whole: dict, deleted: dict) -> set:
    """The indexed names of ``length`` that ``variable`` less a character is (the name
    one shorter), that less a character are it (one longer), or that share a deletion."""
    if length == len(variable) + 1:
        return set(deleted.get(variable, ()))
    rests = [variable[:i] + variable[i + 1:] for i in range(len(variable))]
    index = whole if length == len(variable) - 1 else deleted
    return {name for rest in rests for name in index.get(rest, ())}


def one_edit_apart(a: str, b: str) -> bool:
    """``a != b`` and one insertion, deletion, substitution or swap of neighbours apart
    (with string comparisons only: a name may be 100,000 characters long)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) < len(b):
        a, b = b, a
    if max(len(a), len(b)) >= 3 and a[0] != b[0] and a[-1] != b[-1]:
        return False  # one edit of three or more characters leaves an end in place
    start, end = 0, len(b)  # the longest common prefix, by halving: no loop per character
    while start < end:
        middle = (start + end + 1) // 2
        if a[:middle] == b[:middle]:
            start = middle
        else:
            end = middle - 1
    if len(a) != len(b):
        return a[start + 1:] == b[start:]
    return (a[start + 1:] == b[start + 1:]
            or (start + 2 <= len(a) and a[start] == b[start + 1] and a[start + 1] == b[start]
                and a[start + 2:] == b[start + 2:]))
