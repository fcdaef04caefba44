"""Uploaded file names (service.uploads, through studio.knowledge.tasks.submit_ingest): names that are not plain file names are
refused before anything is created, and two files with one name both survive."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowkit.testing import HashEmbedder
from service.uploads import MAX_NAME_BYTES, UploadRefused, name_problem, upload_names
from service.workspace import Workspace
from studio.common.jobs import JobManager
from studio.knowledge.tasks import submit_ingest


class HeldJobs:
    """A job manager that keeps the submitted work instead of running it."""

    def __init__(self) -> None:
        self.submitted: list[tuple[str, str, Any]] = []

    def submit(self, kind: str, label: str, work: Any, **_: Any) -> str:
        self.submitted.append((kind, label, work))
        return f"job-{len(self.submitted)}"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    w = Workspace(tmp_path / "data")
    w.resources.set_embedder(HashEmbedder())
    return w


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


BAD = [
    ("", "empty"),
    ("   ", "empty"),
    (".", "'.' is not a file name"),
    ("..", "'..' is not a file name"),
    ("a\x00b.txt", "NUL"),
    ("../evil.txt", "contains '/'"),
    ("sub/dir.txt", "'/'"),
    ("..\\evil.txt", "contains '\\'"),
    ("é" * 128 + ".txt", "260 bytes long in UTF-8"),   # 128 characters, 256 bytes, + 4
]


@pytest.mark.parametrize("name,why", BAD)
def test_a_bad_name_is_refused_naming_the_file_and_nothing_is_created(ws: Workspace, name: str,
                                                                       why: str) -> None:
    jobs = HeldJobs()
    before = _tree(ws.data_dir)
    files = [("good.txt", b"fine"), (name, b"x")]
    with pytest.raises(UploadRefused) as caught:
        submit_ingest(jobs, ws, "notes", files, "indexing.chunk_fixed", {})   # type: ignore[arg-type]
    message = str(caught.value)
    assert why in message, message
    assert repr(name)[:40] in message                 # the file is named (quoted, cut if long)
    assert "good.txt" not in message                  # only the refused file
    assert caught.value.names == [name]
    assert jobs.submitted == []
    assert _tree(ws.data_dir) == before               # no uploads/<id>/ folder, nothing else
    assert not (ws.data_dir / "uploads").exists()


def test_every_bad_name_is_listed_at_once() -> None:
    with pytest.raises(UploadRefused) as caught:
        upload_names(["..", "ok.md", "a/b.md", ""])
    assert caught.value.names == ["..", "a/b.md", ""]
    assert "3 file name(s)" in str(caught.value)


def test_limits_of_a_good_name() -> None:
    assert name_problem("x" * (MAX_NAME_BYTES - 4) + ".txt") is None            # exactly 255 bytes
    assert "256 bytes" in (name_problem("x" * (MAX_NAME_BYTES - 3) + ".txt") or "")
    for fine in ("...", ".env", "notes..txt", "résumé.md", "a b (1).txt"):
        assert name_problem(fine) is None, fine
    assert "surrogate" in (name_problem("bad\udc80.txt") or "")


def test_repeated_names_are_numbered_not_overwritten() -> None:
    assert upload_names(["a.txt", "b.md", "a.txt", "A.TXT", "a (2).txt"]) == [
        "a.txt", "b.md", "a (2).txt", "A (3).TXT", "a (2) (2).txt"]
    assert upload_names(["README", "README", ".env", ".env"]) == [
        "README", "README (2)", ".env", ".env (2)"]
    long = "y" * (MAX_NAME_BYTES - 4) + ".txt"
    second = upload_names([long, long])[1]
    assert second.endswith(" (2).txt") and len(second.encode()) == MAX_NAME_BYTES
    wide = "é" * 125 + ".txt"                                          # 254 bytes
    numbered = upload_names([wide, wide])[1]
    assert numbered.endswith(" (2).txt") and len(numbered.encode()) <= MAX_NAME_BYTES
    assert numbered.encode().decode() == numbered                      # no character cut in half


def test_two_files_with_one_name_are_both_saved_and_ingested(ws: Workspace) -> None:
    jobs = HeldJobs()
    files = [("tide.txt", b"The tide table is kept in Dunmere harbour office."),
             ("tide.txt", b"Pell is the ghost of the Corren Lighthouse keeper.")]
    submit_ingest(jobs, ws, "notes", files, "indexing.chunk_fixed", {})  # type: ignore[arg-type]
    (kind, label, work), = jobs.submitted
    assert kind == "ingest" and label == "ingest tide.txt, tide (2).txt into notes"
    (folder,) = (ws.data_dir / "uploads").iterdir()
    assert sorted(p.name for p in folder.iterdir()) == ["tide (2).txt", "tide.txt"]
    assert (folder / "tide.txt").read_bytes() == files[0][1]
    assert (folder / "tide (2).txt").read_bytes() == files[1][1]

    class Report:
        def update(self, **_: Any) -> None:
            pass

    result = work(Report())
    assert result["files"] == ["tide.txt", "tide (2).txt"] and not folder.exists()
    docs = {d["meta"]["doc_id"] for d in ws.resources.kb("notes").chunks(limit=50)}
    assert docs == {"tide", "tide (2)"}


def test_a_real_job_manager_gets_the_renamed_files(ws: Workspace) -> None:
    jobs = JobManager()
    job_id = submit_ingest(jobs, ws, "notes", [("n.md", b"# One\n\nfirst"), ("n.md", b"# Two\n\nsecond")],
                           "indexing.chunk_fixed", {})
    job = jobs.wait(job_id, 60)
    assert job.status == "done", job.error
    assert job.result["files"] == ["n.md", "n (2).md"]
