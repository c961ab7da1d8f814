"""``cpl verify``: every MSC of a choreography within the bounds, run once each.

The work is :func:`choreo.exploration.verify`; this module checks the options
(numbers, the ``--counterexample`` and ``--traces`` destinations) before any
run, finds the detectors as ``cpl explore`` does (``cpl_cli.explore.detectors_of``)
and prints the report: what was covered, what fired and where, and the command
that replays it.  The exit status is the report's (cli.md): 0 complete and
nothing found, 1 a detector fired or a run failed, 3 bounded with nothing
found; 2 a usage error, 130 Ctrl-C.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shlex
import signal
import sys

from .arguments import (add_choreography, add_command, add_detect, add_format, add_inputs,
                        add_max_steps)
from .explore import DEFAULT_MAX_STEPS, detectors_of
from cpl.errors import for_terminal

from .usage import UsageError

MOST_WORKERS = 1024  # a process each: more is a typing error, not a machine


def cmd_verify(args) -> int:
    from choreo.exploration import Source, verify

    _check_numbers(args)
    _check_outputs(args)
    detectors = detectors_of(args)
    seen: list[str] = []  # the path of each MSC run: a replay's, to say which it ran
    # JSON on standard output is the report alone: what user code prints goes to stderr
    with _prints_to_stderr() if args.format == "json" else contextlib.nullcontext():
        source = Source(args.choreo, args.name)
        plan = source.plan()
        plan.inputs(args.arg, None)  # a bad --arg said before --traces makes a folder
        if args.traces is not None:
            _make_folder(args.traces)
        # SIGTERM stops the search as Ctrl-C does (cli.md: 130), its workers with it
        was = signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            report = verify(plan, args=args.arg, detectors=detectors,
                            max_steps=args.max_steps, max_runs=args.max_runs,
                            time_limit=args.time_limit, workers=args.workers,
                            traces=args.traces, counterexample=args.counterexample,
                            sample_domains=args.sample_domains, replay=args.replay,
                            each=(lambda trace: seen.append(trace.meta.get("path", "")))
                            if args.replay is not None else None, source=source)
        finally:
            signal.signal(signal.SIGTERM, was)
    if args.format == "json":
        print(json.dumps(report.to_json()))
    else:  # names, labels and errors may come from user code
        print(for_terminal(text(report, args, seen[0] if seen else None)), end="")
    return report.exit_code


@contextlib.contextmanager
def _prints_to_stderr():
    """Standard output is standard error meanwhile, for this process (``print``) and for
    the workers it starts (file descriptor 1), so a choreography's prints keep out of the
    JSON report."""
    if sys.stdout is not None:  # None: standard output was closed
        sys.stdout.flush()
    try:
        saved: int | None = os.dup(1)
        os.dup2(2, 1)
    except OSError:  # a closed descriptor: this process's prints alone are turned
        saved = None
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def _check_numbers(args) -> None:
    """Bounds that are numbers of what they count, before any work."""
    for option, value in (("--max-steps", args.max_steps), ("--max-runs", args.max_runs),
                          ("--workers", args.workers)):
        if value is not None and value < 1:
            raise UsageError(f"{option} must be at least 1, not {value}")
    if args.workers > MOST_WORKERS:
        raise UsageError(f"--workers {args.workers}: at most {MOST_WORKERS} processes")
    limit = args.time_limit
    if limit is not None and not (limit > 0 and math.isfinite(limit)):
        raise UsageError(f"--time-limit must be a number of seconds above 0, not {limit:g}")


def _check_outputs(args) -> None:
    """``--counterexample`` must be a trace file we can write (``cpl_cli.outputs``, as
    ``cpl run --trace``), not standard output, which carries the report; ``--traces``
    a folder, or one that can be made (below)."""
    from .outputs import Output, trace_suffix
    if args.counterexample is not None:
        trace_suffix(args.counterexample, "--counterexample")
        output = Output.of(args.counterexample, "--counterexample")
        if output.to_stdout:
            raise UsageError(f"--counterexample {args.counterexample}: standard output "
                             f"carries the report; name a file")
    if args.traces is not None:
        _check_folder(args.traces)


def _check_folder(given: str) -> None:
    """A folder that exists, or whose nearest existing ancestor is one: said before the
    choreography is loaded (:func:`_make_folder` then makes it)."""
    if not given:
        raise UsageError("--traces '': name a directory")
    folder = os.path.abspath(given)
    while not os.path.lexists(folder):
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        where = "it" if folder == os.path.abspath(given) else repr(folder)
        raise UsageError(f"--traces {given}: {where} is not a directory")


def _make_folder(given: str) -> None:
    """``--traces DIR`` made now, and a file tried in it: a folder that cannot hold the
    traces is a usage error before any run, not a failure after the first."""
    import tempfile
    try:
        os.makedirs(given, exist_ok=True)
        with tempfile.TemporaryFile(dir=given):
            pass
    except OSError as error:
        raise UsageError(f"--traces {given}: cannot write into it: "
                         f"{error.strerror or error}") from None


def text(report, args, replayed: str | None = None) -> str:
    """The text form: the verdict, what was run, what fired, and how to see it again."""
    command = _command(report, args)
    lines = [f"{command}: {_verdict(report, args.replay, replayed)}"]
    if report.inputs:
        lines.append("  inputs: " + ", ".join(f"{key}={json.dumps(value, default=repr)}"
                                              for key, value in report.inputs.items()))
    lines.append(f"  {_count(report.mscs, 'MSC')} in {_count(report.runs, 'run')}" + (
        f" ({report.blocked:,} abandoned: their MSC had been run)"
        if report.blocked else ""))
    if report.alike:
        lines += _labelled("alike", [report.alike, "so each MSC run is remembered, to run it once"
                                     + (", in one worker" if args.workers > 1 else "")])
    lines.append("  statuses: " + (", ".join(f"{status} {count:,}" for status, count
                                             in report.statuses.items()) or "no MSC run"))
    for status, (path, error) in report.failures.items():
        lines.append(f"    {status} first at path {path or '(root)'}: {_short(error)}")
    width = max(map(len, report.decisions), default=0)
    lines += _labelled("decisions", [f"{label.ljust(width)}  true {c['true']:,}, false "
                                     f"{c['false']:,}" for label, c in report.decisions.items()]
                       or ["none taken"])
    lines += _labelled("detectors", _detectors(report, args))
    work = report.work
    lines.append(f"  work: {_count(work['events'], 'event')}, "
                 f"{_count(work['messages'], 'message')}, "
                 f"{_count(work['decisions'], 'decision')}")
    seconds = report.seconds
    lines.append(f"  time: {seconds['cpu']:.2f} s CPU, {seconds['wall']:.2f} s wall, "
                 f"{_count(report.workers, 'worker')}")
    lines += _next(report, args, command)
    return "\n".join(lines) + "\n"


def _verdict(report, replay: str | None, replayed: str | None) -> str:
    if replay is not None:
        said = f"replay of the MSC at path {replayed or '(root)'}"
        if replayed is not None and replayed != replay:
            said += f", the first below {replay or '(root)'}"
        if report.bound not in (None, "max-runs"):
            said += f"; bounded ({report.bound}): {report.why}"
        return said
    if report.complete:
        return "complete, every MSC within the bounds"
    return f"bounded ({report.bound}): {report.why}"


def _detectors(report, args) -> list:
    if not report.detectors:
        return ["none finished: each raised (see statuses)" if report.statuses.get("error")
                else "none ran (--no-detectors)"]
    said: list = [f"{name}: fired in {count:,} of {_count(report.mscs, 'MSC')}, first in MSC "
            f"{report.first[name].index:,} (path {report.first[name].path or '(root)'})"
            for name, count in report.fired.items()]
    quiet = [name for name, count in report.detectors.items() if not count]
    if quiet:
        said.append(("nothing fired" if not said else "nothing else fired", quiet))
    return said


def _next(report, args, command: str) -> list[str]:
    """Where the counterexample is and the commands that show it again."""
    lines = []
    given = args.counterexample
    stream = report.counterexample and not os.path.isfile(report.counterexample)
    if stream:  # a device or FIFO: nothing there to draw or read again
        lines.append(f"  counterexample: written to {shlex.quote(report.counterexample)}")
    elif report.counterexample:
        shown = shlex.quote(report.counterexample)
        drawing = shlex.quote(os.path.splitext(report.counterexample)[0] + ".svg")
        lines.append(f"  counterexample: {shown} (draw it: cpl render {shown} -o {drawing}; "
                     f"its events: cpl detect {shown}{_detect_options(args)})")
    elif given is not None and not report.fired:
        lines.append(f"  counterexample: nothing fired; {given} not written")
    if report.first and not (args.replay is not None and report.counterexample):
        earliest = min(report.first.values(), key=lambda c: c.index)
        out = shlex.quote(given) if given is not None and not stream else "counterexample.jsonl"
        lines.append(f"  replay: {command} --replay {earliest.path or _ROOT} "
                     f"--counterexample {out}")
    for status, (path, _) in report.failures.items():
        lines.append(f"  replay the {status}: {command} --replay {path or _ROOT} "
                     f"--traces {shlex.quote(args.traces or 'traces')}")
    return lines


_ROOT = "''"  # the empty path, as a shell word


def _command(report, args) -> str:
    """``cpl verify`` with the options that make the same MSCs and findings."""
    words = ["cpl", "verify", args.choreo, "--name", report.name]
    for arg in args.arg:
        words += ["--arg", arg]
    if args.max_steps != DEFAULT_MAX_STEPS:
        words += ["--max-steps", str(args.max_steps)]
    if args.sample_domains:
        words.append("--sample-domains")
    return " ".join(shlex.quote(word) for word in words) + _detect_options(args)


def _detect_options(args) -> str:
    words = ["--no-detectors"] if args.no_detectors else []
    for spec in args.detect:
        words += ["--detect", spec]
    return "".join(" " + shlex.quote(word) for word in words)


def _labelled(title: str, items: list) -> list[str]:
    """``title: first`` then the others aligned under it; a list of names (a tuple: its
    text and the names) wrapped at 80 columns."""
    head = f"  {title}: "
    lines: list[str] = []
    for item in items:
        start = head if not lines else " " * len(head)
        if isinstance(item, tuple):
            import textwrap
            lines += textwrap.wrap(item[0] + " (" + ", ".join(item[1]) + ")", 80,
                                   initial_indent=start, subsequent_indent=" " * (len(head) + 2),
                                   break_long_words=False, break_on_hyphens=False)
        else:
            lines.append(start + item)
    return lines


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _short(error: str | None, width: int = 300) -> str:
    """The first line of a run's error, cut if very long."""
    text = (error or "").strip().splitlines()[0] if (error or "").strip() else "(no error)"
    return text if len(text) <= width else text[:width - 1] + "…"


