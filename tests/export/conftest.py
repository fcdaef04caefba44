"""Helpers for the export tests: a run's step sequence; writing a package and importing its graph.py
come from tests/exportkit.py (shared with tests/security)."""
from __future__ import annotations

from typing import Any

from exportkit import export as export  # tests/exportkit.py: shared with tests/security
from exportkit import load_module as load_module

from flowkit.compile import FINISH


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
