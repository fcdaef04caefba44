"""The project's modules import each other without circles, and flowkit stays a library.

The graph is read from the source (AST), not by importing: every `import` and `from ... import`
anywhere in a module counts, function-level ones included. `from . import x` imports the package
`.` and, when `x` is a submodule, `x` too; importing `a.b.c` also imports its packages `a.b` and
`a` (their `__init__` runs first), so an edge to a package is an edge to its `__init__.py`.
Imports under `if TYPE_CHECKING:` never run, so they are left out.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("flowkit", "storage", "studio", "service")

# Known edges allowed (each with its reason). None: keep it that way.
ALLOWED: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        if (ROOT / pkg).is_dir():
            for path in sorted((ROOT / pkg).rglob("*.py")):
                out[module_name(path)] = path
    return out


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of the tree except those under `if TYPE_CHECKING:`."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `name` (at `path`) imports, and the packages they sit in."""
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets.add(base)
            targets.update(f"{base}.{a.name}" for a in node.names)   # a submodule, if it is one
    out: set[str] = set()
    for t in targets:
        parts = t.split(".")
        for i in range(1, len(parts) + 1):     # a module's packages are imported before it
            prefix = ".".join(parts[:i])
            if prefix in known and prefix != name:
                out.add(prefix)
    return out


def import_graph() -> nx.DiGraph:
    mods = project_modules()
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for name, path in mods.items():
        for target in imported(name, path, set(mods)):
            if not name.startswith(f"{target}."):     # a module's own packages are not a cycle
                graph.add_edge(name, target)
    return graph


def test_the_walk_sees_the_kinds_of_import():
    graph = import_graph()
    assert graph.has_edge("flowkit.compile", "flowkit.nodes")            # from .nodes import ...
    assert graph.has_edge("flowkit.registry", "flowkit.operators")       # function-level import
    assert graph.has_edge("flowkit.registry", "flowkit.contract")
    assert graph.has_edge("flowkit.operators.retrieval.search", "flowkit.operators._fuse")
    assert graph.has_edge("flowkit.eval.train_judge", "flowkit.judges")   # a package's __init__
    assert graph.has_edge("flowkit.judges", "flowkit.judges.classifier")   # from .classifier
    assert not graph.has_edge("flowkit.contract", "flowkit.context")   # only under TYPE_CHECKING


def test_no_import_cycles_among_the_project_modules():
    graph = import_graph()
    graph.remove_edges_from(ALLOWED)
    cycles = sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_flowkit_imports_neither_streamlit_nor_storage_nor_studio():
    mods = project_modules()
    bad = []
    for name, path in mods.items():
        if not name.startswith("flowkit"):
            continue
        for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            for n in names:
                top = n.split(".")[0]
                if top in ("streamlit", "storage", "studio") and (name, n) not in ALLOWED:
                    bad.append(f"{name} imports {n}")
    assert not bad, "\n".join(sorted(bad))


def test_operator_files_import_the_contract_not_the_registry():
    graph = import_graph()
    ops = [m for m in graph if m.startswith("flowkit.operators.")]
    assert len(ops) > 30
    assert not [m for m in ops if graph.has_edge(m, "flowkit.registry")]
    assert nx.descendants(graph, "flowkit.contract") <= {"flowkit", "flowkit.memory"}


IMPORT_ALL = """
import importlib, json, random, sys
names = json.loads(sys.argv[1])
random.Random(int(sys.argv[2])).shuffle(names)
failed = []
for n in names:
    try:
        importlib.import_module(n)
    except Exception as err:  # noqa: BLE001 - report every module that does not import
        failed.append(f"{n}: {type(err).__name__}: {err}")
print(json.dumps(failed))
"""


@pytest.mark.parametrize("seed", [1, 2])
def test_every_module_imports_in_a_shuffled_order(seed: int) -> None:
    """`python -c "import X"` for every module, in a random order in a fresh interpreter: no module
    depends on another having been imported first (the studio's `studio.*` too, not pages)."""
    names = sorted(n for n in project_modules() if not n.endswith("__main__"))   # runs the CLI
    proc = subprocess.run([sys.executable, "-c", IMPORT_ALL, json.dumps(names), str(seed)],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
