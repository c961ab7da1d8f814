"""The ``cpl`` command: wires subcommands to library functions, nothing more.

It lives in ``runtime`` because that package may import all three layers.
Exit status: 0 success, 1 the input was read but the work failed, 2 usage
errors and guards or choreographies that do not parse, resolve or check.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile

import cpl
from cpl import GuardError, Schema
from cpl.errors import TraceError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


from .cli_run import UsageError  # noqa: E402 - one family of usage errors for every command


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
    guard = cpl.check(args.guard, schema)
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

    from cpl.compile import OwnedFormula, compile_guards
    from cpl.names import did_you_mean
    from cpl.references import named_lifelines

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


def cmd_eval(args) -> int:
    from cpl import offline, reference
    from cpl.msc import Trace
    from cpl.tracefile import open_trace

    def warn(text: str) -> None:
        print(f"warning: {text}", file=sys.stderr)

    # A document is loaded and checked whole; a .jsonl stream is checked and evaluated one
    # event at a time, its output held in a spool until the last line has passed the
    # check: nothing is printed from a malformed trace (spec/trace.md).
    source = open_trace(args.trace, warn)
    streamed = not isinstance(source, Trace)
    if args.lifeline is not None and args.lifeline not in source.lifelines:
        raise GuardError(f"--lifeline: unknown lifeline '{args.lifeline}' "
                         f"(the trace has {', '.join(source.lifelines)})")
    schema = source.schema()
    checked = cpl.check(args.guard, schema)
    try:
        if args.engine == "reference":
            trace = source.trace() if streamed else source
            results = reference.evaluate_all(trace, checked.formula, args.lifeline)
            streamed = False
        else:
            results = offline.evaluations(source, args.guard, args.lifeline, schema=schema)
        with tempfile.SpooledTemporaryFile(8 << 20, "w+", encoding="utf-8") as spool:
            if args.format == "jsonl":
                _eval_jsonl(results, source.lifelines, spool if streamed else sys.stdout)
            else:
                widths = _eval_text_rows(results, checked.canonical, spool)
            spool.seek(0)
            if args.format == "text":
                for line in spool:
                    row = json.loads(line)
                    sys.stdout.write(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  "
                                     f"{row[2]:<6}  {row[3]}\n")
            else:
                for chunk in iter(lambda: spool.read(1 << 16), ""):
                    sys.stdout.write(chunk)
    except MemoryError:
        raise TraceError("the trace is too large to evaluate in memory; write it as .jsonl",
                         args.trace) from None
    return EXIT_OK


def _eval_jsonl(results, lifelines, out) -> None:
    """One JSON object per evaluated event.  The lines differ only in the event id, its
    lifeline and the value, so only the id is encoded per line (json.dumps of a whole dict
    per line cost more than monitoring the event: bench/README.md, P6); the bytes are
    json.dumps's."""
    from json.encoder import encode_basestring_ascii as quoted  # json.dumps of a str, in C

    lanes = {name: json.dumps(name) for name in lifelines}
    batch = []
    for event, value in results:
        batch.append(f'{{"event": {quoted(event.id)}, "lifeline": {lanes[event.lifeline]}, '
                     f'"value": {"true" if value else "false"}}}\n')
        if len(batch) == 4096:
            out.write("".join(batch))
            batch.clear()
    out.write("".join(batch))


def _eval_text_rows(results, canonical: str, spool) -> list[int]:
    """Rows for people, first as JSON arrays in the spool: the column widths are known only
    at the end.  "(recorded X)" only at choices that recorded this same guard."""
    widths = [0, 0]
    for event, value in results:
        note = (f"  (recorded {str(event.outcome).lower()})"
                if event.outcome is not None and event.guard == canonical else "")
        row = [_shown(event.id), _shown(event.lifeline), event.kind, str(value).lower() + note]
        widths = [max(widths[0], len(row[0])), max(widths[1], len(row[1]))]
        spool.write(json.dumps(row) + "\n")
    return widths


def _shown(name: str) -> str:
    """A name as text output shows it: as is, or JSON-quoted if it holds a line break or
    another character that would make the table lie."""
    return name if name.isprintable() else json.dumps(name, ensure_ascii=False)


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

    evaluate = commands.add_parser(
        "eval", help="evaluate a guard at every event of a cpl-msc/1 trace",
        description="Evaluate GUARD at every event of TRACE (a JSON or msgpack document, or a "
        ".jsonl stream, read one event at a time), in trace order.")
    evaluate.add_argument("trace", metavar="TRACE", help="TRACE.json, TRACE.msgpack or TRACE.jsonl "
                          "(sniffed when the suffix is another)")
    evaluate.add_argument("guard", metavar="GUARD")
    evaluate.add_argument("--lifeline", metavar="NAME", help="only the events of this lifeline")
    evaluate.add_argument("--format", choices=("text", "jsonl"), default="text")
    evaluate.add_argument("--engine", choices=("monitor", "reference"), default="monitor",
                          help="the online monitor (default) or the literal reference evaluator")
    evaluate.set_defaults(run=cmd_eval)
    _add_choreography_commands(commands)
    from .cli_run import add_run_commands
    add_run_commands(commands)
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


if __name__ == "__main__":
    sys.exit(main())
