"""The choreography DSL: a global protocol written as plain Python.

A choreography says, from above, who sends what to whom, who computes what,
and who decides which way to go — projection (:mod:`choreo.analysis.project`) then
derives each lifeline's local program::

    c = Choreography("review")
    Author, Reviewer = c.lifelines("Author", "Reviewer")
    Verdict = c.symbols("Verdict", "approve", "reject")
    patch = c.var("patch", str)
    verdict = c.var("verdict", Verdict)
    rounds = c.input("rounds", int, default=3, at=Author)

    c.act(Author, write_patch, assigns=[patch])      # write_patch(variables, rng)
    c.send(Author, Reviewer, patch)                  # copies Author's patch to Reviewer
    c.act(Reviewer, review, assigns=[verdict])
    c.send(Reviewer, Author, verdict, label="review")
    with c.if_("verdict == approve", at=Author, label="merge?"):
        c.set(Author, merged=True)
    with c.else_():
        ...
    with c.while_("n < rounds", at=Author): ...      # a loop owned by Author
    with c.parallel():                               # threads, possibly of one lifeline
        with c.thread(): ...
        with c.thread(): ...
    with c.atomic(Store): ...                        # Store serves it in one go (a thread's)
    c.include(other, lifelines={"Sub": Author})      # a reusable sub-choreography
    c.result(Author, merged)                         # what a run prints for Author

Guards are CPL text (or a boolean variable), checked at once against the
declarations made so far: every declared variable and input is a variable,
every member of a symbol set is a symbol, any other bare name is an error.
A mistake in a name or guard is recorded in ``c.problems`` with the user's
file and line and reported by ``validate``; misuse of the DSL itself (an
``else_`` without ``if_``) raises :class:`ChoreographyError` at once.  A block
opener (``if_``, ``else_``, ``while_``, ``parallel``, ``thread``, ``atomic``) called
without ``with`` would silently lose its block, so it stays pending and the
next statement, the end of the enclosing block or ``body`` reports it at its
line ("c.if_(...) was never entered: write `with c.if_(...):`").

``Choreography`` is one class: its declarations, its plain statements and its
``with`` blocks.  The blocks open while it is written are :mod:`choreo.authoring.blocks`'s;
checking names and guards against its declarations is :mod:`choreo.authoring.declare`'s.

Actions are ``fn(variables, rng)`` (sync or async; ``variables`` a read-only
mapping of the lifeline's store, ``rng`` its seeded ``random.Random``),
the interface of :mod:`choreo.models.llm`.  The value is assigned to ``assigns``:
one variable takes the value, several take a tuple (in order) or a dict.

``control`` chooses which lifelines learn each decision (see
:mod:`choreo.analysis.project`): ``"minimal"`` (default), ``"broadcast"``, or
``"none"`` (only those listed in a statement's ``tell=``).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable

import cpl
from cpl.trace import value_problem

from . import model
from .blocks import Opener, OpenBlocks
from .declare import (check_name, check_type, decision_of, lifeline_of, lifelines_of,
                      variables_of)
from .errors import ChoreographyError, Where, caller
from .include import include
from .model import Act, Atomic, If, Input, Lifeline, Parallel, Send, SymbolSet, Var, While

CONTROL = ("minimal", "broadcast", "none")
_REQUIRED = object()


class Choreography:
    """A global choreography under construction (see the module docstring)."""

    def __init__(self, name: str, *, control: str = "minimal", doc: str = ""):
        self.where = caller()
        if not (isinstance(name, str) and name):
            raise ChoreographyError("a choreography needs a name, e.g. Choreography('review')",
                                    self.where)
        if problem := value_problem(name):  # its traces carry the name
            raise ChoreographyError(f"the choreography's name {problem}, so no "
                                    f"trace could hold it", self.where)
        if control not in CONTROL:
            raise ChoreographyError(f"control must be one of {', '.join(CONTROL)}, "
                                    f"not {control!r}", self.where)
        self.lifeline_names: list[str] = []
        self.variables: dict[str, Var] = {}
        self.inputs: dict[str, Input] = {}
        self.symbol_sets: dict[str, SymbolSet] = {}
        self.results: dict[str, tuple[str, ...]] = {}
        self.problems: list[ChoreographyError] = []
        self._blocks = OpenBlocks()
        self.name, self.control, self.doc = name, control, doc
        self._next_id = 1
        self.included_in: list[str] = []  # hosts that include this one as a sub-choreography

    def __repr__(self) -> str:
        return f"<Choreography {self.name!r}: {', '.join(self.lifeline_names)}>"

    # ------------------------------------------------------------ declarations

    def lifeline(self, name: str) -> Lifeline:
        where = caller()
        check_name(name, "lifeline", where)
        if name in self.lifeline_names:
            raise ChoreographyError(f"lifeline {name!r} is declared twice", where)
        self.lifeline_names.append(name)
        return Lifeline(name)

    def lifelines(self, *names: str) -> tuple[Lifeline, ...]:
        return tuple(self.lifeline(name) for name in names)

    def symbols(self, name: str, *members: str) -> SymbolSet:
        """An enumerated type; ``status != failed`` then reads ``failed`` as a symbol."""
        where = caller()
        if not members:
            raise ChoreographyError(f"symbol set {name!r} needs members", where)
        for member in members:
            check_name(member, "symbol", where)
            if member in self.variables:
                raise ChoreographyError(f"symbol {member!r} is also a variable name", where)
        if name in self.symbol_sets and self.symbol_sets[name].members != tuple(members):
            raise ChoreographyError(f"symbol set {name!r} is declared twice", where)
        self.symbol_sets[name] = SymbolSet(name, tuple(members))
        return self.symbol_sets[name]

    def var(self, name: str, type: Any = object, *, init: Any = _REQUIRED) -> Var:
        """A variable; ``init`` is its initial value everywhere, or ``{lifeline: value}``."""
        where = caller()
        check_type(name, type, self.symbol_sets, where)
        pairs: tuple = ()
        if init is not _REQUIRED:
            if isinstance(init, dict):
                pairs = tuple((lifeline_of(self, k, where, "init of " + name) or "?", v)
                              for k, v in init.items())
            else:
                pairs = (("*", init),)  # every lifeline, also those declared later
            for _, value in pairs:
                if not model.conforms(value, type):
                    raise ChoreographyError(f"initial value {value!r} of {name!r} is not "
                                            f"{model.type_name(type)}", where)
        return self._declare(Var(name, type, pairs, where), where)

    def input(self, name: str, type: Any = str, *, default: Any = _REQUIRED,
              at: Lifeline | str | Iterable | None = None) -> Input:
        """A run parameter, ``--arg name=value``; held from the start by ``at`` (default: all)."""
        where = caller()
        check_type(name, type, self.symbol_sets, where)
        required = default is _REQUIRED
        if not required and not model.conforms(default, type):
            raise ChoreographyError(f"default {default!r} of input {name!r} is not "
                                    f"{model.type_name(type)}", where)
        places = lifelines_of(self, at, where, f"input {name!r}") if at is not None \
            else tuple(self.lifeline_names)
        declared = Input(name, type, None if required else default, required, places, where)
        self.inputs[name] = declared
        self._declare(Var(name, type, (), where), where)
        return declared

    def result(self, lifeline: Lifeline | str, *variables: Var | str) -> None:
        """The variables a run reports for ``lifeline`` (default: its whole store)."""
        where = caller()
        name = lifeline_of(self, lifeline, where, "result")
        names = variables_of(self, variables, where, "result")
        if name:
            self.results[name] = self.results.get(name, ()) + names

    def reported_names(self, lifeline: str, store) -> tuple[str, ...]:
        """The variables a run reports for ``lifeline``: those ``result`` declared, else
        every variable in its ``store``."""
        return self.results.get(lifeline) or tuple(store)

    def reported(self, lifeline: str, store) -> dict:
        """The values a run reports for ``lifeline`` (:meth:`reported_names`), unset ones
        left out."""
        return {x: store[x] for x in self.reported_names(lifeline, store) if x in store}

    @property
    def schema(self) -> cpl.Schema:
        members = frozenset(m for s in self.symbol_sets.values() for m in s.members)
        return cpl.Schema(tuple(self.lifeline_names), frozenset(self.variables), members)

    # -------------------------------------------------------------- statements

    def send(self, sender: Lifeline | str, receiver: Lifeline | str, *variables: Var | str,
             label: str | None = None, **renamed: Var | str) -> None:
        """A message: its receive assigns the sender's values of ``variables``.

        ``test_status=status`` assigns the sender's ``status`` to the receiver's
        ``test_status``.
        """
        where = caller()
        self._blocks.check_pending()
        source = lifeline_of(self, sender, where, "message")
        target = lifeline_of(self, receiver, where, "message")
        names = variables_of(self, tuple(variables) + tuple(renamed.values()), where, "message")
        into = names[:len(variables)] + variables_of(self, tuple(renamed), where, "message")
        if source and source == target:
            self._problem(f"{source} sends a message to itself", where, "self-message",
                          "  fix: use c.act for a local step")
        self._append(Send(self._id(), source or "?", target or "?", names, into,
                          label or ", ".join(names) or "signal", where))

    def act(self, lifeline: Lifeline | str, fn: Callable, *, assigns: Iterable = (),
            reads: Iterable | None = None, label: str | None = None) -> None:
        """A local action ``fn(variables, rng)``; its value goes to ``assigns``."""
        where = caller()
        self._blocks.check_pending()
        name = lifeline_of(self, lifeline, where, "action")
        if not callable(fn):
            raise ChoreographyError(f"c.act needs a callable fn(variables, rng), got {fn!r}", where)
        if isinstance(assigns, (str, Var)):
            assigns = (assigns,)
        written = variables_of(self, assigns, where, "action")
        if reads is None:
            reads = sorted(getattr(fn, "reads", ()) or ())
        read = variables_of(self, reads, where, "action")
        text = label or getattr(fn, "__name__", None) or getattr(fn, "name", None) or "act"
        if text == "<lambda>":
            text = "compute " + ", ".join(written) if written else "act"
        self._append(Act(self._id(), name or "?", fn, written, read, text, (), where))

    def set(self, lifeline: Lifeline | str, label: str | None = None, **values: Any) -> None:
        """A local action assigning constants: ``c.set(TestRunner, status=pending)``."""
        where = caller()
        self._blocks.check_pending()
        name = lifeline_of(self, lifeline, where, "set")
        names = variables_of(self, tuple(values), where, "set")
        for var_name, value in values.items():
            declared = self.variables.get(var_name)
            if declared and not model.conforms(value, declared.type):
                self._problem(f"{var_name} is {model.type_name(declared.type)}, "
                              f"but c.set gives it {value!r}", where, "type")
            elif problem := value_problem(value, (list, tuple), recorded=True):
                self._problem(f"c.set gives {var_name} a value that {problem}, so no trace "
                              f"could hold it", where, "value")
        text = label or "set " + ", ".join(f"{k}={v!r}" for k, v in values.items())
        self._append(Act(self._id(), name or "?", None, names, (), text,
                         tuple(values.items()), where))

    def include(self, other: "Choreography", *, lifelines: dict | None = None) -> None:
        """Inline ``other``'s statements here, its lifelines renamed by ``lifelines``."""
        self._blocks.check_pending()
        include(self, other, lifelines or {}, caller())

    # ------------------------------------------------------------------ blocks

    def if_(self, guard: str | Var, *, at: Lifeline | str, label: str | None = None,
            tell: Iterable | str | None = None) -> Opener:
        """``with c.if_(GUARD, at=Owner):`` — the owner decides from its causal past."""
        where = caller()
        return self._opener("if_", where, lambda: self._if(guard, at, label, tell, where))

    def else_(self) -> Opener:
        """``with c.else_():`` right after a ``with c.if_(...)`` block."""
        where = caller()
        self._blocks.check_pending()
        statements = self._blocks.frames[-1].statements
        opened = self._blocks.open_if
        if opened is None or not statements or statements[-1] is not opened:
            raise ChoreographyError("c.else_() must directly follow a `with c.if_(...)` block",
                                    where)
        return self._opener("else_", where, lambda: self._else(statements, opened, where))

    def while_(self, guard: str | Var, *, at: Lifeline | str, label: str | None = None,
               tell: Iterable | str | None = None) -> Opener:
        """``with c.while_(GUARD, at=Owner):`` — the owner decides before every round."""
        where = caller()
        return self._opener("while_", where, lambda: self._while(guard, at, label, tell, where))

    def parallel(self) -> Opener:
        """``with c.parallel():`` holding ``with c.thread():`` blocks that run concurrently."""
        where = caller()
        return self._opener("parallel", where, lambda: self._parallel(where))

    def thread(self) -> Opener:
        """``with c.thread():`` directly inside ``with c.parallel():``."""
        where = caller()
        self._blocks.check_pending()
        if self._blocks.frames[-1].kind != "parallel":
            raise ChoreographyError("c.thread() belongs directly inside `with c.parallel():`",
                                    where)
        return self._opener("thread", where, lambda: self._thread(where))

    def atomic(self, lifeline: Lifeline | str) -> Opener:
        """``with c.atomic(Store):`` — Store's events in the block are not interleaved with
        its other threads' (a shared store serving one request at a time, see the model)."""
        where = caller()
        return self._opener("atomic", where, lambda: self._atomic(lifeline, where))

    @contextlib.contextmanager
    def _atomic(self, lifeline, where: Where):
        name = lifeline_of(self, lifeline, where, "atomic") or "?"
        statement_id = self._id()
        with self._blocks.block("atomic", where) as frame:
            yield
        self._append(Atomic(statement_id, name, tuple(frame.statements), where))

    @contextlib.contextmanager
    def _if(self, guard, at, label, tell, where: Where):
        owner, checked, text, told = decision_of(self, guard, at, label, tell, where, "if_")
        statement_id = self._id()
        with self._blocks.block("then", where) as frame:
            yield
        decision = If(statement_id, owner, checked, tuple(frame.statements), (), text, told, where)
        self._append(decision)
        self._blocks.open_if = decision

    @contextlib.contextmanager
    def _else(self, statements: list, opened: If, where: Where):
        if self._blocks.open_if is not opened or not statements or statements[-1] is not opened:
            raise ChoreographyError("c.else_() must directly follow a `with c.if_(...)` block",
                                    where)
        self._blocks.open_if = None
        with self._blocks.block("else", where) as frame:
            yield
        statements[-1] = If(opened.id, opened.owner, opened.guard, opened.then,
                            tuple(frame.statements), opened.label, opened.tell, opened.where, where)

    @contextlib.contextmanager
    def _while(self, guard, at, label, tell, where: Where):
        owner, checked, text, told = decision_of(self, guard, at, label, tell, where, "while_")
        statement_id = self._id()
        with self._blocks.block("while", where) as frame:
            yield
        self._append(While(statement_id, owner, checked, tuple(frame.statements), text, told,
                           where))

    @contextlib.contextmanager
    def _parallel(self, where: Where):
        statement_id = self._id()
        with self._blocks.block("parallel", where) as frame:
            yield
        if not frame.threads:
            self._problem("c.parallel() holds no c.thread() block", where, "empty-parallel")
        self._append(Parallel(statement_id, tuple(frame.threads), where,
                              tuple(frame.thread_wheres)))

    @contextlib.contextmanager
    def _thread(self, where: Where):
        if self._blocks.frames[-1].kind != "parallel":
            raise ChoreographyError("c.thread() belongs directly inside `with c.parallel():`",
                                    where)
        with self._blocks.block("thread", where) as frame:
            yield
        self._blocks.frames[-1].threads.append(tuple(frame.statements))
        self._blocks.frames[-1].thread_wheres.append(where)

    @property
    def body(self) -> tuple:
        """The choreography's statements, once every block is closed."""
        self._blocks.check_pending()
        frames = self._blocks.frames
        if len(frames) != 1:
            raise ChoreographyError(f"choreography {self.name!r} still has an open block",
                                    frames[-1].where or self.where)
        return tuple(frames[0].statements)

    # ----------------------------------------------------------------- helpers

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _problem(self, message: str, where: Where, kind: str, detail: str = "") -> None:
        self.problems.append(ChoreographyError(message, where, detail, kind))

    def _opener(self, name: str, where: Where, enter: Callable) -> Opener:
        self._blocks.check_pending()
        self._blocks.pending = Opener(self._blocks, name, where, enter)
        return self._blocks.pending

    def _append(self, statement) -> None:
        frame = self._blocks.frames[-1]
        if frame.kind == "parallel":
            raise ChoreographyError("inside c.parallel(), put statements in "
                                    "`with c.thread():` blocks", statement.where)
        problem = value_problem(getattr(statement, "label", None))
        if problem:  # every event of the statement carries its label into the trace
            self._problem(f"the label {problem}, so no trace could hold it", statement.where,
                          "label")
        frame.statements.append(statement)
        self._blocks.open_if = None

    def _declare(self, declared: Var, where: Where) -> Var:
        known = self.variables.get(declared.name)
        if known is not None and known.type != declared.type:
            raise ChoreographyError(f"variable {declared.name!r} is declared twice with "
                                    f"different types", where)
        self.variables[declared.name] = declared
        return declared
