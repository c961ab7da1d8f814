"""What every ``cpl`` command answers with: its exit codes (cli.md) and the usage error.

One place, so the command modules of :mod:`cpl_cli` agree.  Errors and warnings
go through ``complain``: they quote names from traces and files, which may hold any
character.
"""

from cpl.errors import complain, for_terminal, json_for_terminal  # noqa: F401 - the commands use them

from cpl.errors import CplError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2  # 1: the input was read but the work failed


class UsageError(CplError):
    """A command line that cannot be carried out as given (exit 2)."""

    exit_code = EXIT_USAGE


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
