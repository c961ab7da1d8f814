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
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except GuardError as error:
        print(error.render(getattr(error, "origin", "guard")), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("cpl: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
