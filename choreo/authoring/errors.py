"""Where a choreography statement was written, and errors that point there.

Every DSL call records the user's file and line (the first stack frame
outside this package), so that a mistake found later — by name
resolution, projection or validation — is reported as
``path:line: error: ...`` in the user's own file, like a compiler would.
"""

from __future__ import annotations

import contextlib
import os
import sys

import attrs

from cpl.errors import EXIT_FAILED, EXIT_USAGE, CplError, GuardError

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_SKIPPED = {os.path.abspath(contextlib.__file__)}  # `with c.if_(...)` enters through contextlib


@attrs.frozen
class Where:
    """A source position: the user's file and 1-based line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{shown_path(self.path)}:{self.line}"


UNKNOWN = Where("<unknown>", 0)


def shown_path(path: str) -> str:
    """A path as a compiler shows it: relative to the working directory when below it."""
    if not os.path.isabs(path):
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith(os.pardir) else relative


def caller() -> Where:
    """The first frame outside the ``choreo`` package: the user's statement."""
    frame = sys._getframe(1)
    while frame is not None:
        path = os.path.abspath(frame.f_code.co_filename)
        if os.path.dirname(path) != _PACKAGE_DIR and path not in _SKIPPED:
            return Where(frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return UNKNOWN


class LocatedError(CplError):
    """An error at a statement of the user's file: ``ChoreographyError`` (exit 2), and a
    lifeline that failed as it ran (``choreo.execution.status.RunFailure``, exit 1).

    ``str()`` is the full message: ``path:line: error: message`` and any
    indented detail lines (a guard's caret rendering, a fix).
    """

    def __init__(self, message: str, where: Where = UNKNOWN, detail: str = "",
                 kind: str = "error"):
        super().__init__(message)
        self.message = message
        self.where = where
        self.detail = detail
        self.kind = kind  # a short tag naming the check, used by tests and tools

    def render(self) -> str:
        if self.where.line:
            head = f"{self.where}: error: {self.message}"
        elif self.where is UNKNOWN:
            head = f"error: {self.message}"
        else:
            head = f"{shown_path(self.where.path)}: error: {self.message}"
        return head + ("\n" + self.detail if self.detail else "")

    def __str__(self) -> str:
        return self.render()

    def for_cli(self, command: str) -> str:
        return self.render()


class ChoreographyError(LocatedError):
    """A choreography that cannot be defined, loaded, projected or validated (exit 2)."""

    exit_code = EXIT_USAGE

    @staticmethod
    def many(errors) -> "ChoreographyError":
        """One exception for a list of problems (the list itself when there are several)."""
        errors = list(errors)
        return errors[0] if len(errors) == 1 else ChoreographyErrors(errors)


class ChoreographyErrors(ChoreographyError):
    """Several problems at once (validation collects them all)."""

    def __init__(self, errors: list[ChoreographyError]):
        first = errors[0]
        super().__init__(first.message, first.where, first.detail, first.kind)
        self.errors = list(errors)

    def render(self) -> str:
        return "\n".join(error.render() for error in self.errors)


def indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line if line else line for line in text.splitlines())


def guard_detail(error: GuardError) -> str:
    """A guard error's own caret rendering, minus its ``guard:L:C: error:`` head line: the
    detail under a choreography problem that points at the guard's statement."""
    lines = error.render("guard").splitlines()[1:]
    return indent("\n".join(line[2:] if line.startswith("  ") else line for line in lines))


class DetectorFailed(CplError, RuntimeError):
    """A user detector raised, returned what is not events, ran out of time, ended its
    process or left one running (``choreo.exploration.user_detectors``): the message names it."""

    exit_code = EXIT_FAILED
