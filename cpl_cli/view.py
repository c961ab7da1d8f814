"""``cpl render`` and ``cpl explain``: seeing a recorded run and why it decided.

Both read any trace form (document, msgpack, ``.jsonl`` stream — a cut-off
stream is drawn as far as it goes, with a warning) and load the
choreography's own predicates with ``--predicates``.  ``render`` writes its
file whole or not at all, and writes into a device or FIFO rather than over it
(``cpl_cli.outputs``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Iterator

from .arguments import add_command, add_format, add_predicates, add_trace_file
from .outputs import Output
from .traces import read_trace
from .usage import EXIT_OK, UsageError, complain, for_terminal, json_for_terminal


def _warn(text: str) -> None:
    complain(f"warning: {text}")


def _predicates(args, trace):
    """The registry the trace's guards need (its ``predicates`` field), from --predicates."""
    from .predicates import load_predicates
    needed = list(getattr(trace, "predicates", None) or ())
    return load_predicates(args.predicates, needed, args.trace)


def cmd_render(args) -> int:
    """A stream is read keeping only the drawn window (``cpl.view.render_parts``); the
    picture is written as its parts come."""
    from cpl.view import FORMATS, NoSuchEvent, format_of, missing, render_parts
    output = Output.of(args.output, "-o")  # what it is first: a directory has no format
    form = args.format or format_of(args.output)
    if form is None:
        raise UsageError(f"-o {args.output}: cannot tell the format from the suffix; give "
                         f"--format ({'|'.join(FORMATS)})")
    lacking = missing(form)
    if lacking is not None:  # before the trace is read: a big one takes a while
        raise UsageError(f"-o {args.output}: {lacking}")
    source = read_trace(args.trace, _warn)
    if args.max_rows < 0:
        raise UsageError("--max-rows: give 0 (no limit) or a positive number of rows")
    predicates = _predicates(args, source) if form == "html" else None
    try:
        output.write(drawn(lambda: render_parts(
            source, form, args.highlight, args.max_rows, predicates, args.values, args.ids)))
    except NoSuchEvent as error:
        raise UsageError(f"--highlight: {error}") from None
    return EXIT_OK


def drawn(draw) -> Iterator[bytes]:
    """The picture ``draw()`` returns (or an iterator of its parts); PNG or PDF without
    graphviz installed is a usage error (graphviz's own failures are a ``TraceError``
    already: ``cpl.view.dot.render``)."""
    from cpl.view import NeedsDot
    try:
        data = draw()
        yield from ((data,) if isinstance(data, bytes) else data)
    except NeedsDot as error:
        raise UsageError(str(error)) from None


def cmd_explain(args) -> int:
    """A stream is read keeping only its last events up to EVENT (``explain_stream``)."""
    from cpl.semantics import explain, explain_stream
    from cpl.trace import Trace
    source = read_trace(args.trace, _warn)
    predicates = _predicates(args, source)
    schema = None
    if args.guard is not None:
        schema = source.schema(predicates)
    if isinstance(source, Trace):  # an event or guard not there: ExplainError, exit 2
        found = explain(source, args.event, args.guard, predicates)
    else:
        found = explain_stream(source, args.event, args.guard, predicates, schema)
    if args.format == "json":
        print(json_for_terminal(json.dumps(found.to_json(), ensure_ascii=False)))
    else:
        sys.stdout.write(for_terminal(found.to_text()))
    return EXIT_OK


def add_view_commands(commands, drawing: bool = True) -> None:
    """``render`` and ``explain``; without ``drawing``, ``render`` has no options: they
    need ``cpl.view`` (~25 ms of start-up), which a parser built for another command
    does not (``cpl_cli.build_parser``)."""
    render = add_command(
        commands, "render", cmd_render,
        help="draw the MSC of a trace (SVG, PNG, PDF, DOT, HTML or a ShiViz log)",
        description="Draw the message sequence chart of TRACE: one column per lifeline, "
        "time downward, choices as diamonds coloured by outcome, messages in transit dashed.")
    if drawing:
        _render_options(render)

    explain = add_command(
        commands, "explain", cmd_explain,
        help="why a guard has its value at an event: every subformula, and which event "
             "supplied each value",
        description="Explain a choice's recorded guard (or GUARD, at any event): the value of "
        "every subformula and, for each @B(...) and @B.x, which event of B supplied it.")
    add_trace_file(explain)
    explain.add_argument("event", metavar="EVENT", help="the event id")
    explain.add_argument("guard", metavar="GUARD", nargs="?",
                         help="the guard to explain (default: the choice's recorded guard)")
    add_format(explain, "text", "json")
    add_predicates(explain)


def _render_options(render) -> None:
    from cpl.view import FORMATS, MAX_ROWS

    add_trace_file(render)
    render.add_argument("-o", "--output", metavar="OUT", required=True,
                        help="the file to write; its suffix gives the format ('-': "
                        "standard output, with --format)")
    render.add_argument("--format", choices=FORMATS, help="the format, if not OUT's suffix")
    render.add_argument("--highlight", metavar="EVENT", help="emphasise EVENT's causal past, "
                        "grey the rest, and ring the latest event of each lifeline it saw")
    render.add_argument("--max-rows", type=int, default=MAX_ROWS, metavar="N",
                        help=f"past N rows, fold runs of local acts, then draw only a window "
                        f"of N rows around --highlight (else the end); 0: no limit "
                        f"(default {MAX_ROWS})")
    add_values(render)
    add_ids(render)
    add_predicates(render)


SHORT_LABEL = 40  # cpl.view.layout's, not imported: building cpl run's parser stays light


def add_values(parser, prefix: str = "") -> None:
    """``--values`` / ``--no-values``: the message values on the arrows (``None``: short ones)."""
    parser.add_argument("--values", action=argparse.BooleanOptionalAction, default=None,
                        help=f"{prefix}show on each arrow the values its message carried, "
                        f"e.g. review(candidate=3), and beside each act the values it set: "
                        f"--values shows them all, --no-values none "
                        f"(default: where the label stays within {SHORT_LABEL} characters, "
                        f"long values cut with …; an act's where they fit)")


def add_ids(parser, prefix: str = "") -> None:
    """``--ids`` / ``--no-ids``: each event's id beside it (``None``: where it fits)."""
    parser.add_argument("--ids", action=argparse.BooleanOptionalAction, default=None,
                        help=f"{prefix}show beside each event its id, as cpl explain takes it "
                        f"(Committer.4): --ids on every event (where no spot is free, in "
                        f"the one that covers least), --no-ids on none (default: where one "
                        f"fits without moving anything)")


__all__ = ["add_ids", "add_values", "add_view_commands", "cmd_explain", "cmd_render", "drawn"]
