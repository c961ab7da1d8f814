"""``cpl check``: a guard parsed, resolved and checked; its canonical form or its monitor.

Only the guard language (:mod:`cpl`) and, for ``--monitor``, the monitor
compiler: checking a guard loads no choreography.
"""

from __future__ import annotations

import json
import sys

import cpl
from cpl import Schema

from .arguments import add_command, add_format
from .usage import EXIT_OK, UsageError


def _schema(path: str | None) -> Schema:
    return Schema.load(path) if path else Schema()


def _guard_text(args) -> str:
    """GUARD, or the text of ``--file`` (``-``: standard input), read no further than a
    guard may be long: a path to an endless file (/dev/zero) ends with the size error."""
    from cpl.lang import MAX_GUARD_LENGTH

    if (args.guard is None) == (args.file is None):
        raise UsageError("give the guard, or --file FILE (- for standard input), not both"
                         if args.guard is not None else "give a GUARD, or --file FILE (- for "
                         "standard input) for a guard too long for a command line")
    if args.file is None:
        return args.guard
    name = "standard input" if args.file == "-" else f"'{args.file}'"
    try:
        if args.file == "-":
            text = sys.stdin.read(MAX_GUARD_LENGTH + 1)
        else:
            with open(args.file, encoding="utf-8") as handle:
                text = handle.read(MAX_GUARD_LENGTH + 1)
    except OSError as error:
        raise UsageError(f"--file: cannot read {name}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise UsageError(f"--file: {name} is not UTF-8 text") from None
    if len(text) > MAX_GUARD_LENGTH:
        raise UsageError(f"--file: {name} holds more than {MAX_GUARD_LENGTH:,} characters, "
                         f"the most a guard may have; split it into several smaller guards")
    return text


def cmd_check(args) -> int:
    schema = _schema(args.schema)
    args.guard = _guard_text(args)
    try:
        return _check(args, schema)
    except cpl.GuardError as error:  # the caret's line is in the file: name it
        if args.file not in (None, "-"):
            error.origin = args.file
        raise


def _check(args, schema) -> int:
    if args.monitor is not None:
        return _print_monitor(args, schema)
    # Without --schema a generic P φ still prints: its lifelines are known only where it
    # is evaluated (json: what each of them ships is under "*").
    guard = cpl.check(args.guard, schema, anywhere=True)
    if args.owner is not None:
        raise UsageError("--owner goes with --monitor")
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


def add_check_command(commands) -> None:
    check = add_command(commands, "check", cmd_check,
                        help="parse and resolve a guard; print its canonical form",
                        description="Parse and resolve a guard; print its canonical form.")
    check.add_argument("guard", metavar="GUARD", nargs="?",
                       help="the guard text, e.g. '@A(x S y)'")
    check.add_argument("--file", metavar="FILE",
                       help="read the guard from FILE instead (- for standard input), for a "
                            "guard too long for a command line")
    check.add_argument("--schema", metavar="FILE",
                       help='JSON {"lifelines": [...], "vars": {...}, "symbols": [...]}')
    add_format(check, "text", "json")
    check.add_argument("--monitor", metavar="LIFELINE",
                       help="print the Python monitor generated for LIFELINE (Algorithms 1-2 of "
                            "the paper, straight-line) instead of the canonical form. The "
                            "lifelines are --schema's, else those the guard names plus the owner")
    check.add_argument("--owner", metavar="NAME",
                       help="with --monitor: the lifeline that evaluates the guard (default: the "
                            "--monitor lifeline); the other lifelines' monitors show what they "
                            "ship")
