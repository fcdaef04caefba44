"""Export helpers shared by tests/export and tests/security: write a flow's LangGraph package and
import its graph.py in this process (as `langgraph dev` does, by file path)."""
from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path
from types import ModuleType

from flowkit.export import write_package
from flowkit.spec import FlowSpec


def load_module(folder: Path) -> ModuleType:
    """Import folder/graph.py in this process under a fresh module name (by file path)."""
    name = f"exported_graph_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, folder / "graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def export(spec: FlowSpec, tmp_path: Path) -> tuple[Path, ModuleType]:
    """Write `spec`'s package to tmp_path/<name> and import its graph.py: (folder, module)."""
    folder = tmp_path / spec.name
    write_package(spec, folder)
    return folder, load_module(folder)
