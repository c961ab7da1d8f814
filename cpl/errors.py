"""The root of every error raised for a user, and the families of guards and traces.

``CplError`` is what the ``cpl`` command catches: each error carries the exit code
it maps to (cli.md) and the lines the command prints for it, so one handler serves
every family (``GuardError`` here, ``TraceError``, ``choreo``'s ``ChoreographyError``,
``cpl.live``'s ``LiveError``...).  A ``GuardError`` knows where (line, column, the
source line) and what was expected, in words; ``str()`` renders the message with a
caret under the offending character, which is what the CLI prints.
Every message reaches a terminal through :func:`complain`, which escapes what a
terminal would obey (names come from hostile input), in the CLI and in a lifeline
process alike.
"""

from __future__ import annotations

import re
import sys

EXIT_FAILED, EXIT_USAGE = 1, 2  # cli.md: the input was read but the work failed; usage


class CplError(Exception):
    """An error our code raises for a user: its message says what and where.

    ``exit_code`` is what ``cpl`` exits with for it: 1 (the default) when the input
    was read but the work failed, 2 for usage errors and guards or choreographies that
    do not parse, resolve or check.  Exceptions of ours that never reach a user (a
    fast path declining, a private signal inside one module) stay outside this root;
    ``tests/test_errors.py`` lists them with their reasons."""

    exit_code = EXIT_FAILED

    def for_cli(self, command: str) -> str:
        """The lines ``cpl COMMAND`` prints on standard error for this error."""
        return f"cpl {command}: {self}"


class GuardError(CplError):
    """A guard that does not parse, resolve or check."""

    exit_code = EXIT_USAGE
    origin = "guard"  # what the source is, for the rendered prefix (a file name, say)

    def __init__(self, message: str, source: str = "", line: int = 0, column: int = 0,
                 width: int = 1, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.source = source
        self.line = line
        self.column = column
        self.width = max(1, width)
        self.hint = hint

    @classmethod
    def at_offset(cls, message: str, source: str, offset: int, width: int = 1,
                  hint: str | None = None) -> "GuardError":
        line, column = line_column(source, offset)
        return cls(message, source, line, column, width, hint)

    @property
    def source_line(self) -> str:
        # Lines end at "\n" only, as in line_column() and the lexer.
        lines = self.source.split("\n")
        if 1 <= self.line <= len(lines):
            return lines[self.line - 1].removesuffix("\r")
        return ""

    def render(self, origin: str | None = None) -> str:
        """The full human message: where, what, the line and a caret."""
        origin = origin or self.origin
        if not self.line:
            text = f"{origin}: error: {self.message}"
        else:
            text = f"{origin}:{self.line}:{self.column}: error: {self.message}"
            # One column per character: tabs and control characters show as spaces.
            shown = "".join(c if c.isprintable() else " " for c in self.source_line)
            width = min(self.width, max(1, len(shown) - self.column + 1))
            caret = " " * (self.column - 1) + "^" * width
            text += f"\n  {shown}\n  {caret}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text

    def __str__(self) -> str:
        return self.render()

    def for_cli(self, command: str) -> str:
        return self.render()


class ResolveError(GuardError):
    """A guard that parses but names something the schema does not know."""


class EvaluationError(CplError):
    """A guard could not be evaluated (e.g. a user predicate raised)."""


class TraceError(CplError):
    """A trace that is not a valid ``cpl-msc/1`` MSC; nothing is evaluated from it.

    ``str()`` is the whole message: the file, the event (index and id) and the problem.
    """

    def __init__(self, message: str, origin: str | None = None, index: int | None = None,
                 event_id: str | None = None):
        super().__init__(message)
        self.message = message
        self.origin = origin
        self.index = index
        self.event_id = event_id

    def __str__(self) -> str:
        return f"{self.origin}: {self.message}" if self.origin else self.message

    def for_cli(self, command: str) -> str:
        return f"error: {self}"


def line_column(source: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a 0-based character offset."""
    offset = max(0, min(offset, len(source)))
    line = source.count("\n", 0, offset) + 1
    column = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, column


# Characters a terminal obeys rather than shows (C0 but the line break and tab, DEL, C1), the
# line separators, the bidirectional overrides, and surrogates, which no terminal encodes.
# A pattern, compiled (and cached by ``re``) at its first use: not every command prints.
_UNSAFE = ("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
           "\ud800-\udfff]")


def for_terminal(text: str) -> str:
    """``text`` with every ``_UNSAFE`` character written as its Python escape (``\\x1b``), so a
    hostile name cannot move the cursor, recolour or hide what follows it."""
    return re.sub(_UNSAFE, lambda found: repr(found[0])[1:-1], text)


def json_for_terminal(text: str) -> str:
    """JSON text with every ``_UNSAFE`` character as its ``\\uXXXX`` escape: still the same
    JSON (such characters occur only inside its strings), safe to print."""
    return re.sub(_UNSAFE, lambda found: f"\\u{ord(found[0]):04x}", text)


def complain(text: str) -> None:
    """One message on standard error, safe for the terminal."""
    print(for_terminal(text), file=sys.stderr)
