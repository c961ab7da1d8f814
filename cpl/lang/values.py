"""What comparisons mean on stored values (shared by every evaluator).

No coercion: ``"1" == 1`` is false, booleans are not numbers, but integers
and floats compare numerically.  Ordering is defined between two numbers or
two strings; any other ordering comparison (mixed types, ``null``, lists)
is false.  ``!=`` is the negation of ``==``, so mixed types are unequal.
"""

from __future__ import annotations

import operator


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def equal(a, b) -> bool:
    if is_number(a) and is_number(b):
        return a == b
    return type(a) is type(b) and a == b


def _ordered(compare):
    def check(a, b) -> bool:
        kind = type(a)
        if kind is type(b) and (kind is int or kind is float):  # the commonest, first: a
            return compare(a, b)  # guard's ``n < count`` at every event (bench/stream_loop.py)
        if is_number(a) and is_number(b):
            return compare(a, b)
        if type(a) is str and type(b) is str:
            return compare(a, b)
        return False
    return check


COMPARE = {
    "==": equal,
    "!=": lambda a, b: not equal(a, b),
    "<": _ordered(operator.lt),
    "<=": _ordered(operator.le),
    ">": _ordered(operator.gt),
    ">=": _ordered(operator.ge),
}


class _Unset:
    """The value of a variable that has not been set (distinct from null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self):
        return "UNSET"


UNSET = _Unset()
