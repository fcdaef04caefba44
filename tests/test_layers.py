"""The layers import downwards only: flowkit (the library) never imports storage, the service, the
studio or Streamlit; storage only stores (it may use flowkit's data types, never run a flow); the
studio and its pages reach everything through `service` (the one door), flowkit's public types
(ALLOWED_FLOWKIT) and Streamlit, never storage, flowkit.operators or flowkit.runtime."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = {
    "flowkit": {"storage", "service", "studio", "streamlit", "pages"},
    "storage": {"service", "studio", "streamlit", "pages", "flowkit.engine", "flowkit.compile"},
    "service": {"studio", "streamlit", "pages"},
    "studio": {"storage", "pages", "flowkit.operators", "flowkit.runtime"},
    "pages": {"storage", "flowkit.operators", "flowkit.runtime"},
}

#: The flowkit modules the studio and the pages may import: the public types and pure helpers.
#: A module mapped to a set may be imported from for those names only; None: any name.
ALLOWED_FLOWKIT: dict[str, set[str] | None] = {
    "flowkit": {"registry", "templates", "sample_kb"},
    "flowkit.spec": None, "flowkit.errors": None, "flowkit.trace": None,
    "flowkit.templates": None, "flowkit.registry": None, "flowkit.validate": None,
    "flowkit.names": None, "flowkit.memory": None, "flowkit.memory_edit": None, "flowkit.contract": None,
    "flowkit.nodes": {"FINISH"}, "flowkit.run_request": None, "flowkit.eval.strategy": None,
    "flowkit.eval": {"report"}, "flowkit.eval.report": None, "flowkit.eval.metrics": None,
    "flowkit.eval.formatting": None, "flowkit.eval.exports": None,
    "flowkit.eval.pairwise": {"WinRate", "win_lines"},        # a pair's win rate and its words
    "flowkit.eval.reliability": {"ReliabilityCard"},           # a judge's card against labels
    "flowkit.eval.datasets": None, "flowkit.eval.runner": {"EvalPlan", "FlowEntry"},
    "flowkit.eval.questiongen.generate": {"Request", "Progress", "MAX_QUESTIONS"},
    "flowkit.eval.questiongen.candidates": {"KINDS"}, "flowkit.eval.questiongen.checks": {"REASONS"},
}
FENCED = ("studio", "pages")


def imported(path: Path) -> set[str]:
    """Every absolute module name a file imports (top level or inside functions)."""
    return {module for module, _ in imported_names(path)}


def imported_names(path: Path) -> set[tuple[str, str]]:
    """(module, name) for every absolute import; name is '' for `import module`."""
    out: set[tuple[str, str]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update((a.name, "") for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.update((node.module, a.name) for a in node.names)
    return out


def _files(package: str) -> list[Path]:
    base = ROOT / package
    return sorted(p for p in base.rglob("*.py") if "node_modules" not in p.parts)


def _hits(package: str) -> list[str]:
    bad = []
    for path in _files(package):
        for name in imported(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[package]):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


def flowkit_outside_allowlist(path: Path) -> list[str]:
    """The flowkit imports of a studio or page file that are not public types (ALLOWED_FLOWKIT)."""
    bad = []
    for module, name in sorted(imported_names(path)):
        if module != "flowkit" and not module.startswith("flowkit."):
            continue
        allowed = ALLOWED_FLOWKIT.get(module, set())
        if module not in ALLOWED_FLOWKIT or (allowed is not None and name not in allowed):
            bad.append(f"{path.name}: {module}{'.' + name if name else ''}")
    return bad


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_lower_layers(package):
    assert _hits(package) == []


@pytest.mark.parametrize("package", FENCED)
def test_studio_and_pages_use_only_public_flowkit(package):
    bad = [hit for path in _files(package) for hit in flowkit_outside_allowlist(path)]
    assert bad == []


def test_app_entry_point_is_fenced_too():
    app = ROOT / "app.py"
    assert not [n for n in imported(app) if n.split(".")[0] == "storage"]
    assert flowkit_outside_allowlist(app) == []


#: studio.common's plumbing around Streamlit itself (not panels, but they call Streamlit).
COMMON_PLUMBING = {"inert", "jobs", "pending", "shell", "state", "workspace"}


def _draws(path: Path) -> bool:
    return any(m == "streamlit" or m.startswith("streamlit.") for m in imported(path))


def test_only_panels_draw():
    """The naming rule (studio/__init__.py): a module that imports Streamlit ends in `_panel`,
    except the plumbing of studio.common; each page has its own package."""
    studio = ROOT / "studio"
    bad = [str(p.relative_to(ROOT)) for p in _files("studio")
           if _draws(p) and not p.stem.endswith("_panel") and p.name != "__init__.py"
           and not (p.parent.name == "common" and p.stem in COMMON_PLUMBING)
           and p.relative_to(studio).as_posix() != "serve.py"]
    assert bad == []
    assert not [p.name for p in studio.glob("*.py") if p.name not in ("__init__.py", "serve.py")]
    for page in (ROOT / "pages").glob("*.py"):
        assert (studio / page.stem / "__init__.py").is_file(), page.name


def test_the_check_sees_a_forbidden_import(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from storage.repo import Store\n")
    assert "storage.repo" in imported(bad)


def test_the_allowlist_sees_an_internal_flowkit_import(tmp_path):
    bad = tmp_path / "page.py"
    bad.write_text("from flowkit.eval.runner import EvalPlan, run_evaluation\n"
                   "from flowkit import engine\nfrom flowkit.spec import FlowSpec\n")
    assert flowkit_outside_allowlist(bad) == ["page.py: flowkit.engine",
                                              "page.py: flowkit.eval.runner.run_evaluation"]


# ---- the store is reached through service/ only ---------------------------------------------
#: Files still calling the store directly (none left since the editor's rework, issue 25): each
#: is listed by path; the test fails when one no longer needs its place here, so the list shrinks.
STORE_CALLS_LEFT: set[str] = set()


def store_calls(path: Path) -> list[str]:
    """`<x>.store.<method>` in a file: the studio reaching past service/ into storage."""
    return [f"line {node.lineno}: {ast.unparse(node)}"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "store"]


def test_studio_and_pages_call_the_store_only_through_service():
    found = {str(p.relative_to(ROOT)): hits for package in FENCED for p in _files(package)
             if (hits := store_calls(p))}
    assert {path: hits for path, hits in found.items() if path not in STORE_CALLS_LEFT} == {}
    assert STORE_CALLS_LEFT <= set(found), "no longer calls the store: drop it from the list"


def test_the_store_check_sees_a_store_call(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("runs = ws.store.list_runs(limit=5)\nview.store = ws.store\n")
    assert store_calls(page) == ["line 1: ws.store.list_runs"]
