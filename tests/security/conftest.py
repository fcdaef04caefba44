"""Helpers for the security tests: import exported packages in a subprocess behind a tripwire."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from exportkit import load_module as load_module  # tests/exportkit.py, shared with tests/export

from flowkit.export import write_package
from flowkit.templates import load_template

WORKER = Path(__file__).with_name("tripwire_import.py")


class TripwireImporter:
    """One long-lived `tripwire_import.py` process, in its own empty working directory."""

    def __init__(self, root: Path) -> None:
        self.cwd = root / "cwd"
        self.cwd.mkdir()
        warm = root / "warm"
        write_package(load_template("conditional"), warm)
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), str(warm)], cwd=self.cwd, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, encoding="utf-8",
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})

    def load(self, package: Path) -> dict[str, Any]:
        """Import package/graph.py there: the worker's answer (see tripwire_import)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"package": str(package.resolve())}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the import worker died (exit {self.proc.poll()})"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def importer() -> Iterator[TripwireImporter]:
    with tempfile.TemporaryDirectory() as root:
        worker = TripwireImporter(Path(root))
        try:
            yield worker
        finally:
            worker.close()
        assert list(worker.cwd.iterdir()) == [], "an import left files in its working directory"
