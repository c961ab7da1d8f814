"""Application predicates ``p(t, ...)``: a registry of named Python callables.

A predicate is only ever called with defined arguments (an undefined term
makes the atom false before the call), and the built-ins return ``False``
rather than raising on values of the wrong type, so a guard never crashes a
workflow because a variable held something unexpected.

Register your own with the decorator::

    from cpl.lang.predicates import predicate

    @predicate("is_urgent")
    def is_urgent(priority) -> bool:
        return priority in ("high", "critical")
"""

from __future__ import annotations

import inspect
from typing import Callable

import attrs

from .values import equal, is_number


@attrs.frozen
class Predicate:
    name: str
    arity: int
    function: Callable[..., bool] = attrs.field(eq=False)
    doc: str = ""


class Registry:
    """Named predicates; one per name.  ``DEFAULT`` holds the built-ins."""

    def __init__(self, parent: "Registry | None" = None):
        self._own: dict[str, Predicate] = {}
        self._parent = parent

    def register(self, name: str, function: Callable[..., bool],
                 arity: int | None = None) -> Predicate:
        if arity is None:
            arity = _positional_arity(name, function)
        if not name.isidentifier():
            raise ValueError(f"predicate name {name!r} is not an identifier")
        entry = Predicate(name, arity, function, (inspect.getdoc(function) or "").split("\n")[0])
        self._own[name] = entry
        return entry

    def get(self, name: str) -> Predicate | None:
        if name in self._own:
            return self._own[name]
        return self._parent.get(name) if self._parent else None

    def names(self) -> list[str]:
        inherited = self._parent.names() if self._parent else []
        return sorted(set(inherited) | set(self._own))

    def child(self) -> "Registry":
        """A registry that sees these predicates and may add its own."""
        return Registry(self)


DEFAULT = Registry()


def _positional_arity(name: str, function) -> int:
    """How many arguments a guard passes: the positional parameters.

    A guard calls ``function(*args)`` with exactly that many; ``*args`` or a
    keyword-only parameter without a default leave it unclear, so ask for it.
    """
    parameters = inspect.signature(function).parameters.values()
    unclear = [p.name for p in parameters
               if p.kind is p.VAR_POSITIONAL or (p.kind is p.KEYWORD_ONLY and p.default is p.empty)]
    if unclear:
        raise ValueError(f"predicate {name!r}: cannot infer the arity because of parameter "
                         f"{unclear[0]!r}; pass arity=N")
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


def predicate(name: str | Callable | None = None, *, registry: Registry = DEFAULT,
              arity: int | None = None):
    """Decorator: register a function as a CPL predicate under ``name`` (default: its own).

    All of ``@predicate``, ``@predicate()``, ``@predicate("name")`` and
    ``@predicate(name="x", arity=2)`` register; the bare form receives the
    function itself as ``name``, which is told apart by being callable.
    """
    if callable(name):
        return predicate(registry=registry, arity=arity)(name)
    if name is not None and not isinstance(name, str):
        raise TypeError(f"@predicate takes a name (a string), not {name!r}")

    def wrap(function):
        if not callable(function):
            raise TypeError(f"@predicate decorates a function, not {function!r}")
        chosen = name or getattr(function, "__name__", "")
        if chosen == "<lambda>":
            raise ValueError("a lambda has no name to register: use predicate('name')(fn)")
        registry.register(chosen, function, arity)
        return function
    return wrap


def _is_text(*values) -> bool:
    return all(isinstance(v, str) for v in values)


@predicate("member")
def member(value, collection) -> bool:
    """value is an element of a list (or a substring of a string)."""
    if isinstance(collection, (list, tuple)):
        return any(equal(value, item) for item in collection)
    return _is_text(value, collection) and value in collection


@predicate("startswith")
def startswith(text, prefix) -> bool:
    """text begins with prefix (strings only)."""
    return _is_text(text, prefix) and text.startswith(prefix)


@predicate("endswith")
def endswith(text, suffix) -> bool:
    """text ends with suffix (strings only)."""
    return _is_text(text, suffix) and text.endswith(suffix)


@predicate("contains")
def contains(text, part) -> bool:
    """part occurs in text (strings only)."""
    return _is_text(text, part) and part in text


@predicate("between")
def between(value, low, high) -> bool:
    """low <= value <= high, for numbers (booleans are not numbers)."""
    numbers = [v for v in (value, low, high) if is_number(v)]
    return len(numbers) == 3 and low <= value <= high


@predicate("defined")
def defined(value) -> bool:
    """The term has a value here (any value, including null)."""
    return True


BUILTINS = frozenset(DEFAULT.names())  # always there: a trace need not name them


def application(names) -> tuple[str, ...]:
    """The names that are not built-ins, in order, each once: what a trace records."""
    return tuple(dict.fromkeys(name for name in names if name not in BUILTINS))
