"""What every ``cpl`` command answers with: its exit codes (cli.md) and the usage error.

One place, so the command modules of :mod:`runtime.cli` agree.  Errors and warnings
go through ``complain``: they quote names from traces and files, which may hold any
character.
"""

import re
import sys

from cpl.errors import CplError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2  # 1: the input was read but the work failed


class UsageError(CplError):
    """A command line that cannot be carried out as given (exit 2)."""

    exit_code = EXIT_USAGE


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


OPTION_FILE = 2**20  # characters of a JSON file an option names (--hosts, --place): a few names


def option_json(option: str, path: str):
    """The JSON in the file ``option`` names: a regular file (a FIFO would wait, a device
    never end) of at most ``OPTION_FILE`` characters; else a usage error naming both."""
    import json
    import os
    if os.path.exists(path) and not os.path.isfile(path):
        raise UsageError(f"{option}: {path} is not a regular file")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(OPTION_FILE + 1)
        if len(text) > OPTION_FILE:
            raise UsageError(f"{option}: {path} is longer than {OPTION_FILE >> 20} MiB")
        return json.loads(text)
    except OSError as error:
        raise UsageError(f"{option}: cannot read {path}: {error.strerror}") from None
    except (ValueError, RecursionError) as error:
        raise UsageError(f"{option}: {path} is not JSON ({str(error)[:200]})") from None
