"""Every package face exports what it says, to code and to static checkers (after trio's
``test_exports.py``).

A lazy face (``cpl.lazy``) spells its public names three times, one list: its ``__all__``;
the ``face(__name__, {...})`` table that imports each on first use; and the
``if TYPE_CHECKING:`` imports that mypy, pyright and editors read, since they cannot run
the table.  Here: the three are the same names from the same modules; every name resolves
at run time and ``dir()`` lists it; code in this repository imports from a face only names
of its ``__all__``; and mypy, run once on a file importing every public name of every face,
finds each.  Faces are discovered: every ``__init__.py`` of the shipped packages and of any
top-level package that calls ``face(``.
"""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("cpl", "choreo", "runtime", "causal_guards")

def _tree(face: str) -> ast.Module:
    init = ROOT.joinpath(*face.split("."), "__init__.py")
    return ast.parse(init.read_text(encoding="utf-8"))


def _face_table(tree: ast.Module) -> dict[str, tuple[str, str]] | None:
    """``face(__name__, {".module": "attr other:alias"})`` as {name: (module, attr)}."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "face":
            sources = ast.literal_eval(node.args[1])
            return {name or attr: (module, attr) for module, listed in sources.items()
                    for attr, _, name in (entry.partition(":") for entry in listed.split())}
    return None


def _static_imports(tree: ast.Module) -> dict[str, tuple[str, str]] | None:
    """The names that ``if TYPE_CHECKING:`` blocks import, as {name: (module, attr)}."""
    blocks = [node for node in tree.body if isinstance(node, ast.If)
              and getattr(node.test, "id", None) == "TYPE_CHECKING"]
    if not blocks:
        return None
    return {alias.asname or alias.name: ("." * node.level + (node.module or ""), alias.name)
            for block in blocks for node in block.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _binds_names(tree: ast.Module) -> bool:
    """Whether an ``__init__`` holds more than its docstring (and ``__future__`` imports)."""
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
               and getattr(node, "module", None) != "__future__" for node in tree.body)


def _calls_face(package: Path) -> bool:
    return any(_face_table(ast.parse(init.read_text(encoding="utf-8"))) is not None
               for init in package.rglob("__init__.py"))


def _top_level_packages() -> list[str]:
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = shipped.get("tool", {}).get("setuptools", {}).get("packages", [])
    found = {name.split(".")[0] for name in listed} | set(LAYERS)
    found |= {d.name for d in ROOT.iterdir() if (d / "__init__.py").is_file() and _calls_face(d)}
    return sorted(name for name in found if (ROOT / name / "__init__.py").is_file())


FACES = sorted(".".join(init.parent.relative_to(ROOT).parts)
               for top in _top_level_packages() for init in (ROOT / top).rglob("__init__.py"))


def test_the_faces_are_found():
    assert {"cpl", "cpl.trace", "cpl.live", "cpl.lang", "choreo", "choreo.execution", "runtime",
            "runtime.frames", "cpl_cli", "causal_guards"} <= set(FACES)
    assert all(not face.startswith(("tests", "bench")) for face in FACES)


@pytest.mark.parametrize("face", FACES)
def test_all_the_face_table_and_the_static_imports_are_one_list(face):
    tree = _tree(face)
    public = _declared_all(tree)
    if public is None:
        assert not _binds_names(tree), f"{face} binds names but declares no __all__"
        return
    assert len(public) == len(set(public)), f"{face}.__all__ names a name twice"
    table = _face_table(tree)
    if table is None:
        return  # an eager face: its own imports are what static tools read
    assert sorted(public) == sorted(table), f"{face}: __all__ and the face table differ"
    static = _static_imports(tree)
    assert static is not None, f"{face} has no `if TYPE_CHECKING:` imports of its names"
    missing = [f"from {module} import {attr}" + (f" as {name}" if name != attr else "")
               for name, (module, attr) in sorted(table.items())
               if static.get(name) != (module, attr)]
    assert missing == [], f"{face}'s TYPE_CHECKING block lacks these imports"
    assert sorted(static) == sorted(table), f"{face}: TYPE_CHECKING imports names not exported"


@pytest.mark.parametrize("face", FACES)
def test_every_public_name_resolves_and_dir_lists_it(face):
    module = importlib.import_module(face)
    public = getattr(module, "__all__", [])
    unresolved = [name for name in public if not hasattr(module, name)]
    assert unresolved == []
    assert set(public) <= set(dir(module))
    for name, (source, attr) in (_face_table(_tree(face)) or {}).items():
        assert getattr(module, name) is getattr(importlib.import_module(source, face), attr)


def test_code_imports_from_a_face_only_names_of_its_all():
    """A name outside ``__all__`` is private to its package, even when the face binds it."""
    public = {face: set(_declared_all(_tree(face)) or ()) for face in FACES}
    submodules = {face: {path.stem for path in ROOT.joinpath(*face.split(".")).iterdir()
                         if path.suffix == ".py" or (path / "__init__.py").is_file()}
                  for face in FACES}
    wrong = []
    for folder in (*_top_level_packages(), "tests", "bench", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and not node.level and node.module in public:
                    wrong += [(str(path.relative_to(ROOT)), node.module, alias.name)
                              for alias in node.names if alias.name not in public[node.module]
                              and alias.name not in submodules[node.module]]
    assert wrong == []


def test_a_static_checker_sees_every_public_name(tmp_path):
    """mypy, as a user's project runs it on the installed package (no implicit re-export:
    a name is public only when ``__all__`` lists it or it is imported ``as`` itself)."""
    pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")
    seen = [(face, name) for face in FACES for name in _declared_all(_tree(face)) or ()]
    user = tmp_path / "user_of_every_face.py"
    user.write_text("".join(f"from {face} import {name} as _{number}\n"
                            for number, (face, name) in enumerate(seen)), encoding="utf-8")
    # Only the faces are read, their modules skipped (a name bound is a name seen): seconds,
    # not the minute of the whole code base; what the faces' own code does is not asked here.
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nno_implicit_reexport = True\nfollow_imports = skip\n"
                      f"[mypy-{','.join(f'{top}.*,{top}' for top in _top_level_packages())}]\n"
                      "ignore_errors = True\n", encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), str(user),
         *(str(ROOT.joinpath(*face.split("."), "__init__.py")) for face in FACES)],
        cwd=tmp_path, env={**os.environ, "MYPYPATH": str(ROOT)}, capture_output=True,
        text=True, timeout=120)
    said = [f"{seen[int(line.split(':')[1]) - 1]}: {line.split(': ', 1)[1]}"
            if line.startswith(user.name) else line for line in checked.stdout.splitlines()]
    assert said == [] and checked.returncode == 0, checked.stderr
