"""Issue 38 item 6: a user's bad file on the Knowledge page, and the titles of text files.

- The ingest job of an upload that cannot be read fails with one line naming the file as the user
  named it (not the path of its saved copy under <data>/uploads/), and the log holds one line
  without a traceback for it (a failure of the studio's own still logs one).
- A .txt file's title is its file name without the extension, never its first sentence (which
  the prompt then showed twice: "[1] <sentence>: <sentence> ..."); a .md file's heading is its
  title.
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from flowkit.errors import DocumentError
from flowkit.operators._text import passages
from flowkit.runtime.docfiles import read_documents
from studio.common.jobs import JobManager
from studio.knowledge import tasks

sys.path.insert(0, str(Path(__file__).resolve().parent))   # _runkit beside this file
import _runkit as kit

SENTENCE = "The Corren Lighthouse was first lit in 1884 after years of shipwrecks."


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory):
    return kit.workspace(tmp_path_factory.mktemp("ingest-refusal"), sample=False)


def test_a_bad_upload_is_named_as_uploaded_in_one_line_without_a_traceback(
        ws, caplog: pytest.LogCaptureFixture) -> None:
    jobs = JobManager()
    files = [("good notes.txt", b"Plain text."), ("lighthouse notes.txt", b"\xff\xfe bad bytes")]
    with caplog.at_level(logging.INFO, logger="studio.common.jobs"):
        job = jobs.wait(tasks.submit_ingest(jobs, ws, "mine", files, "indexing.chunk_fixed", {}))
    assert job.status == "error"
    error = job.error or ""
    assert error.startswith("lighthouse notes.txt: not UTF-8 text"), error
    assert "uploads" not in error and str(ws.data_dir) not in error and "\n" not in error
    records = [r for r in caplog.records if r.name == "studio.common.jobs"]
    assert records and all(r.exc_info is None for r in records), records
    assert not list((ws.data_dir / "uploads").iterdir())          # the saved copies are gone


def test_a_line_of_a_jsonl_upload_is_named_with_its_line(ws) -> None:
    jobs = JobManager()
    files = [("docs.jsonl", b'{"id": "a", "text": "ok"}\n{"id": "b", "title": "no text"}\n')]
    job = jobs.wait(tasks.submit_ingest(jobs, ws, "mine", files, "indexing.chunk_fixed", {}))
    assert job.error == "docs.jsonl:2: each line needs a non-empty 'text' field (a string)"


def test_an_upload_with_no_text_at_all_is_named_without_a_traceback(
        ws, caplog: pytest.LogCaptureFixture) -> None:
    """Before: 'the files contain no text to ingest', naming no file, and a traceback logged."""
    jobs = JobManager()
    with caplog.at_level(logging.INFO, logger="studio.common.jobs"):
        job = jobs.wait(tasks.submit_ingest(jobs, ws, "mine", [("blank notes.txt", b"  \n\n")],
                                            "indexing.chunk_fixed", {}))
    assert job.error == "blank notes.txt: holds no text to ingest (empty or blank)", job.error
    records = [r for r in caplog.records if r.name == "studio.common.jobs"]
    assert records and all(r.exc_info is None for r in records), records
    two = jobs.wait(tasks.submit_ingest(jobs, ws, "mine", [("a.md", b""), ("b.txt", b" ")],
                                        "indexing.chunk_fixed", {}))
    assert two.error == "a.md: holds no text to ingest, and neither do the 1 other file(s)"


def test_a_failure_of_the_studio_still_logs_its_traceback(caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    jobs = JobManager()

    def broken(report: object) -> dict[str, object]:
        raise RuntimeError("a bug")

    with caplog.at_level(logging.INFO, logger="studio.common.jobs"):
        job = jobs.wait(jobs.submit("test", "broken", broken))
    assert job.status == "error" and job.error == "a bug"
    assert any(r.exc_info is not None for r in caplog.records), caplog.records


def test_the_cli_keeps_the_path_it_was_given(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff")
    with pytest.raises(DocumentError) as caught:
        read_documents([bad])
    assert str(caught.value).startswith(f"{bad}: not UTF-8 text")
    assert caught.value.path == bad and caught.value.line is None


def test_a_txt_title_is_its_file_name_and_the_prompt_shows_the_sentence_once(
        tmp_path: Path) -> None:
    txt = tmp_path / "corren_lighthouse.txt"
    txt.write_text(f"{SENTENCE}\nIts light was electrified in 1921.\n", encoding="utf-8")
    [doc] = read_documents([txt])
    assert doc["title"] == "corren_lighthouse"
    prompt = passages([doc], 1, max_chars=1000)
    assert prompt.count("first lit in 1884") == 1, prompt
    assert prompt.startswith("[1] corren_lighthouse: The Corren Lighthouse"), prompt


def test_a_md_title_is_its_heading_or_else_its_file_name(tmp_path: Path) -> None:
    headed, plain = tmp_path / "a.md", tmp_path / "b.md"
    headed.write_text("## Corren Lighthouse\n\nFirst lit in 1884.\n", encoding="utf-8")
    plain.write_text(f"{SENTENCE}\n", encoding="utf-8")
    assert [d["title"] for d in read_documents([headed, plain])] == ["Corren Lighthouse", "b"]
