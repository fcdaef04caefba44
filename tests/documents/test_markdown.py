"""Markdown and plain text: headings make the section path, pipe tables become tables, a fenced
block is kept as written (a '#' in it is no heading), paragraphs split at blank lines."""
from __future__ import annotations

from pathlib import Path

import pytest

from flowkit.documents import archive
from flowkit.documents.model import Table
from flowkit.documents.read import read_files
from flowkit.errors import DocumentError

MARKDOWN = """# Storage Guide

Intro paragraph
on two lines.

## Sizes

Table 2: Integer sizes

| Name | Size | Note |
|------|-----:|------|
| smallint | 2 bytes | short |
| bigint | 8 bytes |
| a \\| b | c | d |

```sql
# not a heading
SELECT 1;
```

### Deep

Text under deep.

## Other ##

Last words.
"""


def test_markdown_sections_table_and_fence(tmp_path: Path) -> None:
    path = tmp_path / "guide.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    [doc] = read_files([path])
    assert (doc.id, doc.title, doc.source, doc.format) == ("guide", "Storage Guide", "guide.md",
                                                           "md")
    assert [s.path for s in doc.sections] == [
        ("Storage Guide",), ("Storage Guide", "Sizes"), ("Storage Guide", "Sizes", "Deep"),
        ("Storage Guide", "Other")]
    assert doc.sections[0].blocks[0].text == "Intro paragraph\non two lines."
    [(section, table)] = doc.tables()
    assert section.path == ("Storage Guide", "Sizes")
    assert table == Table(("Name", "Size", "Note"),
                          (("smallint", "2 bytes", "short"), ("bigint", "8 bytes", ""),
                           ("a | b", "c", "d")), "Table 2: Integer sizes")
    fence = doc.sections[1].blocks[1]
    assert fence.kind == "text" and fence.text == "# not a heading\nSELECT 1;"
    assert all(not s.pages for s in doc.sections)


def test_text_is_one_section_of_paragraphs_titled_by_its_name(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"# Not a heading in text\n\nSecond paragraph.\r\n\r\nThird.\n")
    [doc] = read_files([path])
    assert doc.title == "notes" and len(doc.sections) == 1 and doc.sections[0].path == ()
    assert [b.text for b in doc.sections[0].blocks] == [
        "# Not a heading in text", "Second paragraph.", "Third."]


def test_a_blank_file_holds_no_document(tmp_path: Path) -> None:
    (tmp_path / "blank.md").write_text("  \n\n", encoding="utf-8")
    assert read_files([tmp_path / "blank.md"]) == []


def test_text_longer_than_a_document_holds_is_refused(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "MAX_DOC_CHARS", 10)
    path = tmp_path / "long.txt"
    path.write_text("é" * 11, encoding="utf-8")
    with pytest.raises(DocumentError, match=r"long.txt: its text is 11 characters"):
        read_files([path])
