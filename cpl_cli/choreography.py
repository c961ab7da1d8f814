"""``cpl validate`` and ``cpl show``: a choreography checked, and its projection shown.

Both load the choreography file (running it, as ``cpl run`` does) and report
its errors at their lines, as ``choreo.ChoreographyError`` (exit 2).
"""

from __future__ import annotations

from .arguments import add_choreography, add_command, add_lifeline, check_lifeline
from .usage import EXIT_OK, for_terminal


def _choreography(args):
    from choreo import load_one
    return load_one(args.choreo, args.name)


def cmd_validate(args) -> int:
    from choreo import ChoreographyError
    from choreo.analysis import validate
    report = validate(_choreography(args))
    if not report.ok:
        raise ChoreographyError.many(report.errors)
    print(report.summary())
    return EXIT_OK


def cmd_show(args) -> int:
    from choreo import ChoreographyError
    from choreo.analysis import show
    from choreo.analysis import validate
    choreography = _choreography(args)
    check_lifeline(args.lifeline, choreography.lifeline_names, "the choreography")
    report = validate(choreography)
    if report.projection is not None:  # shown even when invalid: it helps to see why
        print(for_terminal(show(report.projection, args.lifeline, choreography.results)), end="")
    if not report.ok:
        raise ChoreographyError.many(report.errors)
    return EXIT_OK


def add_choreography_commands(commands) -> None:
    for name, run, text in (
            ("validate", cmd_validate, "check a choreography and list its inputs"),
            ("show", cmd_show, "print the projected local program of each lifeline")):
        command = add_command(commands, name, run, help=text,
                              description=text[0].upper() + text[1:] + ".")
        add_choreography(command, "a Python file defining Choreography objects at module level")
        if name == "show":
            add_lifeline(command, "only this lifeline")
