"""The import graph of the package: the layering that ARCHITECTURE.md draws.

* no library module imports the command-line interface (``dpaudit.cli``);
* no core module imports the paper reproductions (``dpaudit.papers``) or a heavy framework
  (torch/Opacus, JAX, Ray) -- except the packages whose job that is (``training/`` for torch,
  the JAX training integration, the engine's executors for Ray);
* no import cycles between packages, nor between the modules of one package.

Imports inside functions count: a lazy import is still a dependency.  The graph is read from
the source with :mod:`ast`; nothing is imported.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = SRC / "dpaudit"
HEAVY = ("torch", "opacus", "jax", "jaxlib", "flax", "optax", "ray", "transformers", "peft")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _lazy_facade_nodes(tree: ast.Module) -> set[int]:
    """Nodes inside a module-level ``__getattr__`` (PEP 562): a lazy re-export of a public name
    (``from dpaudit.io import from_in_out``) is a facade, not a dependency of the module; and
    nodes under ``if TYPE_CHECKING:``."""
    out: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            out.update(id(n) for n in ast.walk(node))
        # ``if TYPE_CHECKING:`` imports are for annotations only, never run
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out.update(id(n) for n in ast.walk(node))
    return out


def _imports(path: Path) -> set[str]:
    """Absolute names of everything ``path`` imports (``from a import b`` yields a and a.b)."""
    mod = _module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    facade = _lazy_facade_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in facade:
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


#: module name -> source file (cheap: collection parametrizes over these names); the import
#: graph itself is read when a test first needs it (``_graph``), not at collection
PATHS = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
MODULES = set(PATHS)


@functools.cache
def _graph() -> dict[str, set[str]]:
    """module -> everything it imports (read once, on first use)."""
    return {mod: _imports(path) for mod, path in PATHS.items()}


def _internal(name: str) -> str | None:
    """The dpaudit module an imported name refers to (longest existing prefix)."""
    parts = name.split(".")
    for i in range(len(parts), 1, -1):
        if ".".join(parts[:i]) in MODULES:
            return ".".join(parts[:i])
    return None


def _in(mod: str, *prefixes: str) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in prefixes)


@functools.cache
def _edges() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mod, names in _graph().items():
        out[mod] = {t for n in names if n.startswith("dpaudit") and (t := _internal(n))
                    and t != mod}
    return out


CORE = sorted(m for m in PATHS if not _in(m, "dpaudit.cli", "dpaudit.papers", "dpaudit.__main__"))

#: (module prefix, heavy frameworks it may import)
HEAVY_ALLOWED = (
    ("dpaudit.training.lm", ("torch", "opacus", "transformers", "peft")),
    ("dpaudit.training", ("torch", "opacus", "jax", "jaxlib", "flax", "optax")),
    ("dpaudit.engine.executors", ("ray",)),
)


def test_graph_is_read():
    # the reader sees the package: the CLI entry point and the estimators are there
    assert "dpaudit.cli" in MODULES and "dpaudit.estimators.multi_run" in MODULES
    assert "dpaudit.curves" in _edges()["dpaudit.estimators.multi_run"] or any(
        _in(t, "dpaudit.curves") for t in _edges()["dpaudit.estimators.one_run"])


@pytest.mark.parametrize("mod", sorted(m for m in PATHS if not _in(m, "dpaudit.cli",
                                                                    "dpaudit.__main__")))
def test_library_never_imports_the_cli(mod):
    bad = sorted(t for t in _edges()[mod] if _in(t, "dpaudit.cli"))
    assert not bad, f"{mod} imports the CLI: {bad}"


@pytest.mark.parametrize("mod", CORE)
def test_core_never_imports_paper_reproductions(mod):
    bad = sorted(t for t in _edges()[mod] if _in(t, "dpaudit.papers"))
    assert not bad, f"{mod} imports the paper reproductions: {bad}"


@pytest.mark.parametrize("mod", CORE)
def test_core_imports_heavy_frameworks_only_where_allowed(mod):
    allowed: tuple[str, ...] = ()
    for prefix, frameworks in HEAVY_ALLOWED:
        if _in(mod, prefix):
            allowed += frameworks
    bad = sorted(n for n in _graph()[mod] if n.split(".")[0] in HEAVY
                 and n.split(".")[0] not in allowed)
    assert not bad, f"{mod} imports {bad}"


def _package(mod: str) -> str:
    parts = mod.split(".")
    return ".".join(parts[:2])


def _cycles(nodes: set[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of size > 1 (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a", "b", "c"}, {"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_no_cycles_between_packages():
    pkg_edges: dict[str, set[str]] = {}
    for mod, targets in _edges().items():
        src = _package(mod)
        pkg_edges.setdefault(src, set()).update(
            _package(t) for t in targets
            if _package(t) != src and t != "dpaudit")
    # ``dpaudit/__init__.py`` re-exports the public API; it is the top, not a package
    pkg_edges.pop("dpaudit", None)
    assert _cycles(set(pkg_edges), pkg_edges) == []


def test_no_cycles_between_modules():
    # a package's __init__ re-exports its modules (an edge into the package, not a cycle of
    # the modules themselves): left out, like the top-level dpaudit/__init__.py
    inits = {_module_name(p) for p in ROOT.rglob("__init__.py")}
    edges = {m: {t for t in ts if t not in inits}
             for m, ts in _edges().items() if m not in inits}
    assert _cycles(set(edges), edges) == []
