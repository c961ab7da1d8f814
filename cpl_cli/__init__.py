"""The ``cpl`` command: wires subcommands to library functions, nothing more.

One module per command group (``check``, ``choreography`` for validate and
show, ``evaluate``, ``run`` with ``lifeline``, ``merge``, ``view`` for
render and explain, ``explore``, ``verify``, ``detect``, ``export``); the options
they share are built by ``arguments``.
It lives in ``runtime`` because that package may import all three layers.
Building the parser stays import-light: an invocation imports the module of its
command's group only (all of them for ``cpl --help``), and a command loads what it
needs when it runs.  Exit status (``usage``): 0 success, 1 the input was read but the
work failed, 2 usage errors and guards or choreographies that do not parse,
resolve or check: every error of ours is a ``cpl.CplError`` that says which, and
what to print.
"""

from __future__ import annotations

import argparse
import os
import sys

from cpl.errors import CplError, TraceError

from cpl.errors import complain

from .usage import EXIT_FAILED, EXIT_OK

__all__ = ["build_parser", "main"]

# Each command group's module and the function that adds its commands, in the order
# ``cpl --help`` lists them; the commands each adds.  Only the group of the command
# run is imported (a module's imports are its commands' start-up): the whole parser is
# built for ``cpl --help``, a missing or an unknown command.
_GROUPS = ((".check", "add_check_command", ("check",)),
           (".evaluate", "add_eval_command", ("eval",)),
           (".choreography", "add_choreography_commands", ("validate", "show")),
           (".run", "add_run_commands", ("run", "lifeline")),
           (".merge", "add_merge_command", ("merge",)),
           (".view", "add_view_commands", ("render", "explain")),
           (".explore", "add_explore_command", ("explore",)),
           (".verify", "add_verify_command", ("verify",)),
           (".detect", "add_detect_command", ("detect",)),
           (".export", "add_export_command", ("export",)))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("causal-guards")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


class _Version(argparse.Action):
    """``--version``, looked up only when asked: ``importlib.metadata`` costs every other
    command ~15 ms of its start-up."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                 help="show program's version number and exit"):
        super().__init__(option_strings, dest, nargs=0, default=default, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"cpl {_version()}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; for a known ``command``, only its group's commands (what parsing
    its arguments, its ``--help`` and its usage errors need), and for a ``command`` other
    than ``render``, without ``render``'s options (``add_view_commands``)."""
    parser = argparse.ArgumentParser(
        prog="cpl", description="Causal Past Logic guards for distributed agent workflows.")
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    known = any(command in names for _, _, names in _GROUPS)
    for module, adder, names in _GROUPS:
        if known and command not in names:
            continue
        __import__(f"{__name__}{module}")
        add = getattr(sys.modules[f"{__name__}{module}"], adder)
        if module == ".view":
            add(commands, drawing=command in (None, "render"))
        else:
            add(commands)
    return parser


def _command(argv: list[str]) -> str | None:
    """The command ``argv`` names (its first word that is no option: the options before
    it take no value), None if none, or if help is asked first."""
    for word in argv:
        if word in ("-h", "--help"):
            return None
        if not word.startswith("-"):
            return word
    return None


def main(argv: list[str] | None = None) -> int:
    args = build_parser(_command(sys.argv[1:] if argv is None else argv)).parse_args(argv)
    try:
        return args.run(args)
    except CplError as error:  # a usage error, a guard, a trace, a choreography...
        complain(error.for_cli(args.command))
        if isinstance(error, TraceError) and error.origin:
            from cpl.trace import unfinished
            if note := unfinished(error.origin):  # a killed run's trace, its logs beside
                complain(f"note: {note}")
        return error.exit_code
    except KeyboardInterrupt:
        print("cpl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as error:  # a bug of ours: one clear line rather than a traceback
        if os.environ.get("CPL_DEBUG"):
            raise
        complain(f"cpl {args.command}: internal error: {type(error).__name__}: {error}\n"
                 f"  this is a bug in cpl; CPL_DEBUG=1 shows the traceback")
        return EXIT_FAILED
