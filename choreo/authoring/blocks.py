"""The block half of a :class:`~choreo.authoring.dsl.Choreography`: its ``with`` statements.

``if_``/``else_``, ``while_``, ``parallel``/``thread`` and ``atomic`` each
open a block: the statements written inside land in it, and the statement
itself is appended when the block closes.  ``body`` is the outermost block
once every block is closed.  A block opener called without ``with`` would
silently lose its block, so it stays *pending* (:class:`_Opener`) until the
next statement, block end or ``body`` reports it at its line.  Decisions
(``if_``, ``while_``) check their guard against the declarations so far.
"""

from __future__ import annotations

import contextlib
from typing import Callable, Iterable

import cpl
from cpl.trace import value_problem
from . import model
from .errors import ChoreographyError, Where, caller, guard_detail
from .model import Atomic, Guard, If, Input, Lifeline, Parallel, Var, While


class _Frame:
    """An open block while the choreography is being written."""

    def __init__(self, kind: str, where: Where | None = None):
        self.kind = kind  # "body" | "then" | "else" | "while" | "parallel" | "thread" | "atomic"
        self.statements: list = []
        self.threads: list = []
        self.thread_wheres: list = []
        self.where = where


class Blocks:
    """The open blocks of a choreography being written (mixed into ``Choreography``)."""

    def __init__(self) -> None:
        self._frames = [_Frame("body")]
        self._open_if: If | None = None  # the if_ just closed: an else_ may follow
        self._pending: _Opener | None = None  # an opener called but not (yet) entered

    def if_(self, guard: str | Var, *, at: Lifeline | str, label: str | None = None,
            tell: Iterable | str | None = None) -> "_Opener":
        """``with c.if_(GUARD, at=Owner):`` — the owner decides from its causal past."""
        where = caller()
        return self._opener("if_", where, lambda: self._if(guard, at, label, tell, where))

    def else_(self) -> "_Opener":
        """``with c.else_():`` right after a ``with c.if_(...)`` block."""
        where = caller()
        self._check_pending()
        statements = self._frames[-1].statements
        opened = self._open_if
        if opened is None or not statements or statements[-1] is not opened:
            raise ChoreographyError("c.else_() must directly follow a `with c.if_(...)` block",
                                    where)
        return self._opener("else_", where, lambda: self._else(statements, opened, where))

    def while_(self, guard: str | Var, *, at: Lifeline | str, label: str | None = None,
               tell: Iterable | str | None = None) -> "_Opener":
        """``with c.while_(GUARD, at=Owner):`` — the owner decides before every round."""
        where = caller()
        return self._opener("while_", where, lambda: self._while(guard, at, label, tell, where))

    def parallel(self) -> "_Opener":
        """``with c.parallel():`` holding ``with c.thread():`` blocks that run concurrently."""
        where = caller()
        return self._opener("parallel", where, lambda: self._parallel(where))

    def thread(self) -> "_Opener":
        """``with c.thread():`` directly inside ``with c.parallel():``."""
        where = caller()
        self._check_pending()
        if self._frames[-1].kind != "parallel":
            raise ChoreographyError("c.thread() belongs directly inside `with c.parallel():`",
                                    where)
        return self._opener("thread", where, lambda: self._thread(where))

    def atomic(self, lifeline: Lifeline | str) -> "_Opener":
        """``with c.atomic(Store):`` — Store's events in the block are not interleaved with
        its other threads' (a shared store serving one request at a time, see the model)."""
        where = caller()
        return self._opener("atomic", where, lambda: self._atomic(lifeline, where))

    @contextlib.contextmanager
    def _atomic(self, lifeline, where: Where):
        name = self._lifeline(lifeline, where, "atomic") or "?"
        statement_id = self._id()
        frame = self._push("atomic", where)
        try:
            yield
        finally:
            self._pop(frame)
        self._append(Atomic(statement_id, name, tuple(frame.statements), where))

    @contextlib.contextmanager
    def _if(self, guard, at, label, tell, where: Where):
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
    def _else(self, statements: list, opened: If, where: Where):
        if self._open_if is not opened or not statements or statements[-1] is not opened:
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
    def _while(self, guard, at, label, tell, where: Where):
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
    def _parallel(self, where: Where):
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
    def _thread(self, where: Where):
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

    # ------------------------------------------------------------------ reading

    @property
    def body(self) -> tuple:
        """The choreography's statements, once every block is closed."""
        self._check_pending()
        if len(self._frames) != 1:
            raise ChoreographyError(f"choreography {self.name!r} still has an open block",
                                    self._frames[-1].where or self.where)
        return tuple(self._frames[0].statements)

    # ----------------------------------------------------------------- helpers

    def _opener(self, name: str, where: Where, enter: Callable) -> "_Opener":
        self._check_pending()
        self._pending = _Opener(self, name, where, enter)
        return self._pending

    def _check_pending(self) -> None:
        """Refuse to go on past a block opener that was called but never entered."""
        pending, self._pending = self._pending, None
        if pending is not None:
            raise pending.never_entered()

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
        problem = value_problem(getattr(statement, "label", None))
        if problem:  # every event of the statement carries its label into the trace
            self._problem(f"the label {problem}, so no trace could hold it", statement.where,
                          "label")
        frame.statements.append(statement)
        self._open_if = None

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


class _Opener:
    """What ``c.if_(...)`` and the other block openers return: a block to enter with ``with``.

    Called without ``with`` the block would silently vanish (its statements
    land in the enclosing block), so the choreography remembers it as pending
    and the next DSL statement, block end or ``body`` (hence ``validate``)
    reports it at the opener's line.
    """

    def __init__(self, choreography: Blocks, name: str, where: Where, enter: Callable):
        self._choreography, self.name, self.where = choreography, name, where
        self._enter, self._block = enter, None

    def never_entered(self) -> ChoreographyError:
        args = "" if self.name in ("else_", "parallel", "thread") else "..."
        call = f"c.{self.name}({args})"
        return ChoreographyError(f"{call} was never entered: write `with {call}:`", self.where,
                                 "  fix: a block opener only takes effect as the head of a "
                                 "`with` statement; indent the statements it holds under it",
                                 "never-entered")

    def __enter__(self):
        c = self._choreography
        if c._pending is self:
            c._pending = None
        else:
            c._check_pending()
        if self._block is not None:
            raise ChoreographyError(f"c.{self.name}(...) is entered twice: call it again "
                                    "for another block", self.where)
        self._block = self._enter()
        return self._block.__enter__()

    def __exit__(self, kind, error, traceback):
        if kind is None:
            try:
                self._choreography._check_pending()  # an opener left un-entered inside
            except ChoreographyError as problem:
                self._block.__exit__(type(problem), problem, problem.__traceback__)
                raise
        return self._block.__exit__(kind, error, traceback)
