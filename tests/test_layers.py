"""The layers import downwards only: flowkit (the library) never imports storage, the service, the
studio or Streamlit; storage only stores (it may use flowkit's data types, never run a flow)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = {
    "flowkit": {"storage", "service", "studio", "streamlit", "pages"},
    "storage": {"service", "studio", "streamlit", "pages", "flowkit.engine", "flowkit.compile"},
    "service": {"studio", "streamlit", "pages"},
}


def imported(path: Path) -> set[str]:
    """Every absolute module name a file imports (top level or inside functions)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def _hits(package: str) -> list[str]:
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name in imported(path):
            if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[package]):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    return bad


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_only_lower_layers(package):
    assert _hits(package) == []


def test_the_check_sees_a_forbidden_import(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("def f():\n    from storage.repo import Store\n")
    assert "storage.repo" in imported(bad)
