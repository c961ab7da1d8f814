"""``cpl eval``: a guard at every event of a trace, or every recorded decision re-checked.

A document is loaded and checked whole; a ``.jsonl`` stream is checked and
evaluated one event at a time, its output held in a spool until the last
line has passed the check: nothing is printed from a malformed trace
(trace.md).  Without a guard, each recorded decision's guard is evaluated at
its event and compared with the recorded outcome: exit 1 if any differs.
"""

from __future__ import annotations

import json
import sys
import tempfile
from itertools import islice

import cpl
from cpl.errors import EvaluationError, TraceError

from .arguments import (
    TRACE_FILES, add_command, add_format, add_lifeline, add_predicates, add_trace_file,
    check_lifeline,
)
from .predicates import load_predicates
from .usage import EXIT_FAILED, EXIT_OK, complain, for_terminal


def cmd_eval(args) -> int:
    from cpl.monitor import evaluations
    from cpl.trace import Trace, open_trace
    from .traces import read_trace

    def warn(text: str) -> None:
        complain(f"warning: {text}")

    stepped = args.guard is not None and args.engine == "monitor" and args.format == "jsonl"
    if stepped:
        notes: list = []  # the trace's warnings, told only if this pass is the one that counts
        source = read_trace(args.trace, notes.append, pending=True)
        if not isinstance(source, Trace):
            if _eval_stepped(args, source, notes, warn):
                return EXIT_OK
            source = open_trace(args.trace, warn)  # from the start, checked before evaluated
    else:
        source = read_trace(args.trace, warn)
    streamed = not isinstance(source, Trace)
    check_lifeline(args.lifeline, source.lifelines, "the trace")
    if args.guard is None:
        return _recheck(args, source)
    # Only the guard's predicates are called: one nobody registers is the guard's error,
    # with its caret (the trace's other predicates need not be loaded).
    predicates = load_predicates(args.predicates, (), args.trace)
    schema = source.schema(predicates)
    try:
        checked = cpl.check(args.guard, schema)
    except cpl.ResolveError as error:
        if args.predicates is None and error.message.startswith("unknown predicate"):
            error.hint = (f"{error.hint}; a choreography's own predicates load with "
                          f"--predicates CHOREO.py")
        raise
    try:
        if args.engine == "reference":
            from cpl.semantics import evaluate_all  # ~8 ms of imports the monitors never need

            trace = source.trace() if streamed else source
            results = evaluate_all(trace, checked.formula, args.lifeline, predicates)
            streamed = False
        else:
            results = evaluations(source, args.guard, args.lifeline, schema=schema)
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
    except EvaluationError as error:  # a predicate raised: the user's code, not ours
        raise TraceError(f"cannot evaluate the guard: {error}", args.trace) from None
    return EXIT_OK


def _eval_stepped(args, source, notes: list, warn) -> bool:
    """``--format jsonl`` of a guard by the monitor, checking and evaluating in one pass
    (``stepped`` of a ``Pending`` document or a ``JsonLines`` stream): no ``Event`` is
    built.  False, with nothing printed, if anything is not plain (a guard that calls
    predicates, a document without ``vars``, a problem anywhere, the fast path declining):
    the caller then takes the trace from the start, checked before it is evaluated, and
    says what is wrong."""
    from cpl.lang import named_predicates, parse
    from cpl.monitor import value_step

    spool = tempfile.SpooledTemporaryFile(8 << 20, "w+", encoding="utf-8")
    with spool:
        try:
            predicates = load_predicates(None, (), args.trace)
            if (args.predicates is not None  # user code: called only on a checked trace
                    or (predicates.names() and named_predicates(parse(args.guard)))
                    or (args.lifeline is not None and args.lifeline not in source.lifelines)):
                return False
            schema = source.schema(predicates)
            if schema is None:  # a document without "vars": its schema needs its events
                return False
            step, values = value_step(source, args.guard, args.lifeline, schema=schema)
            lines = _jsonl_lines(source.lifelines)
            for _ in source.stepped(step):  # a stream's batches: kept until all have passed
                spool.write(lines(values))
                values.clear()
        except Exception:  # Declined, or anything else: the exact path says what it is
            return False
        for warning in notes:
            warn(warning)
        spool.seek(0)
        for chunk in iter(lambda: spool.read(1 << 16), ""):
            sys.stdout.write(chunk)
    for start in range(0, len(values), 1 << 12):  # the rest (a document's every line)
        sys.stdout.write(lines(values[start:start + (1 << 12)]))
    return True


