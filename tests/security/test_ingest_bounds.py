"""Issue 47 finding 6: ingest of plain text had no bound (a 200 MB .txt grew to 2.8 GB of memory in
150 s; .jsonl and .pdf had character caps, .txt and .md none) and a 100,000-page PDF ran past
150 s. Now a .txt or .md larger than the character cap could hold is refused by its size before a
byte is read, and a PDF is refused by its page count before a page is parsed."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from flowkit.documents.archive import MAX_TEXT_BYTES
from flowkit.documents.pdf import MAX_PAGES
from flowkit.errors import DocumentError
from flowkit.runtime.docfiles import read_documents


@pytest.mark.parametrize("suffix", [".txt", ".md"])
def test_a_200_mb_text_file_is_refused_by_its_size_at_once(tmp_path: Path, suffix: str) -> None:
    big = tmp_path / f"huge{suffix}"
    with big.open("wb") as f:          # sparse: 200 MB announced, nothing written
        f.truncate(200 * 1024 * 1024)
    assert big.stat().st_size > MAX_TEXT_BYTES
    began = time.monotonic()
    with pytest.raises(DocumentError) as err:
        read_documents([big])
    assert f"huge{suffix}" in str(err.value)
    assert time.monotonic() - began < 5


def test_a_pdf_of_more_pages_than_the_bound_is_refused_before_parsing(tmp_path: Path) -> None:
    from pypdf import PdfWriter
    writer = PdfWriter()
    for _ in range(MAX_PAGES + 1):
        writer.add_blank_page(width=72, height=72)
    many = tmp_path / "many.pdf"
    with many.open("wb") as f:
        writer.write(f)
    began = time.monotonic()
    with pytest.raises(DocumentError) as err:
        read_documents([many])
    assert "many.pdf" in str(err.value) and f"has {MAX_PAGES + 1:,} pages" in str(err.value)
    assert time.monotonic() - began < 30
