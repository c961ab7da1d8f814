"""Loading a CHOREO.py: a module that defines Choreography objects at module level.

The file is imported from its path (its directory is on ``sys.path`` while
it loads, so it may import its neighbours).  Anything that goes wrong while
it runs — a syntax error, an exception, a misused DSL call — becomes one
:class:`ChoreographyError` at the user's file and line, never a traceback.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import traceback

from .dsl import Choreography
from .errors import ChoreographyError, LocatedError, Where, indent


def load(path: str) -> dict[str, Choreography]:
    """Every module-level Choreography of the file, by its name."""
    module = import_file(path)
    found: dict[str, Choreography] = {}
    for value in vars(module).values():
        if isinstance(value, Choreography) and value.name not in found:
            found[value.name] = value
    for choreography in found.values():
        choreography.body  # noqa: B018 (raises, at its file and line, for a block left open)
    if not found:
        raise ChoreographyError("the file defines no Choreography at module level",
                                Where(path, 0), "  fix: assign one to a module-level name, "
                                "e.g. `review = Choreography(\"review\")`")
    return found


def pick(choreographies: dict[str, Choreography], name: str | None, path: str) -> Choreography:
    """The one choreography ``--name`` names, or the only one not included in another."""
    if name is not None:
        if name in choreographies:
            return choreographies[name]
        raise ChoreographyError(f"no choreography named {name!r}", Where(path, 0),
                                f"  hint: the file defines {', '.join(choreographies)}")
    main = [c for c in choreographies.values() if not c.included_in] or \
        list(choreographies.values())
    if len(main) > 1:
        raise ChoreographyError("the file defines several choreographies: "
                                f"{', '.join(c.name for c in main)}", Where(path, 0),
                                "  fix: pick one with --name NAME")
    return main[0]


def load_one(path: str, name: str | None = None) -> Choreography:
    return pick(load(path), name, path)


def import_file(path: str, what: str = "choreography file",
                fix: str = "give the path of a Python file that defines a Choreography"):
    """Import the file as a module, with every failure a ``ChoreographyError`` at its line.
    ``what`` and ``fix`` word the errors (``cpl eval --predicates`` loads a plain module)."""
    if not os.path.isfile(path):
        problem = (f"a directory, not a {what}" if os.path.isdir(path) else
                   f"not a regular file, so not a {what}" if os.path.exists(path) else
                   f"no such {what}")
        raise ChoreographyError(problem, Where(path, 0), f"  fix: {fix}")
    return _import(path, what)


def _import(path: str, what: str):
    absolute = os.path.abspath(path)
    module_name = "_cpl_choreo_" + hashlib.sha1(absolute.encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(module_name, absolute)
    if spec is None or spec.loader is None:
        raise ChoreographyError("cannot load this file as Python", Where(path, 0))
    module = importlib.util.module_from_spec(spec)
    directory = os.path.dirname(absolute)
    sys.path.insert(0, directory)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except LocatedError:  # a ChoreographyError, or a RunFailure: at its own line already
        sys.modules.pop(module_name, None)
        raise
    except SyntaxError as error:
        sys.modules.pop(module_name, None)
        raise _syntax(error, path) from None
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - anything the user's module raises
        sys.modules.pop(module_name, None)
        raise _exception(error, path, absolute, what) from None
    finally:
        if sys.path and sys.path[0] == directory:
            sys.path.pop(0)
    return module


def _syntax(error: SyntaxError, path: str) -> ChoreographyError:
    where = Where(path if error.filename in (None, os.path.abspath(path)) else error.filename,
                  error.lineno or 0)
    detail = ""
    if error.text:
        text = error.text.rstrip("\n")
        detail = f"  {text}\n  {' ' * max(0, (error.offset or 1) - 1)}^"
    return ChoreographyError(f"syntax error: {error.msg}", where, detail, "load")


def _exception(error: BaseException, path: str, absolute: str, what: str) -> ChoreographyError:
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if os.path.abspath(f.filename) == absolute]
    frame = mine[-1] if mine else (frames[-1] if frames else None)
    where = Where(path, frame.lineno) if mine else \
        Where(frame.filename, frame.lineno) if frame else Where(path, 0)
    kind = "the file called sys.exit" if isinstance(error, SystemExit) else \
        f"{type(error).__name__}: {error}"
    detail = [f"  {frame.line}"] if frame is not None and frame.line else []
    inner = frames[-1] if frames else None
    if mine and inner is not None and inner is not mine[-1]:
        detail.append(f"  (raised in {inner.filename}:{inner.lineno})")
    detail.append(f"  while loading the {what}")
    return ChoreographyError(kind, where, indent("\n".join(d.strip() for d in detail)), "load")
