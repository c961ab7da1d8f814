"""The ``cpl`` command: wires subcommands to library functions, nothing more.

It lives in ``runtime`` because that package may import all three layers.
Exit status: 0 success, 1 the input was read but the work failed, 2 usage
errors and guards or choreographies that do not parse, resolve or check.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import cpl
from cpl import GuardError, Schema
from cpl.errors import TraceError

from .usage import EXIT_FAILED, EXIT_OK, EXIT_USAGE, UsageError


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("causal-guards")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _schema(path: str | None) -> Schema:
    return Schema.load(path) if path else Schema()


def cmd_check(args) -> int:
    schema = _schema(args.schema)
    if args.monitor is not None:
        return _print_monitor(args, schema)
    # Without --schema a generic P φ still prints: its lifelines are known only where it
    # is evaluated (json: what each of them ships is under "*").
    guard = cpl.check(args.guard, schema, anywhere=True)
    if args.owner is not None:
        raise UsageError("--owner goes with --monitor")
    for warning in guard.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(guard.to_json()))
    else:
        print(guard.canonical)
    return EXIT_OK


def _print_monitor(args, schema) -> int:
    """The generated monitor of one lifeline, for reading beside Algorithms 1-2."""
    import attrs

    from cpl.monitor import OwnedFormula, compile_guards
    from cpl.lang import did_you_mean, named_lifelines

    if args.format != "text":
        raise UsageError("--monitor prints Python source; leave out --format json")
    owner = args.owner if args.owner is not None else args.monitor
    if schema.lifelines is not None:
        lifelines = schema.lifelines
    else:  # the lifelines the guard names, and its owner; P ranges over them all
        named = named_lifelines(cpl.resolve(cpl.parse(args.guard), schema, args.guard))
        close = did_you_mean(owner, named) if owner not in named else ""
        if close and args.owner is None:  # a name a letter away from one the guard names
            raise UsageError(f"--monitor: unknown lifeline {owner!r}{close} (the guard names "
                             f"{', '.join(named)}); give --owner {owner} if it owns the guard")
        lifelines = tuple(dict.fromkeys(named + (owner,)))
    guard = cpl.check(args.guard, attrs.evolve(schema, lifelines=lifelines))
    for option, name in (("--owner", owner), ("--monitor", args.monitor)):
        if name not in lifelines:
            raise UsageError(f"{option}: unknown lifeline {name!r}{did_you_mean(name, lifelines)} "
                             f"(lifelines: {', '.join(lifelines)})")
    program = compile_guards([OwnedFormula(owner, guard.primitive)], lifelines)
    local = program.local(args.monitor)
    print(f"# cpl check --monitor: the monitor of {args.monitor!r} (lifeline {local.index}) "
          f"for the guard owned by {owner!r}")
    for index, name in enumerate(lifelines):
        print(f"#   lifeline {index}: {name!r}")
    if local.slots:
        root = local.slot_of.get(guard.primitive)
        print(f"#   the guard is slot v{root}" if root is not None else
              "#   this lifeline only ships what others read")
    print(local.source, end="")
    return EXIT_OK


def _choreography(args):
    from choreo import load_one
    return load_one(args.choreo, args.name)


def cmd_validate(args) -> int:
    from choreo import ChoreographyError, validate
    report = validate(_choreography(args))
    if not report.ok:
        raise ChoreographyError.many(report.errors)
    print(report.summary())
    return EXIT_OK


def cmd_show(args) -> int:
    from choreo import ChoreographyError, show, validate
    choreography = _choreography(args)
    if args.lifeline is not None and args.lifeline not in choreography.lifeline_names:
        raise ChoreographyError(f"--lifeline: unknown lifeline '{args.lifeline}' (the "
                                f"choreography has {', '.join(choreography.lifeline_names)})")
    report = validate(choreography)
    if report.projection is not None:  # shown even when invalid: it helps to see why
        print(show(report.projection, args.lifeline, choreography.results), end="")
    if not report.ok:
        raise ChoreographyError.many(report.errors)
    return EXIT_OK


def _add_choreography_commands(commands) -> None:
    for name, run, text in (
            ("validate", cmd_validate, "check a choreography and list its inputs"),
            ("show", cmd_show, "print the projected local program of each lifeline")):
        command = commands.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        command.add_argument("choreo", metavar="CHOREO.py",
                             help="a Python file defining Choreography objects at module level")
        command.add_argument("--name", metavar="NAME", help="which choreography, if several")
        if name == "show":
            command.add_argument("--lifeline", metavar="NAME", help="only this lifeline")
        command.set_defaults(run=run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cpl", description="Causal Past Logic guards for distributed agent workflows.")
    parser.add_argument("--version", action="version", version=f"cpl {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = commands.add_parser("check", help="parse and resolve a guard; print its canonical form",
                                description="Parse and resolve a guard; print its canonical form.")
    check.add_argument("guard", metavar="GUARD", help="the guard text, e.g. '@A(x S y)'")
    check.add_argument("--schema", metavar="FILE",
                       help='JSON {"lifelines": [...], "vars": {...}, "symbols": [...]}')
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.add_argument("--monitor", metavar="LIFELINE",
                       help="print the Python monitor generated for LIFELINE (Algorithms 1-2 of "
                            "the paper, straight-line) instead of the canonical form. The "
                            "lifelines are --schema's, else those the guard names plus the owner")
    check.add_argument("--owner", metavar="NAME",
                       help="with --monitor: the lifeline that evaluates the guard (default: the "
                            "--monitor lifeline); the other lifelines' monitors show what they ship")
    check.set_defaults(run=cmd_check)

    from .evaluate import add_eval_command
    from .explore import add_explore_command
    from .run import add_run_commands
    from .view import add_view_commands
    add_eval_command(commands)
    _add_choreography_commands(commands)
    add_run_commands(commands)
    add_view_commands(commands)
    add_explore_command(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    from choreo.errors import ChoreographyError
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ChoreographyError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_USAGE
    except UsageError as error:
        print(f"cpl {args.command}: {error}", file=sys.stderr)
        return EXIT_USAGE
    except GuardError as error:
        print(error.render(getattr(error, "origin", "guard")), file=sys.stderr)
        return EXIT_USAGE
    except TraceError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("cpl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as error:  # a bug of ours: one clear line rather than a traceback
        if os.environ.get("CPL_DEBUG"):
            raise
        print(f"cpl {args.command}: internal error: {type(error).__name__}: {error}\n"
              f"  this is a bug in cpl; CPL_DEBUG=1 shows the traceback", file=sys.stderr)
        return EXIT_FAILED