def add_verify_command(commands) -> None:
    verify = add_command(
        commands, "verify", cmd_verify,
        help="run every distinct MSC of a choreography once; report what fired",
        description="Run every distinct message sequence chart the choreography can produce "
        "within the bounds exactly once (delivery orders, local thread orders, every outcome "
        "of every action's draws), run the anomaly detectors on each, and report whether "
        "the search was complete. Exit status: 0 complete and nothing fired; 1 a detector "
        "fired or a run failed or deadlocked; 3 bounded with nothing found; 2 a usage "
        "error; 130 Ctrl-C.")
    add_choreography(verify)
    add_inputs(verify)
    add_detect(verify, "also check every MSC with this function of the trace: it returns "
               "the events where your bad outcome happened (repeatable; MODULE: file.py or "
               "a dotted module)")
    verify.add_argument("--no-detectors", action="store_true",
                        help="do not run the catalog's anomaly detectors (--detect ones "
                        "still run)")
    add_max_steps(verify, f"a run stops after N events (status limit; the report is then "
                  f"bounded; default {DEFAULT_MAX_STEPS:,})", DEFAULT_MAX_STEPS)
    verify.add_argument("--max-runs", type=int, metavar="N",
                        help="stop after N MSCs (the report is then bounded)")
    verify.add_argument("--time-limit", type=float, metavar="S",
                        help="stop after S seconds (the report is then bounded)")
    verify.add_argument("--workers", type=int, default=1, metavar="N",
                        help="processes that split the search (default 1); the counts do "
                        "not depend on it")
    add_format(verify, "text", "json")
    verify.add_argument("--traces", metavar="DIR",
                        help="write every MSC's trace into DIR, named by its path")
    verify.add_argument("--counterexample", metavar="OUT.jsonl",
                        help="write the first MSC in which a detector fired to OUT.jsonl")
    verify.add_argument("--replay", metavar="PATH",
                        help="run only the MSC at PATH (as the report prints it)")
    verify.add_argument("--sample-domains", action="store_true",
                        help="sample a draw among more outcomes than are enumerated instead "
                        "of refusing it (the report then says sampled)")
