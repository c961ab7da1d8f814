"""The choreography's own predicates, for the tools that read a trace offline.

A guard may call application predicates that the choreography file registers
with ``@predicate`` as it is imported; a trace names them in its header
(``"predicates"``) but cannot carry the code.  ``cpl eval`` (and ``explain``,
``render``) take ``--predicates FILE`` to import them, and a predicate that is
still missing stops the command with one line naming it, before any event is
evaluated.  Importing the file runs it, as ``cpl run`` does.
"""

from __future__ import annotations

from typing import Iterable

from cpl.lang import did_you_mean, DEFAULT, Registry

from .usage import UsageError

_SHOWN = 5  # missing names listed in one message; a hostile trace may name thousands


def load_predicates(path: str | None, needed: Iterable[str], where: str) -> Registry:
    """Import ``path`` (if given) and return the registry its ``@predicate`` calls fill.

    ``needed``: the predicates the trace's ``predicates`` field and the guards to
    evaluate call; each must be registered, else a ``UsageError`` (exit 2) names it.
    ``where`` says who needs them in that message (the trace's path, say).  A file
    that cannot be imported is a ``ChoreographyError`` at its line, as for ``cpl run``.
    """
    if path is not None:
        from choreo.authoring import import_file
        import_file(path, "predicates file", "give a choreography file or a Python module "
                    "that registers the predicates with @predicate")
    registry = DEFAULT
    missing = [name for name in dict.fromkeys(needed) if registry.get(name) is None]
    if missing:
        raise _missing(missing, path, where, registry)
    return registry


def _missing(missing: list[str], path: str | None, where: str, registry: Registry) -> UsageError:
    names = ", ".join(repr(name) for name in missing[:_SHOWN])
    if len(missing) > _SHOWN:
        names += f" and {len(missing) - _SHOWN} more"
    plural = "s" if len(missing) > 1 else ""
    if path is None:
        return UsageError(f"{where} uses the predicate{plural} {names}, which cpl does not know "
                          f"(only the built-ins); pass --predicates CHOREO.py, the choreography "
                          f"file or a module that registers {'them' if plural else 'it'} with "
                          f"@predicate")
    close = did_you_mean(missing[0], registry.names()) if len(missing) == 1 else ""
    return UsageError(f"{where} uses the predicate{plural} {names}, which {path} does not "
                      f"register{close}; pass --predicates CHOREO.py, the file whose "
                      f"@predicate functions the guards call")
