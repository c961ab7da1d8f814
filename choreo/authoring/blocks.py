"""The ``with`` blocks open while a :class:`~choreo.authoring.dsl.Choreography` is written.

``if_``/``else_``, ``while_``, ``parallel``/``thread`` and ``atomic`` each
open a block: the statements written inside land in it, and the statement
itself is appended when the block closes.  ``body`` is the outermost block
once every block is closed.  A block opener called without ``with`` would
silently lose its block, so it stays *pending* (:class:`Opener`) until the
next statement, block end or ``body`` reports it at its line.
"""

from __future__ import annotations

import contextlib
from typing import Callable

from .errors import ChoreographyError, Where
from .model import If


class Frame:
    """An open block while the choreography is being written."""

    def __init__(self, kind: str, where: Where | None = None):
        self.kind = kind  # "body" | "then" | "else" | "while" | "parallel" | "thread" | "atomic"
        self.statements: list = []
        self.threads: list = []
        self.thread_wheres: list = []
        self.where = where


class OpenBlocks:
    """The blocks open, innermost last (the first is the body), the ``if_`` just closed
    (an ``else_`` may follow it) and the opener called but not (yet) entered."""

    def __init__(self) -> None:
        self.frames = [Frame("body")]
        self.open_if: If | None = None
        self.pending: Opener | None = None

    def check_pending(self) -> None:
        """Refuse to go on past a block opener that was called but never entered."""
        pending, self.pending = self.pending, None
        if pending is not None:
            raise pending.never_entered()

    @contextlib.contextmanager
    def block(self, kind: str, where: Where):
        """A new innermost block while the ``with`` lasts, closed however it ends."""
        if self.frames[-1].kind == "parallel" and kind != "thread":
            raise ChoreographyError("inside c.parallel(), put statements in "
                                    "`with c.thread():` blocks", where)
        frame = Frame(kind, where)
        self.frames.append(frame)
        self.open_if = None
        try:
            yield frame
        finally:
            if self.frames and self.frames[-1] is frame:
                self.frames.pop()
            self.open_if = None


class Opener:
    """What ``c.if_(...)`` and the other block openers return: a block to enter with ``with``.

    Called without ``with`` the block would silently vanish (its statements
    land in the enclosing block), so the choreography remembers it as pending
    and the next DSL statement, block end or ``body`` (hence ``validate``)
    reports it at the opener's line.
    """

    def __init__(self, blocks: OpenBlocks, name: str, where: Where, enter: Callable):
        self._blocks, self.name, self.where = blocks, name, where
        self._enter, self._block = enter, None

    def never_entered(self) -> ChoreographyError:
        args = "" if self.name in ("else_", "parallel", "thread") else "..."
        call = f"c.{self.name}({args})"
        return ChoreographyError(f"{call} was never entered: write `with {call}:`", self.where,
                                 "  fix: a block opener only takes effect as the head of a "
                                 "`with` statement; indent the statements it holds under it",
                                 "never-entered")

    def __enter__(self):
        blocks = self._blocks
        if blocks.pending is self:
            blocks.pending = None
        else:
            blocks.check_pending()
        if self._block is not None:
            raise ChoreographyError(f"c.{self.name}(...) is entered twice: call it again "
                                    "for another block", self.where)
        self._block = self._enter()
        return self._block.__enter__()

    def __exit__(self, kind, error, traceback):
        if kind is None:
            try:
                self._blocks.check_pending()  # an opener left un-entered inside
            except ChoreographyError as problem:
                self._block.__exit__(type(problem), problem, problem.__traceback__)
                raise
        return self._block.__exit__(kind, error, traceback)
