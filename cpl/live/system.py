"""A system of agents and their guards, compiled once: what every agent object shares.

The guards are checked as ``cpl check`` checks them (a bad guard is a
``GuardError`` with its position) and compiled into one monitor program for
all lifelines; each guard's subformulas are compiled as roots too, so an
agent can explain a value from its monitor.  The fingerprint names the
system: a token made under other lifelines, guards or variables would be
read against the wrong views, so it is refused.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import TYPE_CHECKING, Iterable, Mapping

from ..errors import GuardError
from ..lang import DEFAULT, CheckedGuard, Registry, Schema, ast, check
from ..monitor import OwnedFormula, compile_guards
from ..trace import MOST_LIFELINES, value_problem
from .errors import LiveError, UndeclaredVariable, UnknownLabel, UnknownLifeline
from .keys import Signing

if TYPE_CHECKING:  # named in an annotation only
    from .token import Token

MAX_NAME = 200  # characters of a lifeline, label or variable name


class System:
    """``System(lifelines, guards, variables)``: ``guards`` maps a label to ``(owner, guard)``;
    ``variables`` are the names agents set (a bare word in a guard that is not one of them
    is a constant: ``status == passed``, unless it is one edit from a variable: ``reslt``
    beside ``result`` is a ``GuardError``; ``symbols``, when given, lists the constants
    allowed, and a listed one is never taken for a misspelt variable).  ``init`` gives
    lifelines their starting values; with ``secret`` (bytes) every token is signed and an
    unsigned or forged one refused, but every process holding the secret can sign as any
    lifeline; with ``keys`` (a ``KeyRing``) each lifeline signs its own tokens and state
    with its own key (docs/embedding.md, "Who can forge what").  ``System.from_schema``
    takes the lifelines, variables and symbols from a schema, as ``cpl check`` does."""

    def __init__(self, lifelines: Iterable[str], guards: Mapping[str, tuple[str, str]],
                 variables: Iterable[str], *, init: Mapping[str, Mapping] | None = None,
                 secret: bytes | None = None, keys=None, symbols: Iterable[str] | None = None,
                 predicates: Registry = DEFAULT):
        self.lifelines = _names(lifelines, "lifeline")
        if len(self.lifelines) > MOST_LIFELINES:  # its agents' logs would merge to no trace
            raise LiveError(f"a system has at most {MOST_LIFELINES:,} lifelines, as a trace "
                            f"does; {len(self.lifelines):,} given")
        self._members = frozenset(self.lifelines)
        self.variables = frozenset(_names(variables, "variable", empty=True))
        self.init = _init(init, self.lifelines, self.variables)
        if secret is not None and not (isinstance(secret, bytes) and len(secret) >= 16):
            raise LiveError("secret must be bytes, at least 16 of them (os.urandom(32) makes one)")
        self.secret = secret
        if secret is not None and keys is not None:
            raise LiveError("give secret or keys, not both: per-lifeline keys replace the "
                            "shared secret")
        self.symbols = None if symbols is None else frozenset(_names(symbols, "symbol", True))
        both = sorted(self.variables & (self.symbols or frozenset()))
        if both:
            raise LiveError(f"{both[0]!r} is both a variable and a symbol: a bare {both[0]} in a "
                            f"guard must be one or the other")
        schema = Schema(self.lifelines, self.variables, self.symbols, predicates)
        self.guards: dict[str, tuple[str, CheckedGuard]] = {}  # label -> (owner, its guard)
        if not isinstance(guards, Mapping):
            raise LiveError("guards must map each label to (owner, guard text)")
        for label, entry in guards.items():
            if not (isinstance(label, str) and 0 < len(label) <= MAX_NAME):
                raise LiveError(f"a guard's label must be a name of 1 to {MAX_NAME} characters, "
                                f"not {_short(label)}")
            if not (isinstance(entry, (tuple, list)) and len(entry) == 2
                    and all(isinstance(part, str) for part in entry)):
                raise LiveError(f"guard {label!r} must be (owner, guard text), not {_short(entry)}")
            owner, text = entry
            if owner not in self.lifelines:
                raise UnknownLifeline(owner, self.lifelines)
            try:
                self.guards[label] = (owner, check(text, schema))
            except GuardError as error:
                error.origin = f"guard {label!r}"  # str(error) names it, with the caret
                raise
        self.program = compile_guards(self._roots(), self.lifelines, predicates=predicates)
        self.carried = {name: i for i, name in enumerate(self.program.carried)}
        self.shape = self.program.shape  # a property that builds it: once per token is too often
        self.fingerprint = hashlib.sha256(json.dumps({
            "lifelines": self.lifelines, "variables": sorted(self.variables),
            "guards": [[label, owner, guard.canonical]
                       for label, (owner, guard) in sorted(self.guards.items())]},
            ensure_ascii=True).encode()).hexdigest()[:16]
        self.signature = bytes.fromhex(self.fingerprint)  # what a token carries of it
        self.keys = keys
        self.signing = None if keys is None else Signing(keys, self)
        self.read_lately: dict = {}  # id -> Token read and checked lately (token.read)
        self._reading = threading.Lock()

    @classmethod
    def from_schema(cls, schema, guards: Mapping[str, tuple[str, str]], **options) -> "System":
        """The system of a schema (a ``cpl.Schema``, or the path of the JSON file ``cpl check
        --schema`` reads): its lifelines, variables and symbols."""
        if not isinstance(schema, Schema):
            schema = Schema.load(schema)
        if schema.lifelines is None or schema.variables is None:
            raise LiveError("the schema must list its lifelines and vars: a system's agents and "
                            "the variables they set are fixed up front")
        return cls(schema.lifelines, guards, sorted(schema.variables), symbols=schema.symbols,
                   predicates=schema.predicates, **options)

    def read(self, token) -> "Token":
        """The ``Token`` that ``token`` (its text, bytes or itself) is, checked as ``receive``
        checks it before the agent's own replay and clock checks: who sent it, to whom, its
        label.  ``TokenRefused`` if it is not this system's.  A receive right after takes the
        result without checking it twice."""
        from .token import read
        with self._reading:
            return read(token, self)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(self.guards)

    def has(self, lifeline) -> bool:
        """Whether ``lifeline`` is one of this system's (anything unhashable is not)."""
        return isinstance(lifeline, str) and lifeline in self._members

    def owner(self, label: str) -> str:
        return self.guard(label)[0]

    def guard(self, label: str):
        """``(owner, CheckedGuard)`` of ``label``, or ``UnknownLabel``."""
        try:
            return self.guards[label]
        except (KeyError, TypeError):
            raise UnknownLabel(label, self.guards) from None

    def agent(self, lifeline: str, *, log: str | None = None, fsync: bool = False,
              overwrite: bool = False):
        """The one object through which ``lifeline`` takes its events; ``log`` (a ``.jsonl``
        file, or a folder for ``<folder>/<lifeline>.jsonl``) records them as they happen.
        An existing log is kept (``LiveError``) unless ``overwrite``: an earlier run's
        events are not lost to a re-run."""
        from .agent import Agent
        return Agent(self, lifeline, log=log, fsync=fsync, overwrite=overwrite)

    def check_updates(self, updates: Mapping) -> None:
        """Every name declared, every value one a trace can hold."""
        for name, value in updates.items():
            if name not in self.variables:
                raise UndeclaredVariable(name, self.variables)
            problem = value_problem(value, (list, tuple), recorded=True)
            if problem:
                raise LiveError(f"the value of {name!r} {problem}")

    def _roots(self) -> list[OwnedFormula]:
        """Each guard, then its subformulas evaluated at its owner (not under ``@B`` of
        another lifeline): kept by the monitor, they let ``Agent.explain`` read every
        value the guard rests on."""
        roots = [OwnedFormula(owner, guard.primitive) for owner, guard in self.guards.values()]
        for owner, guard in self.guards.values():
            stack = [guard.primitive]
            while stack:
                node = stack.pop()
                roots.append(OwnedFormula(owner, node))
                if not (isinstance(node, ast.At) and node.lifeline != owner):
                    stack.extend(ast.children(node))
        return roots