def _jsonl_lines(lifelines):
    """(event id, lifeline, value) rows -> their ``--format jsonl`` lines, as one str (see
    ``_eval_jsonl``)."""
    from json.encoder import encode_basestring_ascii as quoted  # json.dumps of a str, in C

    tails = {name: tuple(f', "lifeline": {json.dumps(name)}, "value": {value}}}\n'
                         for value in ("false", "true")) for name in lifelines}
    return lambda rows: "".join(['{"event": ' + quoted(event_id) + tails[lifeline][value]
                                 for event_id, lifeline, value in rows])


def _eval_jsonl(results, lifelines, out) -> None:
    """One JSON object per evaluated event.  The lines differ only in the event id, its
    lifeline and the value, so only the id is encoded per line and the rest is one of two
    prepared tails per lifeline (json.dumps of a whole dict per line cost more than
    monitoring the event: bench/eval_trace.py); the bytes are json.dumps's."""
    from json.encoder import encode_basestring_ascii as quoted  # json.dumps of a str, in C

    tails = {name: tuple(f', "lifeline": {json.dumps(name)}, "value": {value}}}\n'
                         for value in ("false", "true")) for name in lifelines}
    lines = ('{"event": ' + quoted(event.id) + tails[event.lifeline][value]
             for event, value in results)
    for batch in iter(lambda: list(islice(lines, 4096)), []):
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
    return name if name.isprintable() else for_terminal(json.dumps(name, ensure_ascii=False))


def _recheck(args, source) -> int:
    """Every recorded decision: its guard's value now against the recorded outcome.  The
    predicates needed are the trace's ``predicates`` and those its recorded guards call."""
    from cpl.monitor import decisions, recorded_guards
    from cpl.semantics import recheck
    from cpl.trace import Trace
    from cpl.lang import parse, named_predicates

    if args.engine == "reference":
        source = source if isinstance(source, Trace) else source.trace()
    guards = recorded_guards(source)
    called = (name for _, text in guards for name in named_predicates(parse(text)))
    predicates = load_predicates(args.predicates, (*(source.predicates or ()), *called),
                                 args.trace)
    rows, differ = [], 0
    try:
        checks = (recheck(source, predicates) if args.engine == "reference" else
                  decisions(source, schema=source.schema(predicates), guards=guards))
        for event, recorded, computed in checks:  # held until the whole trace has checked
            if args.lifeline is None or event.lifeline == args.lifeline:
                rows.append((event.id, event.lifeline, event.label or event.guard, recorded,
                             computed))
                differ += recorded != computed
    except EvaluationError as error:  # a predicate raised: the user's code, not ours
        raise TraceError(f"cannot re-check a decision: {error}", args.trace) from None
    out = sys.stdout
    for ident, lifeline, label, recorded, computed in rows:
        if args.format == "jsonl":
            out.write(json.dumps({"event": ident, "lifeline": lifeline, "recorded": recorded,
                                  "value": computed}) + "\n")
        else:
            verdict = "agrees" if recorded == computed else "DIFFERS"
            out.write(f"{_shown(ident)}  {_shown(lifeline)}  {_shown(label)}: recorded "
                      f"{str(recorded).lower()}, computed {str(computed).lower()}  {verdict}\n")
    if args.format == "text":
        print(f"{len(rows)} decision{'' if len(rows) == 1 else 's'} re-checked: "
              + (f"{differ} differ" if differ else "all agree"))
    return EXIT_FAILED if differ else EXIT_OK


def add_eval_command(commands) -> None:
    evaluate = add_command(
        commands, "eval", cmd_eval,
        help="evaluate a guard at every event of a trace, or re-check its decisions",
        description="Evaluate GUARD at every event of TRACE (a JSON or msgpack document, or a "
        ".jsonl stream, read one event at a time), in trace order. Without GUARD, re-check "
        "every recorded decision: its guard's value at its event against the recorded "
        "outcome (exit 1 if any differs).")
    add_trace_file(evaluate, f"{TRACE_FILES} (sniffed when the suffix is another)")
    evaluate.add_argument("guard", metavar="GUARD", nargs="?")
    add_lifeline(evaluate, "only the events of this lifeline")
    add_format(evaluate, "text", "jsonl")
    evaluate.add_argument("--engine", choices=("monitor", "reference"), default="monitor",
                          help="the online monitor (default) or the literal reference evaluator")
    add_predicates(evaluate)
