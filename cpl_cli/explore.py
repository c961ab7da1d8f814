"""``cpl explore``: N seeded simulations of a choreography, their decisions and anomalies.

The work is :func:`choreo.exploration.explore.explore_file`; this module reads the
options, finds the detectors (``cpl.anomalies.detect``, if it can be
imported: otherwise no anomalies are counted, with a warning; and the
user's ``--detect MODULE:FUNCTION``, ``choreo.exploration.user_detectors``), shows a
one-line progress counter on standard error when that is a terminal, and
prints the table or the JSON object.  Runs that fail are data, not an error:
the exit status is 0 whatever the runs did, 2 for a usage error, 130 for
Ctrl-C, 1 if a worker process was killed.
"""

from __future__ import annotations

import json
import sys
import time

from .arguments import (add_choreography, add_command, add_detect, add_format, add_inputs,
                        add_max_steps, add_schedule, add_seed)
from .usage import EXIT_OK, UsageError, for_terminal


def _detectors():
    """``cpl.anomalies.detect``, or None (with a warning) when it cannot be imported."""
    try:
        from cpl.anomalies import detect
    except Exception as error:  # noqa: BLE001 - missing or broken: explore without it
        print(f"warning: no anomaly detectors ({type(error).__name__}: {error}); "
              f"anomalies are not counted", file=sys.stderr)
        return None
    return detect


def yours(specs, taken, timeout: float):
    """The ``--detect`` detectors by name, each imported now: one that does not load is a
    usage error naming it (before any run), as is a ``--detector-timeout`` that is not a
    number of seconds above 0."""
    from choreo.exploration import user_detectors
    if not 0 < timeout <= 86400:  # also refuses nan; inf would wait forever
        raise UsageError("--detector-timeout: give a number of seconds above 0, at most 86400")
    return user_detectors(specs, taken, timeout)  # a DetectorError is a usage error


def detectors_of(args):
    """The detectors ``--no-detectors``, ``--detect`` and ``--detector-timeout`` ask for, in
    ``explore``'s ``detectors=`` form (None: none), for ``cpl explore`` and ``cpl verify``."""
    detectors = None if args.no_detectors else _detectors()
    if args.detect:
        from cpl.anomalies import DETECTORS
        own = yours(args.detect, () if detectors is None else DETECTORS, args.detector_timeout)
        detectors = own if detectors is None else (detectors, own)
    return detectors


class _Progress:
    """``explored 340/1,000 runs`` on one line of standard error, at most ten times a second."""

    def __init__(self, stream):
        self.stream, self.shown, self.width = stream, 0.0, 0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - self.shown < 0.1:
            return
        self.shown = now
        text = f"explored {done:,}/{total:,} runs"
        self.stream.write("\r" + text.ljust(self.width))
        self.width = len(text)
        self.stream.flush()

    def clear(self) -> None:
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


def cmd_explore(args) -> int:
    from choreo.exploration import explore_file

    if args.runs < 1:
        raise UsageError(f"--runs must be at least 1, not {args.runs}")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, not {args.workers}")
    if args.max_steps is not None and args.max_steps < 1:
        raise UsageError(f"--max-steps must be at least 1, not {args.max_steps}")
    detectors = detectors_of(args)
    progress = _Progress(sys.stderr) if sys.stderr.isatty() else None
    counters = tuple(dict.fromkeys((*COUNTERS, *args.counter)))
    try:  # a worker killed from outside, out of memory: WorkerDied, exit 1, no traceback
        result = explore_file(args.choreo, args.runs, name=args.name, seed=args.seed,
                              args=args.arg, detectors=detectors, schedule=args.schedule,
                              max_steps=args.max_steps, counters=counters,
                              workers=args.workers, progress=progress)
    finally:  # before any message: the progress line is wiped first
        if progress is not None:
            progress.clear()
    if args.format == "json":
        print(json.dumps(result.to_json()))
    else:
        print(for_terminal(table(result)), end="")  # names and errors may come from user code
    return EXIT_OK


