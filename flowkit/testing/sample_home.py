"""A FLOWKIT_HOME as `flowkit setup` leaves it (the sample knowledge base, ingested), for tests and
benchmarks that need one but do not test `flowkit setup` itself.

    setup_sample(home)        # home now holds the ingested sample knowledge base

`flowkit setup` runs once per process (a subprocess, as a user runs it), into a folder of its own;
each home asked for later is a copy of that folder (the knowledge base's files hold no path of
their own, and nothing opens the template after its setup). One setup took 15-27 s here (the
embedder loads, the sample is embedded); a copy takes milliseconds.
"""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_TEMPLATE: list[Path] = []       # this process's one `flowkit setup`
_LOCK = threading.Lock()


def _run_setup(home: Path) -> None:
    env = {**os.environ, "FLOWKIT_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    subprocess.run([sys.executable, "-m", "service.cli", "setup"], env=env, check=True, cwd=ROOT,
                   timeout=600, capture_output=True)


def setup_sample(home: str | Path) -> None:
    """Make `home` (created if missing; what it holds already is kept) as `flowkit setup` leaves
    it: the sample knowledge base, ingested."""
    with _LOCK:
        if not _TEMPLATE:
            template = Path(tempfile.mkdtemp(prefix="flowkit-setup-")) / "home"
            _run_setup(template)
            atexit.register(shutil.rmtree, template.parent, True)
            _TEMPLATE.append(template)
    shutil.copytree(_TEMPLATE[0], home, dirs_exist_ok=True)
