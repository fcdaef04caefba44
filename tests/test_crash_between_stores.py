"""A crash between the knowledge base's writes (Chroma, BM25, meta.json) and the database's (the
dataset row in SQLite): `flowkit dataset import DIR --kb K --ingest` killed with SIGKILL while it
ingests, then run again. The second run must complete the knowledge base (a KB marked incomplete
is ingested again, not taken as ready because it holds some chunks) and then store the dataset, so
that Chroma, BM25, meta.json and SQLite agree."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from flowkit.runtime.kb import COMPLETE, INCOMPLETE
from flowkit.runtime.resources import Resources
from storage.evals import EvalRepo
from storage.repo import Store

ROOT = Path(__file__).resolve().parent.parent
DOCS = 400


def _dataset(folder: Path) -> Path:
    folder.mkdir()
    words = ("harbour", "lantern", "ferry", "granite", "tide", "orchard", "beacon", "quay")
    with (folder / "corpus.jsonl").open("w") as f:
        for i in range(DOCS):
            text = " ".join(words[(i * k) % len(words)] for k in range(1, 30)) + f" record {i}."
            f.write(json.dumps({"id": f"d{i}", "title": f"Note {i}", "text": text}) + "\n")
    with (folder / "questions.jsonl").open("w") as f:
        for i in range(3):
            f.write(json.dumps({"id": f"q{i}", "question": f"What is record {i}?",
                                "answers": [f"record {i}"]}) + "\n")
    return folder


def _env(home: Path) -> dict[str, str]:
    return {**os.environ, "FLOWKIT_HOME": str(home), "COLUMNS": "200"}


def _import_args(folder: Path) -> list[str]:
    return [sys.executable, "-m", "service.cli", "dataset", "import", str(folder), "--name",
            "notes", "--kb", "notes", "--ingest"]


def _writing(home: Path) -> bool:
    """The command holds the KB's write lock: the lock file appeared (a new KB) or meta.json
    says a change is under way (a KB that existed)."""
    kb = home / "kb" / "notes"
    if not (kb / "meta.json").is_file():
        return (kb / ".lock").exists()
    try:
        return json.loads((kb / "meta.json").read_text()).get("state") == INCOMPLETE
    except ValueError:
        return False


def _kill_while_writing(args: list[str], home: Path, rng: random.Random) -> None:
    """Start the command, wait until it writes the KB, let it write for a random while, then
    SIGKILL it."""
    proc = subprocess.Popen(args, env=_env(home), cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not _writing(home):
        time.sleep(0.02)
    time.sleep(rng.uniform(0.5, 2.0))                 # the embedder loads, chunks go to Chroma
    assert proc.poll() is None, "the command ended before it could be killed; grow DOCS"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)


def _state(home: Path) -> dict[str, object]:
    meta_path = home / "kb" / "notes" / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    res = Resources(home)
    base = res.kb("notes")
    try:
        chroma = base.count()
    except Exception:  # noqa: BLE001 - no collection yet
        chroma = 0
    datasets = [d.name for d in EvalRepo(Store(res.database_url)).list_datasets()]
    return {"state": meta.get("state"), "meta_chunks": meta.get("chunks"), "chroma": chroma,
            "bm25": base.bm25.count(), "datasets": datasets}


def _run(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, env=_env(home), cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc


AGREED = {"state": COMPLETE, "meta_chunks": DOCS, "chroma": DOCS, "bm25": DOCS,
          "datasets": ["notes"]}


def test_import_killed_while_ingesting_a_new_kb_then_rerun_agrees(tmp_path: Path) -> None:
    folder, home = _dataset(tmp_path / "notes_set"), tmp_path / "home"
    _kill_while_writing(_import_args(folder), home, random.Random(7))
    cut = _state(home)
    assert cut["state"] in (None, INCOMPLETE) and cut["datasets"] == [], cut   # not listed/ready
    again = _run(_import_args(folder), home)
    assert "not ingested again" not in again.stdout
    assert _state(home) == AGREED
    third = _run(_import_args(folder), home)                  # ready: nothing ingested twice
    assert "is ready; not ingested again" in third.stdout and _state(home) == AGREED


def test_a_kb_left_incomplete_by_a_killed_reingest_is_completed_by_the_import(tmp_path: Path) -> None:
    """The KB exists with chunks but its last change was cut short: the import must not take it
    as ready (before the fix it said 'already has chunks' and stored a dataset on a broken KB)."""
    folder, home = _dataset(tmp_path / "notes_set"), tmp_path / "home"
    _run([sys.executable, "-m", "service.cli", "ingest", "--kb", "notes",
          str(folder / "corpus.jsonl")], home)
    _kill_while_writing([sys.executable, "-m", "service.cli", "ingest", "--kb", "notes",
                         str(folder / "corpus.jsonl")], home, random.Random(11))
    cut = _state(home)
    assert cut["state"] == INCOMPLETE and cut["chroma"] and cut["datasets"] == [], cut
    again = _run(_import_args(folder), home)
    assert "not ingested again" not in again.stdout
    assert _state(home) == AGREED
