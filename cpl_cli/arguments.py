"""The argument blocks several ``cpl`` commands share, each written once.

A command module builds its parser from these and its own options, in the
order its ``--help`` lists them; where two commands word an option
differently, the command passes its wording.  Every ``cpl`` invocation
builds the whole parser, so this stays import-light: only ``add_schedule``
and ``add_detect`` import ``choreo`` (its schedule names and the detectors'
default timeout, not the simulator).
"""

from __future__ import annotations

TRACE_FILES = "TRACE.json, TRACE.msgpack or TRACE.jsonl"


def add_command(commands, name: str, run, help: str, description: str):
    """A subcommand that calls ``run(args)``; its parser, for the options to follow."""
    parser = commands.add_parser(name, help=help, description=description)
    parser.set_defaults(run=run)
    return parser


def add_choreography(parser, help: str | None = None) -> None:
    """The choreography file and ``--name`` to pick one of several in it."""
    parser.add_argument("choreo", metavar="CHOREO.py", help=help)
    parser.add_argument("--name", metavar="NAME", help="which choreography, if several")


def add_inputs(parser) -> None:
    """``--arg KEY=VALUE``, the choreography's inputs (``choreo.execution.plan.Plan.inputs``
    reads them)."""
    parser.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                        help="an input of the choreography (repeatable)")


def add_seed(parser, metavar: str, help: str) -> None:
    """``--seed``: the simulator's seed, 0 unless given."""
    parser.add_argument("--seed", type=int, default=0, metavar=metavar, help=help)


def add_schedule(parser, help: str, *, mixed: bool) -> None:
    """``--schedule``: the simulator's schedules, and with ``mixed`` explore's default taking
    them in turn."""
    from choreo.execution import MIXED, SCHEDULES
    parser.add_argument("--schedule", choices=(MIXED, *SCHEDULES) if mixed else SCHEDULES,
                        default=MIXED if mixed else None, help=help)


def add_max_steps(parser, help: str, default: int | None = None) -> None:
    """``--max-steps N``: a simulated run stops after N events."""
    parser.add_argument("--max-steps", type=int, default=default, metavar="N", help=help)


def add_trace_file(parser, help: str = TRACE_FILES) -> None:
    """The trace a command reads, in any of its forms."""
    parser.add_argument("trace", metavar="TRACE", help=help)


def add_format(parser, *forms: str) -> None:
    """``--format``: what the command prints, ``forms[0]`` by default."""
    parser.add_argument("--format", choices=forms, default=forms[0])


def add_lifeline(parser, help: str) -> None:
    """``--lifeline NAME``: only this lifeline's part."""
    parser.add_argument("--lifeline", metavar="NAME", help=help)


def check_lifeline(name: str | None, lifelines, where: str) -> None:
    """``--lifeline NAME`` must be one of ``lifelines`` (``where`` has them: "the trace");
    else a usage error with the closest name and the known ones."""
    if name is None or name in lifelines:
        return
    from cpl.lang import did_you_mean
    from .usage import UsageError
    known = list(lifelines)
    listed = ", ".join(known[:_LISTED]) + (f" and {len(known) - _LISTED} more"
                                          if len(known) > _LISTED else "")
    raise UsageError(f"--lifeline: unknown lifeline {name!r}{did_you_mean(name, known)} "
                     f"({where} has {listed})")


_LISTED = 20  # lifelines named in that error: a trace may have thousands


def add_predicates(parser) -> None:
    """``--predicates FILE`` on a command that evaluates guards (``predicates.load_predicates``)."""
    parser.add_argument("--predicates", metavar="FILE",
                        help="a choreography file or a Python module that registers the "
                             "trace's predicates with @predicate")


def add_detect(parser, help: str) -> None:
    """``--detect MODULE:FUNCTION``, repeatable: a detector of the user's own
    (``choreo.exploration.user_detectors``)."""
    from choreo.exploration import DEFAULT_TIMEOUT as DETECTOR_TIMEOUT
    parser.add_argument("--detect", action="append", default=[], metavar="MODULE:FUNCTION",
                        help=help)
    parser.add_argument("--detector-timeout", type=float, default=DETECTOR_TIMEOUT,
                        metavar="SECONDS",
                        help=f"how long each --detect detector may take on one trace (in a "
                        f"process of its own, killed with whatever it started; default "
                        f"{DETECTOR_TIMEOUT:g})")

