"""What every ``cpl`` command answers with: its exit codes (cli.md) and the usage error.

One place, so the command modules of :mod:`runtime.cli` agree.
"""

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2  # 1: the input was read but the work failed


class UsageError(Exception):
    """A command line that cannot be carried out as given (exit 2)."""
