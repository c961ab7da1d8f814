"""The choreography DSL: a global protocol written as plain Python.

A choreography says, from above, who sends what to whom, who computes what,
and who decides which way to go — projection (:mod:`choreo.project`) then
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
    c.include(other, lifelines={"Sub": Author})      # a reusable sub-choreography
    c.result(Author, merged)                         # what a run prints for Author

Guards are CPL text (or a boolean variable), checked at once against the
declarations made so far: every declared variable and input is a variable,
every member of a symbol set is a symbol, any other bare name is an error.
A mistake in a name or guard is recorded in ``c.problems`` with the user's
file and line and reported by ``validate``; misuse of the DSL itself (an
``else_`` without ``if_``) raises :class:`ChoreographyError` at once.

Actions are ``fn(variables, rng)`` (sync or async; ``variables`` a read-only
mapping of the lifeline's store, ``rng`` its seeded ``random.Random``),
the interface of :mod:`choreo.llm`.  The value is assigned to ``assigns``:
one variable takes the value, several take a tuple (in order) or a dict.

``control`` chooses which lifelines learn each decision (see
:mod:`choreo.project`): ``"minimal"`` (default), ``"broadcast"``, or
``"none"`` (only those listed in a statement's ``tell=``).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterable

import cpl
from . import model
from .errors import ChoreographyError, Where, caller, indent
from .model import Act, Guard, If, Input, Lifeline, Parallel, Send, SymbolSet, Var, While

KEYWORDS = frozenset("S Y P O H true false null and or not since Seen".split())
CONTROL = ("minimal", "broadcast", "none")
_REQUIRED = object()


class _Frame:
    """An open block while the choreography is being written."""

    def __init__(self, kind: str, where: Where | None = None):
        self.kind = kind  # "body" | "then" | "else" | "while" | "parallel" | "thread"
        self.statements: list = []
        self.threads: list = []
        self.thread_wheres: list = []
        self.where = where


class Choreography:
    """A global choreography under construction (see the module docstring)."""

    def __init__(self, name: str, *, control: str = "minimal", doc: str = ""):
        self.where = caller()
        if not (isinstance(name, str) and name):
            raise ChoreographyError("a choreography needs a name, e.g. Choreography('review')",
                                    self.where)
        if control not in CONTROL:
            raise ChoreographyError(f"control must be one of {', '.join(CONTROL)}, "
                                    f"not {control!r}", self.where)
        self.name, self.control, self.doc = name, control, doc
        self.lifeline_names: list[str] = []
        self.variables: dict[str, Var] = {}
        self.inputs: dict[str, Input] = {}
        self.symbol_sets: dict[str, SymbolSet] = {}
        self.results: dict[str, tuple[str, ...]] = {}
        self.problems: list[ChoreographyError] = []
        self._frames = [_Frame("body")]
        self._open_if: If | None = None  # the if_ just closed: an else_ may follow
        self._next_id = 1

    def __repr__(self) -> str:
        return f"<Choreography {self.name!r}: {', '.join(self.lifeline_names)}>"

    # ------------------------------------------------------------ declarations

    def lifeline(self, name: str) -> Lifeline:
        where = caller()
        self._new_name(name, "lifeline", where)
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
            self._new_name(member, "symbol", where)
            if member in self.variables:
                raise ChoreographyError(f"symbol {member!r} is also a variable name", where)
        if name in self.symbol_sets and self.symbol_sets[name].members != tuple(members):
            raise ChoreographyError(f"symbol set {name!r} is declared twice", where)
        self.symbol_sets[name] = SymbolSet(name, tuple(members))
        return self.symbol_sets[name]

    def var(self, name: str, type: Any = object, *, init: Any = _REQUIRED) -> Var:
        """A variable; ``init`` is its initial value everywhere, or ``{lifeline: value}``."""
        where = caller()
        self._check_type(name, type, where)
        pairs: tuple = ()
        if init is not _REQUIRED:
            if isinstance(init, dict):
                pairs = tuple((self._lifeline(k, where, "init of " + name) or "?", v)
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
        self._check_type(name, type, where)
        required = default is _REQUIRED
        if not required and not model.conforms(default, type):
            raise ChoreographyError(f"default {default!r} of input {name!r} is not "
                                    f"{model.type_name(type)}", where)
        places = self._lifeline_list(at, where, f"input {name!r}") if at is not None \
            else tuple(self.lifeline_names)
        declared = Input(name, type, None if required else default, required, places, where)
        self.inputs[name] = declared
        self._declare(Var(name, type, (), where), where)
        return declared

    def result(self, lifeline: Lifeline | str, *variables: Var | str) -> None:
        """The variables a run reports for ``lifeline`` (default: its whole store)."""
        where = caller()
        name = self._lifeline(lifeline, where, "result")
        names = self._variables(variables, where, "result")
        if name:
            self.results[name] = self.results.get(name, ()) + names

    # -------------------------------------------------------------- statements

    def send(self, sender: Lifeline | str, receiver: Lifeline | str, *variables: Var | str,
             label: str | None = None, **renamed: Var | str) -> None:
        """A message: its receive assigns the sender's values of ``variables``.

        ``test_status=status`` assigns the sender's ``status`` to the receiver's
        ``test_status``.
        """
        where = caller()
        source = self._lifeline(sender, where, "message")
        target = self._lifeline(receiver, where, "message")
        names = self._variables(tuple(variables) + tuple(renamed.values()), where, "message")
        into = names[:len(variables)] + self._variables(tuple(renamed), where, "message")
        if source and source == target:
            self._problem(f"{source} sends a message to itself", where, "self-message",
                          "  fix: use c.act for a local step")
        self._append(Send(self._id(), source or "?", target or "?", names, into,
                          label or ", ".join(names) or "signal", where))

    def act(self, lifeline: Lifeline | str, fn: Callable, *, assigns: Iterable = (),
            reads: Iterable | None = None, label: str | None = None) -> None:
        """A local action ``fn(variables, rng)``; its value goes to ``assigns``."""
        where = caller()
        name = self._lifeline(lifeline, where, "action")
        if not callable(fn):
            raise ChoreographyError(f"c.act needs a callable fn(variables, rng), got {fn!r}", where)
        if isinstance(assigns, (str, Var)):
            assigns = (assigns,)
        written = self._variables(assigns, where, "action")
        if reads is None:
            reads = sorted(getattr(fn, "reads", ()) or ())
        read = self._variables(reads, where, "action")
        text = label or getattr(fn, "__name__", None) or getattr(fn, "name", None) or "act"
        if text == "<lambda>":
            text = "compute " + ", ".join(written) if written else "act"
        self._append(Act(self._id(), name or "?", fn, written, read, text, (), where))

    def set(self, lifeline: Lifeline | str, label: str | None = None, **values: Any) -> None:
        """A local action assigning constants: ``c.set(TestRunner, status=pending)``."""
        where = caller()
        name = self._lifeline(lifeline, where, "set")
        names = self._variables(tuple(values), where, "set")
        for var_name, value in values.items():
            declared = self.variables.get(var_name)
            if declared and not model.conforms(value, declared.type):
                self._problem(f"{var_name} is {model.type_name(declared.type)}, "
                              f"but c.set gives it {value!r}", where, "type")
        text = label or "set " + ", ".join(f"{k}={v!r}" for k, v in values.items())
        self._append(Act(self._id(), name or "?", None, names, (), text,
                         tuple(values.items()), where))

    @contextlib.contextmanager
    def if_(self, guard: str | Var, *, at: Lifeline | str, label: str | None = None,
            tell: Iterable | str | None = None):
        """``with c.if_(GUARD, at=Owner):`` — the owner decides from its causal past."""
        where = caller()
        owner, checked, text, told = self._decision(guard, at, label, tell, where, "if_")
        statement_id = self._id()
        frame = self._push("then", where)
        try:
            yield
        finally:
            self._pop(frame)
        decision = If(statement_id, owner, checked, tuple(frame.statements), (), text, told, where)
        self._append(decision)
        self._open_if = decision

    @contextlib.contextmanager
    def else_(self):
        """``with c.else_():`` right after a ``with c.if_(...)`` block."""
        where = caller()
        statements = self._frames[-1].statements
        opened = self._open_if
        if opened is None or not statements or statements[-1] is not opened:
            raise ChoreographyError("c.else_() must directly follow a `with c.if_(...)` block",
                                    where)
        self._open_if = None
        frame = self._push("else", where)
        try:
            yield
        finally:
            self._pop(frame)
        statements[-1] = If(opened.id, opened.owner, opened.guard, opened.then,
                            tuple(frame.statements), opened.label, opened.tell, opened.where, where)

    @contextlib.contextmanager
    def while_(self, guard: str | Var, *, at: Lifeline | str, label: str | None = None,
               tell: Iterable | str | None = None):
        """``with c.while_(GUARD, at=Owner):`` — the owner decides before every round."""
        where = caller()
        owner, checked, text, told = self._decision(guard, at, label, tell, where, "while_")
        statement_id = self._id()
        frame = self._push("while", where)
        try:
            yield
        finally:
            self._pop(frame)
        self._append(While(statement_id, owner, checked, tuple(frame.statements), text, told,
                           where))

    @contextlib.contextmanager
    def parallel(self):
        """``with c.parallel():`` holding ``with c.thread():`` blocks that run concurrently."""
        where = caller()
        statement_id = self._id()
        frame = self._push("parallel", where)
        try:
            yield
        finally:
            self._pop(frame)
        if not frame.threads:
            self._problem("c.parallel() holds no c.thread() block", where, "empty-parallel")
        self._append(Parallel(statement_id, tuple(frame.threads), where,
                              tuple(frame.thread_wheres)))

    @contextlib.contextmanager
    def thread(self):
        where = caller()
        if self._frames[-1].kind != "parallel":
            raise ChoreographyError("c.thread() belongs directly inside `with c.parallel():`",
                                    where)
        frame = self._push("thread", where)
        try:
            yield
        finally:
            self._pop(frame)
        self._frames[-1].threads.append(tuple(frame.statements))
        self._frames[-1].thread_wheres.append(where)

    def include(self, other: "Choreography", *, lifelines: dict | None = None) -> None:
        """Inline ``other``'s statements here, its lifelines renamed by ``lifelines``."""
        from .include import include  # a separate concern: renaming and re-checking
        include(self, other, lifelines or {}, caller())

    # ------------------------------------------------------------------ reading

    @property
    def body(self) -> tuple:
        if len(self._frames) != 1:
            raise ChoreographyError(f"choreography {self.name!r} still has an open block",
                                    self._frames[-1].where or self.where)
        return tuple(self._frames[0].statements)

    @property
    def schema(self) -> cpl.Schema:
        members = frozenset(m for s in self.symbol_sets.values() for m in s.members)
        return cpl.Schema(tuple(self.lifeline_names), frozenset(self.variables), members)

    # ----------------------------------------------------------------- helpers

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id - 1

    def _push(self, kind: str, where: Where) -> _Frame:
        if self._frames[-1].kind == "parallel" and kind != "thread":
            raise ChoreographyError("inside c.parallel(), put statements in "
                                    "`with c.thread():` blocks", where)
        frame = _Frame(kind, where)
        self._frames.append(frame)
        self._open_if = None
        return frame

    def _pop(self, frame: _Frame) -> None:
        if self._frames and self._frames[-1] is frame:
            self._frames.pop()
        self._open_if = None

    def _append(self, statement) -> None:
        frame = self._frames[-1]
        if frame.kind == "parallel":
            raise ChoreographyError("inside c.parallel(), put statements in "
                                    "`with c.thread():` blocks", statement.where)
        frame.statements.append(statement)
        self._open_if = None

    def _problem(self, message: str, where: Where, kind: str, detail: str = "") -> None:
        self.problems.append(ChoreographyError(message, where, detail, kind))

    def _new_name(self, name, what: str, where: Where) -> None:
        if not (isinstance(name, str) and name.isidentifier()) or name in KEYWORDS:
            raise ChoreographyError(f"{name!r} cannot name a {what}: use an identifier that is "
                                    f"not a guard keyword ({' '.join(sorted(KEYWORDS))})", where)

    def _check_type(self, name: str, kind, where: Where) -> None:
        self._new_name(name, "variable", where)
        if not (isinstance(kind, SymbolSet) or kind in model.TYPES):
            raise ChoreographyError(f"type of {name!r} must be int, float, str, bool, object or "
                                    f"a symbol set from c.symbols(...), not {kind!r}", where)
        if any(name in s.members for s in self.symbol_sets.values()):
            raise ChoreographyError(f"variable {name!r} is also a symbol", where)

    def _declare(self, declared: Var, where: Where) -> Var:
        known = self.variables.get(declared.name)
        if known is not None and known.type != declared.type:
            raise ChoreographyError(f"variable {declared.name!r} is declared twice with "
                                    f"different types", where)
        self.variables[declared.name] = declared
        return declared

    def _lifeline(self, value, where: Where, context: str) -> str | None:
        name = value.name if isinstance(value, Lifeline) else value
        if not isinstance(name, str):
            raise ChoreographyError(f"{context}: expected a lifeline, got {value!r}", where)
        if name not in self.lifeline_names:
            self._problem(f"unknown lifeline '{name}' in {context}" + _suggest(name,
                          self.lifeline_names), where, "unknown-lifeline",
                          f"  hint: known lifelines: {', '.join(self.lifeline_names) or '(none)'}")
            return None
        return name

    def _lifeline_list(self, value, where: Where, context: str) -> tuple[str, ...]:
        items = [value] if isinstance(value, (str, Lifeline)) else list(value)
        return tuple(n for n in (self._lifeline(v, where, context) for v in items) if n)

    def _variables(self, values: Iterable, where: Where, context: str) -> tuple[str, ...]:
        names = []
        for value in values:
            name = value.name if isinstance(value, (Var, Input)) else value
            if not isinstance(name, str):
                raise ChoreographyError(f"{context}: expected a variable, got {value!r}", where)
            if name not in self.variables:
                self._problem(f"unknown variable '{name}' in {context}"
                              + _suggest(name, self.variables), where, "unknown-variable",
                              "  fix: declare it with c.var(...) before using it")
            names.append(name)
        return tuple(names)

    def _decision(self, guard, at, label, tell, where: Where, what: str):
        owner = self._lifeline(at, where, f"{what}(at=...)") or "?"
        if isinstance(guard, (Var, Input)):
            if guard.type is not bool:
                self._problem(f"{what} guard: variable '{guard.name}' is "
                              f"{model.type_name(guard.type)}; a variable alone as a guard "
                              "must be bool", where, "guard")
            guard = guard.name
        if not isinstance(guard, str):
            raise ChoreographyError(f"{what} needs a CPL guard text or a bool variable, "
                                    f"got {guard!r}", where)
        text = label or " ".join(guard.split())
        try:
            checked = cpl.check(guard, self.schema)
        except cpl.GuardError as error:
            self._problem(f"in the guard of {text!r}: {error.message}", where, "guard",
                          guard_detail(error))
            checked = None
        if tell is None or tell == "all":
            told = tell
        else:
            told = tuple(n for n in self._lifeline_list(tell, where, f"{what}(tell=...)")
                         if n != owner)
        return owner, Guard(guard, checked), text, told


def guard_detail(error: cpl.GuardError) -> str:
    """The guard's own caret rendering, minus its ``guard:L:C: error:`` head line."""
    lines = error.render("guard").splitlines()[1:]
    return indent("\n".join(line[2:] if line.startswith("  ") else line for line in lines))


def _suggest(name: str, known) -> str:
    import difflib
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""
