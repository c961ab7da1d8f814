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

``Choreography`` is made of its declarations (:mod:`choreo.authoring.declare`), its
``with`` blocks (:mod:`choreo.authoring.blocks`) and, here, the plain statements.

Actions are ``fn(variables, rng)`` (sync or async; ``variables`` a read-only
mapping of the lifeline's store, ``rng`` its seeded ``random.Random``),
the interface of :mod:`choreo.models.llm`.  The value is assigned to ``assigns``:
one variable takes the value, several take a tuple (in order) or a dict.

``control`` chooses which lifelines learn each decision (see
:mod:`choreo.analysis.project`): ``"minimal"`` (default), ``"broadcast"``, or
``"none"`` (only those listed in a statement's ``tell=``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from cpl.trace import value_problem
from . import model
from .blocks import Blocks
from .declare import Declarations
from .errors import ChoreographyError, caller
from .include import include
from .model import Act, Lifeline, Send, Var

CONTROL = ("minimal", "broadcast", "none")


class Choreography(Declarations, Blocks):
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
        Declarations.__init__(self)
        Blocks.__init__(self)
        self.name, self.control, self.doc = name, control, doc
        self._next_id = 1
        self.included_in: list[str] = []  # hosts that include this one as a sub-choreography

    def __repr__(self) -> str:
        return f"<Choreography {self.name!r}: {', '.join(self.lifeline_names)}>"

    # -------------------------------------------------------------- statements

    def send(self, sender: Lifeline | str, receiver: Lifeline | str, *variables: Var | str,
             label: str | None = None, **renamed: Var | str) -> None:
        """A message: its receive assigns the sender's values of ``variables``.

        ``test_status=status`` assigns the sender's ``status`` to the receiver's
        ``test_status``.
        """
        where = caller()
        self._check_pending()
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
        self._check_pending()
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
        self._check_pending()
        name = self._lifeline(lifeline, where, "set")
        names = self._variables(tuple(values), where, "set")
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
        self._check_pending()
        include(self, other, lifelines or {}, caller())

    # ----------------------------------------------------------------- helpers

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id - 1
