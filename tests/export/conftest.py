"""Helpers for the export tests: write a template's package and import its graph.py."""
from __future__ import annotations

import importlib.util
import sys
import uuid
from pathlib import Path
from types import ModuleType
from typing import Any

from flowkit.compile import FINISH
from flowkit.export import write_package
from flowkit.spec import FlowSpec


def load_module(folder: Path) -> ModuleType:
    """Import folder/graph.py under a fresh module name (as `langgraph dev` does, by file path)."""
    name = f"exported_graph_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, folder / "graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def export(spec: FlowSpec, tmp_path: Path) -> tuple[Path, ModuleType]:
    folder = tmp_path / spec.name
    write_package(spec, folder)
    return folder, load_module(folder)


def sequence(trace: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(node, visit) pairs from an exported run's `trace`."""
    return [(t["node"], t["visit"]) for t in trace]


def normalise(seq: list[tuple[str, int]], parallel: set[str]) -> list[Any]:
    """Steps of parallel branches may finish in either order: sort each run of them."""
    out: list[Any] = []
    run: list[tuple[str, int]] = []
    for step in [*seq, (FINISH + "end", 0)]:
        if step[0] in parallel:
            run.append(step)
            continue
        if run:
            out.append(sorted(run))
            run = []
        out.append(step)
    return out[:-1]
