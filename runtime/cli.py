"""The ``cpl`` command: wires subcommands to library functions, nothing more.

It lives in ``runtime`` because that package may import all three layers.
Exit status: 0 success, 1 the input was read but the work failed, 2 usage
errors and guards or choreographies that do not parse, resolve or check.
"""

from __future__ import annotations

import argparse
import json
import sys

import cpl
from cpl import GuardError, Schema
from cpl.errors import TraceError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _schema(path: str | None) -> Schema:
    return Schema.load(path) if path else Schema()


def cmd_check(args) -> int:
    guard = cpl.check(args.guard, _schema(args.schema))
    if args.format == "json":
        print(json.dumps(guard.to_json()))
    else:
        print(guard.canonical)
    return EXIT_OK


def cmd_eval(args) -> int:
    from cpl import offline, reference
    from cpl.tracefile import load_trace

    trace = load_trace(args.trace)
    if args.lifeline is not None and args.lifeline not in trace.lifelines:
        raise GuardError(f"--lifeline: unknown lifeline '{args.lifeline}' "
                         f"(the trace has {', '.join(trace.lifelines)})")
    if args.engine == "reference":
        formula = cpl.check(args.guard, trace.schema()).formula
        results = reference.evaluate_all(trace, formula, args.lifeline)
    else:
        results = offline.evaluate_trace(trace, args.guard, args.lifeline)
    out = sys.stdout
    if args.format == "jsonl":
        for event, value in results:
            out.write(json.dumps({"event": event.id, "lifeline": event.lifeline,
                                  "value": value}) + "\n")
    else:
        width = max((len(event.id) for event, _ in results), default=5)
        lanes = max((len(event.lifeline) for event, _ in results), default=8)
        for event, value in results:
            note = f"  (recorded {str(event.outcome).lower()})" if event.outcome is not None else ""
            out.write(f"{event.id:<{width}}  {event.lifeline:<{lanes}}  {event.kind:<6}  "
                      f"{str(value).lower()}{note}\n")
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cpl", description="Causal Past Logic guards for distributed agent workflows.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    check = commands.add_parser("check", help="parse and resolve a guard; print its canonical form",
                                description="Parse and resolve a guard; print its canonical form.")
    check.add_argument("guard", metavar="GUARD", help="the guard text, e.g. '@A(x S y)'")
    check.add_argument("--schema", metavar="FILE",
                       help='JSON {"lifelines": [...], "vars": {...}, "symbols": [...]}')
    check.add_argument("--format", choices=("text", "json"), default="text")
    check.set_defaults(run=cmd_check)

    evaluate = commands.add_parser(
        "eval", help="evaluate a guard at every event of a cpl-msc/1 trace",
        description="Evaluate GUARD at every event of TRACE (JSON or msgpack), in trace order.")
    evaluate.add_argument("trace", metavar="TRACE")
    evaluate.add_argument("guard", metavar="GUARD")
    evaluate.add_argument("--lifeline", metavar="NAME", help="only the events of this lifeline")
    evaluate.add_argument("--format", choices=("text", "jsonl"), default="text")
    evaluate.add_argument("--engine", choices=("monitor", "reference"), default="monitor",
                          help="the online monitor (default) or the literal reference evaluator")
    evaluate.set_defaults(run=cmd_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
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


if __name__ == "__main__":
    sys.exit(main())
