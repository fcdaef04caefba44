"""A .zip or a folder of documents: read as the files it holds, each named by its path there."""
from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import docx
import pytest

from flowkit.documents.read import read_files
from flowkit.errors import DocumentError

PAGE = ("<html><head><title>Types</title></head><body><nav>NAV</nav><h1>Types</h1>"
        "<table><caption>Sizes</caption><tr><th>Name</th><th>Size</th></tr>"
        "<tr><td>bigint</td><td>8 bytes</td></tr></table></body></html>")
MARKDOWN = "# Guide\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\n# not a heading\n```\n"


def _docx_bytes() -> bytes:
    word = docx.Document()
    word.add_heading("Word Heading", level=1)
    word.add_paragraph("Word text.")
    out = io.BytesIO()
    word.save(out)
    return out.getvalue()


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_a_zip_is_read_as_its_files_sorted_and_named_by_their_path(tmp_path: Path) -> None:
    inner = _zip(tmp_path / "inner.zip", {"x.txt": b"inside a zip inside a zip"}).read_bytes()
    path = _zip(tmp_path / "docs.zip", {
        "site/b.html": PAGE.encode(), "a.md": MARKDOWN.encode(), "c.docx": _docx_bytes(),
        "notes.txt": b"Plain notes.", "lines.jsonl": b'{"id": "j1", "text": "a line"}\n',
        "inner.zip": inner, "logo.png": b"\x89PNG", ".hidden.txt": b"hidden",
        "__MACOSX/._a.md": b"resource fork", "site/": b""})
    docs = read_files([path])
    assert [(d.source, d.id, d.format) for d in docs] == [
        ("docs.zip/a.md", "docs.zip/a", "md"), ("docs.zip/c.docx", "docs.zip/c", "docx"),
        ("docs.zip/lines.jsonl", "j1", "jsonl"), ("docs.zip/notes.txt", "docs.zip/notes", "txt"),
        ("docs.zip/site/b.html", "docs.zip/site/b", "html")]
    assert docs[0].title == "Guide" and docs[0].tables()[0][1].rows == (("1", "2"),)
    assert docs[1].sections[0].path == ("Word Heading",)
    html = docs[4]
    assert "NAV" not in html.text and html.tables()[0][1].caption == "Sizes"


def test_a_zip_or_folder_with_nothing_to_read_is_refused(tmp_path: Path) -> None:
    path = _zip(tmp_path / "pictures.zip", {"a.png": b"x", "b.zip": b"PK"})
    with pytest.raises(DocumentError, match=r"pictures.zip: holds no file to read \(2 of other"):
        read_files([path])
    folder = tmp_path / "empty"
    folder.mkdir()
    (folder / "a.css").write_text("x", encoding="utf-8")
    with pytest.raises(DocumentError, match=r"empty: holds no file to read \(1 of other"):
        read_files([folder])


def test_a_folder_reads_a_zip_in_it_and_names_its_members_below_it(tmp_path: Path) -> None:
    folder = tmp_path / "kb"
    folder.mkdir()
    _zip(folder / "more.zip", {"a.txt": b"zipped"})
    (folder / "b.txt").write_text("plain", encoding="utf-8")
    assert [(d.source, d.id) for d in read_files([folder])] == [
        ("kb/b.txt", "kb/b"), ("kb/more.zip/a.txt", "kb/more.zip/a")]


def test_a_link_out_of_the_folder_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("SECRET", encoding="utf-8")
    folder = tmp_path / "kb"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("inside", encoding="utf-8")
    os.symlink(outside, folder / "link.txt")
    os.symlink(tmp_path, folder / "sub" / "up")          # a link to a folder: never walked
    os.symlink(folder / "a.txt", folder / "same.txt")     # a link inside the folder: read
    docs = read_files([folder])
    assert [d.source for d in docs] == ["kb/a.txt", "kb/same.txt"]
    assert all("SECRET" not in d.text for d in docs)


def test_a_duplicate_id_is_refused_naming_both_places(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    (tmp_path / "one" / "a.txt").write_text("first", encoding="utf-8")
    (tmp_path / "two" / "a.md").write_text("second", encoding="utf-8")
    with pytest.raises(DocumentError, match=r"a.md: duplicate id 'a' \(first at a.txt\)"):
        read_files([tmp_path / "one" / "a.txt", tmp_path / "two" / "a.md"])
    path = _zip(tmp_path / "lines.zip", {"d.jsonl": b'{"id": "1", "text": "a"}\n'
                                                    b'{"id": "1", "text": "b"}\n'})
    with pytest.raises(DocumentError) as caught:
        read_files([path])
    assert str(caught.value) == (f"{path}: member 'd.jsonl', line 2: duplicate id '1' (first "
                                 f"at lines.zip/d.jsonl:1); give every document its own id")


def test_an_unknown_file_type_is_refused_listing_the_known_ones(tmp_path: Path) -> None:
    path = tmp_path / "slides.xyz"
    path.write_bytes(b"x")
    with pytest.raises(DocumentError) as caught:
        read_files([path])
    assert str(caught.value) == (f"{path}: unsupported file type '.xyz'; use .pdf, .docx, "
                                 f".html, .md, .txt, .jsonl or .zip")
