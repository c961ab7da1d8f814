"""Package faces whose names are imported when first used, not when the package is.

Why: a face that imports every module of its package makes every ``cpl`` command
pay, at start-up, for the modules it never uses (compiled from source where no
``.pyc`` is kept: ``cpl eval`` paid for the whole ``choreo`` package to name one
exception).  ``face(__name__, {".module": "name other:alias"})`` in a package's
``__init__`` gives it the same names, each imported from its module on first use.

A name that is also a submodule's (``choreo.authoring.load``, the function, in module
``choreo.authoring.load``) stays the exported object when the submodule is imported later,
as an eager ``from .load import load`` left it: the face's class keeps the import
system from rebinding it to the module.

Static tools (mypy, pyright, editors) do not run the table: a face also imports its names
under ``if TYPE_CHECKING:`` (``TYPE_CHECKING = False`` set in the face, as importing
``typing`` would cost start-up) and lists them in ``__all__``.  Three spellings, one list:
``tests/test_exports.py`` fails when they differ, and runs mypy to see every name.
"""

from __future__ import annotations

import sys
import types


class _Face(types.ModuleType):
    """A package whose exported names win over its submodules of the same name."""

    def __setattr__(self, name, value):
        source = self.__dict__.get("_lazy_names", {}).get(name)
        if (source is not None and isinstance(value, types.ModuleType)
                and value.__name__ == f"{self.__name__}.{name}"):
            value = getattr(value, source[1])  # the import system binding the submodule
        super().__setattr__(name, value)


def _imported(name: str) -> types.ModuleType:
    """Module ``name``, imported by the interpreter's own import (``-X importtime`` shows
    it, which it does not for ``importlib.import_module``)."""
    __import__(name)
    return sys.modules[name]


def _submodule(package: str, name: str):
    missing = AttributeError(f"module {package!r} has no attribute {name!r}")
    if name.startswith("__"):
        raise missing
    try:
        return _imported(f"{package}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{package}.{name}":
            raise
        raise missing from None


def face(package: str, sources: dict[str, str]) -> None:
    """Make ``package`` (a ``__name__``) export each name of ``sources`` (relative module →
    its names, space-separated; ``attr:name`` exports ``attr`` as ``name``) on first use."""
    names = {}
    for module, listed in sources.items():
        for entry in listed.split():
            attr, _, name = entry.partition(":")
            names[name or attr] = (module, attr)
    space = sys.modules[package]

    def __getattr__(name: str):
        if name not in names:  # a submodule, as ``import package`` used to leave it bound
            return _submodule(package, name)
        module, attr = names[name]
        value = getattr(_imported(package + module), attr)
        setattr(space, name, value)
        return value

    def __dir__():
        return sorted(set(space.__dict__) | set(names))

    vars(space).update(__getattr__=__getattr__, __dir__=__dir__, _lazy_names=names)
    space.__class__ = _Face
