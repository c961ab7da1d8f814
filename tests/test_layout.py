"""The house's rules, checked on the source: which package may import which, no
import cycle, no module over 400 lines, sub-package faces respected, and the
architecture page naming only modules that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cpl", "choreo", "runtime", "causal_guards")
CPL_SUBPACKAGES = ("lang", "trace", "monitor", "semantics", "view", "anomalies", "live",
                   "export")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def imports(name: str) -> set[str]:
    """Every module ``name`` imports anywhere in its body (lazy imports count: a cycle
    hidden inside a function is still a cycle), resolved to modules of this repo."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif _is_face(node):  # a lazy face imports its modules when a name is first used
            targets = [f"{package}{key.value}" for key in node.args[1].keys]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            inside = name.startswith(f"{base}.")  # a package's own modules use each other
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES
                       and (inside or alias.name not in bound(base)) else base
                       for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in MODULES)
    return found - {name}


def _is_face(node) -> bool:
    """``face(__name__, {".module": "names", ...})``: a package face of ``cpl.lazy``."""
    return (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "face"
            and len(node.args) == 2 and isinstance(node.args[1], ast.Dict))


def bound(package: str) -> set[str]:
    """The names a package's ``__init__`` binds itself: ``from cpl.lang import check``
    takes the function its face exports, not the module of the same name (a lazy face,
    ``cpl.lazy``, binds the names it lists)."""
    path = MODULES.get(package)
    if path is None or path.name != "__init__.py":
        return set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lazy = {entry.partition(":")[2] or entry.partition(":")[0]
            for node in ast.walk(tree) if _is_face(node)
            for listed in node.args[1].values for entry in listed.value.split()}
    return lazy | {alias.asname or alias.name for node in tree.body
                   if isinstance(node, ast.ImportFrom) for alias in node.names}


GRAPH = {name: imports(name) for name in MODULES}


def test_the_packages_import_one_way():
    wrong = [(a, b) for a, targets in GRAPH.items() for b in targets
             if (a.startswith("cpl") and not b.startswith("cpl"))
             or (a.startswith("choreo") and b.startswith(("runtime", "causal_guards")))
             or (a.startswith("runtime") and b.startswith("causal_guards"))
             or (a.startswith("causal_guards") and b.startswith(("choreo", "runtime")))]
    assert wrong == []


FRAMEWORKS = ("langgraph", "langchain_core", "agents", "mcp", "starlette", "uvicorn", "httpx")


def test_only_the_adapters_import_a_framework():
    """cpl, choreo and runtime run without any framework installed (they are extras)."""
    wrong = []
    for name, path in MODULES.items():
        if name.startswith("causal_guards"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            found = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            wrong += [(name, f) for f in found if f.split(".")[0] in FRAMEWORKS]
    assert wrong == []


RAY_MODULES = ("runtime.ray_launcher", "runtime.cli.cluster")


def test_only_the_ray_launcher_imports_ray_and_only_when_it_runs():
    """ray is an extra: no module imports it at its top, and only the launcher and its
    cluster connection import it at all (cpl run --launcher ray)."""
    wrong = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            found = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            if any(f.split(".")[0] == "ray" for f in found) and \
                    (id(node) in top or name not in RAY_MODULES):
                wrong.append((name, node.lineno))
    assert wrong == []


def test_there_is_no_import_cycle():
    state: dict[str, int] = {}  # 1: on the path, 2: done
    cycles = []

    def visit(name: str, path: list[str]) -> None:
        state[name] = 1
        for target in sorted(GRAPH[name]):
            if state.get(target) == 1:
                cycles.append(path[path.index(target):] + [target])
            elif target not in state:
                visit(target, path + [target])
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_no_module_is_over_400_lines():
    long = {name: n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}


def test_cpl_keeps_at_most_three_modules_outside_its_subpackages():
    loose = sorted(p.name for p in (ROOT / "cpl").glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= 3, loose
    assert sorted(p.name for p in (ROOT / "cpl").iterdir() if p.is_dir()
                  and (p / "__init__.py").exists()) == sorted(CPL_SUBPACKAGES)


def test_only_a_subpackage_reaches_into_its_own_modules():
    """Outside ``cpl.X``, code imports ``cpl.X`` (its face), never ``cpl.X.module``."""
    reached = []
    for name, targets in GRAPH.items():
        for target in targets:
            parts = target.split(".")
            if len(parts) > 2 and parts[0] == "cpl" and not name.startswith(".".join(parts[:2])):
                reached.append((name, target))
    assert reached == []


def test_the_architecture_page_names_modules_that_exist():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:cpl|choreo|runtime)(?:[./][A-Za-z_]+)+)(?:\.py)?/?`", text))
    assert named, "the page names no module"
    missing = sorted(n for n in named if n.replace("/", ".").removesuffix(".py") not in MODULES)
    assert missing == []


@pytest.mark.parametrize("face", [f"cpl.{sub}" for sub in CPL_SUBPACKAGES])
def test_every_face_says_what_it_is(face):
    import importlib
    module = importlib.import_module(face)
    assert module.__doc__ and module.__doc__.strip()
