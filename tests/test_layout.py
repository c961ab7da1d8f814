"""The house's rules, checked on the source: which package may import which, no
import cycle, modules within their size budget (or listed with their reason),
sub-package faces respected, and the architecture page naming only modules that
exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("cpl", "choreo", "runtime", "causal_guards", "cpl_cli")
# The layers, lowest first: a package imports only from the ones before it.  The adapters
# (causal_guards) sit on cpl alone; the command (cpl_cli) on everything but the adapters.
LAYERS = {"cpl": ("cpl",), "choreo": ("cpl", "choreo"), "runtime": ("cpl", "choreo", "runtime"),
          "cpl_cli": ("cpl", "choreo", "runtime", "cpl_cli"),
          "causal_guards": ("cpl", "causal_guards")}
SUBPACKAGES = {
    "cpl": ("lang", "trace", "monitor", "semantics", "view", "anomalies", "live", "export"),
    "choreo": ("authoring", "analysis", "execution", "exploration", "models"),
    "runtime": ("frames", "lifeline", "supervisor"),
}
# Inside choreo and runtime the sub-packages are layers too, lowest first (models stands alone).
INNER_LAYERS = {
    "choreo": ("authoring", "analysis", "execution", "exploration"),
    "runtime": ("frames", "lifeline", "supervisor"),
}
BUDGET = 400  # lines: past it, a module says why below, or is split by concept
OVER_BUDGET: dict[str, str] = {}


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
             if b.split(".")[0] not in LAYERS[a.split(".")[0]]]
    assert wrong == []


@pytest.mark.parametrize("package", sorted(INNER_LAYERS))
def test_the_subpackages_import_one_way(package):
    """``choreo.analysis`` may use ``choreo.authoring``, never the other way round."""
    order = INNER_LAYERS[package]
    wrong = []
    for a, targets in GRAPH.items():
        for b in targets:
            pa, pb = a.split("."), b.split(".")
            if pa[0] == pb[0] == package and len(pa) > 1 and len(pb) > 1 \
                    and pa[1] != pb[1] and pa[1] in order and pb[1] in order \
                    and order.index(pb[1]) > order.index(pa[1]):
                wrong.append((a, b))
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


RAY_MODULES = ("runtime.supervisor.ray_launcher", "runtime.supervisor.ray_cluster")


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


def lines_of(name: str) -> int:
    return len(MODULES[name].read_text(encoding="utf-8").splitlines())


def test_modules_keep_their_budget_or_say_why():
    """A module past the budget is either split by concept or listed with its reason; a
    listed module that has come back under the budget leaves the list."""
    over = sorted(name for name in MODULES if lines_of(name) > BUDGET)
    assert [name for name in over if name not in OVER_BUDGET] == []
    assert [name for name in OVER_BUDGET if name not in MODULES or lines_of(name) <= BUDGET] == []


@pytest.mark.parametrize("package", sorted(SUBPACKAGES))
def test_a_package_is_its_subpackages_and_few_loose_modules(package):
    """Each concept of ``cpl``, ``choreo`` and ``runtime`` is a sub-package with a face; at most
    three modules stay loose beside them."""
    loose = sorted(p.name for p in (ROOT / package).glob("*.py") if p.name != "__init__.py")
    assert len(loose) <= 3, loose
    assert sorted(p.name for p in (ROOT / package).iterdir() if p.is_dir()
                  and (p / "__init__.py").exists()) == sorted(SUBPACKAGES[package])


def test_only_a_subpackage_reaches_into_its_own_modules():
    """Outside ``cpl.X`` (or ``choreo.X``, ``runtime.X``), code imports the face ``cpl.X``,
    never ``cpl.X.module``."""
    reached = []
    for name, targets in GRAPH.items():
        for target in targets:
            parts = target.split(".")
            if len(parts) > 2 and parts[0] in SUBPACKAGES \
                    and not name.startswith(".".join(parts[:2])):
                reached.append((name, target))
    assert reached == []


def test_the_architecture_page_names_modules_that_exist():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:cpl|choreo|runtime|cpl_cli|causal_guards)(?:[./][A-Za-z_]+)+)"
                           r"(?:\.py)?/?`", text))
    assert named, "the page names no module"
    dotted = {n.replace("/", ".").removesuffix(".py").removesuffix(".__init__") for n in named}
    missing = sorted(n for n in dotted if n not in MODULES  # a module, or a name its face exports
                     and n.rpartition(".")[2] not in bound(n.rpartition(".")[0]))
    assert missing == []


@pytest.mark.parametrize("face", [f"{package}.{sub}" for package, subs in SUBPACKAGES.items()
                                  for sub in subs])
def test_every_face_says_what_it_is(face):
    import importlib
    module = importlib.import_module(face)
    assert module.__doc__ and module.__doc__.strip()
