"""``cpl detect``: the detectors run on one trace, naming the events where each fired.

The catalog's detectors (``cpl.anomalies.detect``, on the records the trace
yields under its convention) and the user's own (``--detect MODULE:FUNCTION``,
``choreo.exploration.user_detectors``).  A catalog witness names operation records; each
is shown at the event that committed its anomalous operation, with the
witness's records described.  Like a linter, the exit status says whether
anything fired: 0 nothing, 1 something (or the trace could not be read, or a
detector of yours raised: said on standard error), 2 a usage error.
"""

from __future__ import annotations

import json

from .arguments import TRACE_FILES, add_command, add_detect, add_format, add_trace_file
from .explore import yours
from .usage import EXIT_FAILED, EXIT_OK, UsageError, complain, for_terminal, json_for_terminal

# The field of each catalog witness that names the operation that went wrong (the others
# name the operations it went wrong against).
_WHERE = {"Stale": "i", "Phantom": "i", "Cascade": "j", "Residue": "j", "Reordering": "i",
          "LostUpdate": "m"}


def cmd_detect(args) -> int:
    from .traces import read_trace
    if args.no_detectors and not args.detect:
        raise UsageError("--no-detectors leaves nothing to run: add --detect MODULE:FUNCTION")
    # a spec that does not load: said before the trace is read; names as cpl explore gives
    user = yours(args.detect, () if args.no_detectors else _catalog_names(),
                 args.detector_timeout)
    trace = read_trace(args.trace, lambda text: complain(f"warning: {text}"), whole=True)
    found: dict[str, list[dict]] = {}
    failed = False
    if not args.no_detectors:
        found.update(_catalog(trace))
    results, _ = user.run(trace, args.trace) if user else ({}, 0.0)
    for name, result in results.items():
        if isinstance(result, RuntimeError):  # its message names the detector; the others go on
            complain(f"cpl detect: {result}")
            failed = True
        else:
            found[name] = [_row(event) for event in result]
    if args.format == "json":
        print(json_for_terminal(json.dumps(found)))
    else:
        print(for_terminal(_text(found)), end="")
    fired = any(found.values())
    return EXIT_FAILED if fired or failed else EXIT_OK


def _catalog_names() -> tuple[str, ...]:
    from cpl.anomalies import DETECTORS
    return DETECTORS


def _catalog(trace) -> dict[str, list[dict]]:
    """Each catalog detector's witnesses, each at the event of its anomalous operation."""
    import attrs
    from cpl.anomalies import CATALOG, extract
    history = extract(trace)
    found = {}
    for name, detector in CATALOG.items():
        rows = []
        for witness in detector(history.records):
            fields = attrs.asdict(witness)
            where = fields.get(_WHERE.get(type(witness).__name__, ""))
            if where is None:  # a witness of another shape: its first record
                where = next((v for v in fields.values() if isinstance(v, int)), None)
            row = _row(trace.event(history.events[where - 1])) if where else {}
            described = ", ".join(f"{key} {history.describe(value)}" if isinstance(value, int)
                                  else f"{key} {value}" for key, value in fields.items())
            row["witness"] = f"{type(witness).__name__}: {described}"
            rows.append(row)
        found[name] = rows
    return found


def _row(event) -> dict:
    return {"event": event.id, "lifeline": event.lifeline, "kind": event.kind,
            "label": event.label}


def _text(found: dict[str, list[dict]]) -> str:
    lines, quiet = [], []
    for name, rows in found.items():
        if not rows:
            quiet.append(name)
            continue
        lines.append(f"{name}: fired at {len(rows)} event{'s' if len(rows) > 1 else ''}")
        for row in rows:
            label = f'"{row["label"]}"' if row.get("label") else f'({row.get("kind", "?")})'
            line = f"  {row.get('event', '?')}  {row.get('lifeline', '?')}  {label}"
            lines.append(line + (f"\n    {row['witness']}" if row.get("witness") else ""))
    if quiet:
        lines.append(f"did not fire: {', '.join(quiet)}")
    if not found:
        lines.append("no detector gave an answer")  # each one that ran failed: said on stderr
    return "\n".join(lines) + "\n"


def add_detect_command(commands) -> None:
    detect = add_command(
        commands, "detect", cmd_detect,
        help="run the anomaly detectors (and yours) on a trace; name the events",
        description="Run the catalog's anomaly detectors and your own (--detect) on one "
        "trace and name the events where each fired. Exit status 0 if none fired, 1 if "
        "one did (or the trace cannot be read, or a detector of yours raised), 2 for a "
        "usage error.")
    add_trace_file(detect, TRACE_FILES)
    add_detect(detect, "a detector of your own: a function of the trace that returns the "
               "events (or event ids) where your bad outcome happened (repeatable; MODULE: "
               "file.py or a dotted module)")
    add_format(detect, "text", "json")
    detect.add_argument("--no-detectors", action="store_true",
                        help="run only the --detect ones, not the catalog's")