def table(result) -> str:
    """The text form: decisions, anomalies, runs by status, work, time."""
    runs = result.runs
    lines = [f"{runs:,} runs of seeds {result.seed}..{result.seed + runs - 1}, schedule "
             f"{result.schedule}, {result.workers} worker{'s' if result.workers > 1 else ''}",
             ""]
    rows = [(label, f"{c['true']:,}", f"{c['false']:,}") for label, c in result.decisions.items()]
    lines += _columns(("decision", "true", "false"), rows or [("(none taken)", "", "")])
    lines.append("")
    if result.anomalies:
        rows = []
        for name, count in result.anomalies.items():
            first = result.first["anomalies"].get(name)
            rows.append((name, f"{count:,}", f"{100 * count / runs:.1f}%",
                         f"seed {first[0]} ({first[1]})" if first else ""))
        lines += _columns(("anomaly", "runs", "%", "first"), rows)
    else:
        lines.append("anomalies: no detectors ran")
    lines.append("")
    rows, errors = [], []
    for status, count in result.statuses.items():
        first = result.first["statuses"].get(status)
        rows.append((status, f"{count:,}", f"{100 * count / runs:.1f}%",
                     f"seed {first[0]} ({first[1]})" if first else ""))
        if first and first[2]:
            errors.append(f"  {status}, seed {first[0]}: {_short(first[2])}")
    lines += _columns(("status", "runs", "%", "first"), rows) + errors
    lines.append("")
    rows = [(name, _number(value), _number(value / runs)) for name, value in result.work.items()]
    lines += _columns(("work", "total", "per run"), rows)
    lines.append("")
    seconds = result.seconds
    rate = runs / seconds["simulate"] if seconds["simulate"] else float("inf")
    lines.append(f"simulator: {seconds['simulate']:.3f} s CPU ({rate:,.0f} runs/s), detectors: "
                 f"{seconds['detect']:.3f} s CPU, wall: {seconds['wall']:.3f} s")
    return "\n".join(lines) + "\n"


def _columns(header: tuple, rows: list[tuple]) -> list[str]:
    """Left-aligned first and last columns, right-aligned numbers between."""
    every = [header, *rows]
    widths = [max(len(row[i]) for row in every) for i in range(len(header))]
    lines = []
    for row in every:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:-1], widths[1:-1])]
        if len(row) > 1:
            cells.append(row[-1].rjust(widths[-1]) if header[-1] in ("false", "per run")
                         else row[-1])
        lines.append("  ".join(cells).rstrip())
    return lines


def _number(value) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


def _short(error: str, width: int = 300) -> str:
    """The first line of a run's error, cut if very long."""
    text = error.splitlines()[0] if error.strip() else error
    return text if len(text) <= width else text[:width - 1] + "…"


# choreo.exploration.explore's, repeated so that building the parser imports no simulator (every cpl
# command builds it); tests/test_explore.py checks they agree.
COUNTERS = ("commits", "aborts", "retries")
PARALLEL_FROM, DEFAULT_MAX_STEPS = 200, 1_000_000


def add_explore_command(commands) -> None:
    explore = add_command(
        commands, "explore", cmd_explore,
        help="run many seeded simulations; tabulate decisions and anomalies",
        description="Run N seeded simulations (seeds S..S+N-1) under adversarial schedules "
        "and tabulate the decisions taken, the runs in which each anomaly detector fired, "
        "how runs ended and the work they did. Failed runs are counted, not an error: the "
        "exit status is 0 unless the command line is wrong (2) or Ctrl-C stops it (130).")
    add_choreography(explore)
    explore.add_argument("--runs", type=int, required=True, metavar="N",
                         help="how many runs")
    add_seed(explore, "S", "the first run's seed (default 0); run k has seed S+k")
    add_inputs(explore)
    add_format(explore, "text", "json")
    add_schedule(explore, "how each run's scheduler picks events: mixed (default) takes "
                 "random, late, lifo and starve in turn by seed", mixed=True)
    explore.add_argument("--workers", type=int, metavar="N",
                         help=f"processes (default: every core from {PARALLEL_FROM} runs, "
                         f"else 1)")
    add_max_steps(explore, f"stop a run after N events, status limit (default "
                  f"{DEFAULT_MAX_STEPS:,})", DEFAULT_MAX_STEPS)
    explore.add_argument("--counter", action="append", default=[], metavar="NAME",
                         help=f"also sum this numeric result variable over the runs (always: "
                         f"{', '.join(COUNTERS)})")
    add_detect(explore, "also count the runs in which this function of the trace fired: "
               "it returns the events where your bad outcome happened (repeatable; "
               "MODULE: file.py or a dotted module)")
    explore.add_argument("--no-detectors", action="store_true",
                         help="do not run the catalog's anomaly detectors (--detect ones "
                         "still run)")
