"""``cpl render`` and ``cpl explain``: seeing a recorded run and why it decided.

Both read any trace form (document, msgpack, ``.jsonl`` stream — a cut-off
stream is drawn as far as it goes, with a warning) and load the
choreography's own predicates with ``--predicates``.  ``render`` writes its
file whole or not at all: the picture goes to a temporary file beside OUT and
is renamed over it at the end.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from cpl.errors import TraceError

from .arguments import add_command, add_format, add_predicates, add_trace_file
from .usage import EXIT_OK, UsageError, complain, for_terminal, json_for_terminal


def _warn(text: str) -> None:
    complain(f"warning: {text}")


def _load(args):
    from cpl.trace import load_trace
    return load_trace(args.trace, _warn)


def _predicates(args, trace):
    """The registry the trace's guards need (its ``predicates`` field), from --predicates."""
    from .predicates import load_predicates
    needed = list(getattr(trace, "predicates", None) or ())
    return load_predicates(args.predicates, needed, args.trace)


def _event(trace, name: str | None, option: str) -> None:
    """A clear usage error for an event id the trace does not have."""
    if name is not None and name not in {e.id for e in trace.events}:
        from cpl.lang import did_you_mean
        raise UsageError(f"{option}: the trace has no event {name!r}"
                         f"{did_you_mean(name, [e.id for e in trace.events])}")


def cmd_render(args) -> int:
    from cpl.view import FORMATS, format_of, render
    form = args.format or format_of(args.output)
    if form is None:
        raise UsageError(f"-o {args.output}: cannot tell the format from the suffix; give "
                         f"--format ({'|'.join(FORMATS)})")
    trace = _load(args)
    _event(trace, args.highlight, "--highlight")
    if args.max_rows < 0:
        raise UsageError("--max-rows: give 0 (no limit) or a positive number of rows")
    predicates = _predicates(args, trace) if form == "html" else None
    data = drawn(lambda: render(trace, form, args.highlight, args.max_rows, predicates))
    write_atomically(args.output, data)
    return EXIT_OK


def drawn(draw) -> bytes:
    """Run graphviz, turning its failures into one clear line."""
    import graphviz
    try:
        return draw()
    except graphviz.ExecutableNotFound:
        raise TraceError("graphviz's 'dot' program is not installed (Debian/Ubuntu: "
                         "apt-get install graphviz; macOS: brew install graphviz)") from None
    except graphviz.CalledProcessError as error:
        detail = (error.stderr or b"").decode("utf-8", "replace").strip().splitlines()
        raise TraceError("graphviz failed to draw the trace"
                         + (f": {detail[-1]}" if detail else "")) from None


def write_atomically(path: str, data: bytes) -> None:
    """``data`` to ``path`` whole, or an error naming the path and nothing written."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".cpl-render-")
    except OSError as error:
        from cpl.trace import unwritable
        raise TraceError(f"cannot write {path}: {unwritable(path, error)}") from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # as open() would make it: mkstemp's is 0600
        os.replace(temporary, path)
    except OSError as error:
        os.unlink(temporary)
        raise TraceError(f"cannot write {path}: {error.strerror}") from None


def cmd_explain(args) -> int:
    from cpl.semantics import ExplainError, explain
    trace = _load(args)
    predicates = _predicates(args, trace)
    if args.guard is not None:  # a misspelt variable silently makes an atom constant
        from cpl import check
        for warning in check(args.guard, trace.schema(predicates)).warnings:
            _warn(warning)
    try:
        found = explain(trace, args.event, args.guard, predicates)
    except ExplainError as error:
        raise UsageError(str(error)) from None
    if args.format == "json":
        print(json_for_terminal(json.dumps(found.to_json(), ensure_ascii=False)))
    else:
        sys.stdout.write(for_terminal(found.to_text()))
    return EXIT_OK


def add_view_commands(commands) -> None:
    from cpl.view import FORMATS, MAX_ROWS

    render = add_command(
        commands, "render", cmd_render,
        help="draw the MSC of a trace (SVG, PNG, PDF, DOT, HTML or a ShiViz log)",
        description="Draw the message sequence chart of TRACE: one column per lifeline, "
        "time downward, choices as diamonds coloured by outcome, messages in transit dashed.")
    add_trace_file(render)
    render.add_argument("-o", "--output", metavar="OUT", required=True,
                        help="the file to write; its suffix gives the format")
    render.add_argument("--format", choices=FORMATS, help="the format, if not OUT's suffix")
    render.add_argument("--highlight", metavar="EVENT", help="emphasise EVENT's causal past, "
                        "grey the rest, and ring the latest event of each lifeline it saw")
    render.add_argument("--max-rows", type=int, default=MAX_ROWS, metavar="N",
                        help=f"past N rows, fold runs of local acts, then draw only a window "
                        f"of N rows around --highlight (else the end); 0: no limit "
                        f"(default {MAX_ROWS})")
    add_predicates(render)

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


__all__ = ["add_view_commands", "cmd_explain", "cmd_render", "drawn", "write_atomically"]