def _names(names, what: str, empty: bool = False) -> tuple[str, ...]:
    if isinstance(names, (str, bytes)) or not isinstance(names, Iterable):
        raise LiveError(f"the {what}s must be a list of names, not {_short(names)}")
    names = tuple(names)
    for name in names:
        if not (isinstance(name, str) and 0 < len(name) <= MAX_NAME and name.isprintable()):
            raise LiveError(f"a {what} must be a printable name of 1 to {MAX_NAME} characters, "
                            f"not {_short(name)}")
    if len(set(names)) < len(names):
        twice = next(n for i, n in enumerate(names) if n in names[:i])
        raise LiveError(f"the {what} {twice!r} is named twice")
    if not names and not empty:
        raise LiveError(f"a system needs at least one {what}")
    return names


def _init(init, lifelines, variables) -> dict[str, dict]:
    if init is None:
        return {}
    if not isinstance(init, Mapping):
        raise LiveError("init must map lifelines to their starting values")
    stores = {}
    for lifeline, store in init.items():
        if lifeline not in lifelines:
            raise UnknownLifeline(lifeline, lifelines)
        if not isinstance(store, Mapping):
            raise LiveError(f"init[{lifeline!r}] must map variables to values")
        for name, value in store.items():
            if name not in variables:
                raise UndeclaredVariable(name, variables)
            problem = value_problem(value, (list, tuple), recorded=True)
            if problem:
                raise LiveError(f"init[{lifeline!r}][{name!r}] {problem}")
        stores[lifeline] = dict(store)
    return stores


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


__all__ = ["System"]
