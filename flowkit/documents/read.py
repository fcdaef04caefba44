"""Reading the files a user ingests, whatever their format: `read_files(paths)`.

One reader per format, chosen by the file's suffix: .pdf (pdf.py), .docx (docx.py), .html and
.htm (html.py), .md and .txt (markdown.py), .jsonl (jsonl.py); a .zip or a folder is read as the
files it holds (archive.py: walked recursively and sorted, hidden files left out, files of other
types skipped). Every reader returns typed documents (model.py) and writes nothing: ingest writes
only once every file has been read.

Ids: a file given on its own is named by its file name ('notes.txt') and its document's id is its
stem ('notes'); a file in a folder or zip by its path there with the root's name in front
('site/ch1/intro.html', id 'site/ch1/intro'); a .jsonl line by its own id. The same id twice in
one ingest (two .jsonl lines, two files of the same name) is refused, since the second document
would silently overwrite the first in the index.

Every refusal is one DocumentError naming the file (a zip and its member; a .jsonl file and line):
see archive.py for the bounds on sizes and the zip checks, and each reader for its own.
"""
from __future__ import annotations

import io
import logging
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from ..errors import DocumentError, SpecError, short
from ..jsonread import read_file
from . import archive
from .archive import Place, Walk
from .jsonl import read_jsonl
from .markdown import read_markdown, read_text
from .model import Document

log = logging.getLogger(__name__)

#: Every suffix a file may have, in the order an error lists them.
SUFFIXES = (".pdf", ".docx", ".html", ".htm", ".md", ".txt", ".jsonl", ".zip")
_HINT = ".pdf, .docx, .html, .md, .txt, .jsonl or .zip"

#: (line of a .jsonl file or None, document)
Found = tuple[int | None, Document]
#: (where it was read, line of a .jsonl file or None, document)
Located = tuple[Place, int | None, Document]


def read_files(paths: Iterable[str | Path]) -> list[Document]:
    """The documents of the files and folders at `paths`, in order."""
    ids = _Ids()
    docs: list[Document] = []
    for raw in paths:
        for place, line, doc in _read_path(Path(raw)):
            ids.claim(doc.id, place, line)
            docs.append(doc)
    return docs


class _Ids:
    """The ids seen so far, each with where it was first seen."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def claim(self, doc_id: str, place: Place, line: int | None) -> None:
        if doc_id in self.seen:
            raise place.error(f"duplicate id '{short(doc_id)}' (first at {self.seen[doc_id]}); "
                              f"give every document its own id", line)
        self.seen[doc_id] = place.where(line)


def _read_path(p: Path) -> Iterator[Located]:
    if p.is_dir():
        yield from _read_walk(p, archive.walk_folder(p, _readable_in_folder), None)
        return
    if not p.is_file():
        raise DocumentError(p, "file not found")
    suffix = p.suffix.lower()
    if suffix not in SUFFIXES:
        raise DocumentError(p, f"unsupported file type '{suffix}'; use {_HINT}")
    archive.check_size(p, p.stat().st_size, suffix)
    if suffix == ".zip":
        yield from _read_zip(p, p.name)
    else:
        place = archive.file_place(p)
        yield from ((place, line, doc) for line, doc in _read_disk_file(place))


def _readable_in_folder(suffix: str) -> bool:
    return suffix in SUFFIXES


def _readable_in_zip(suffix: str) -> bool:
    return suffix in SUFFIXES and suffix != ".zip"


def _read_zip(path: Path, root: str) -> Iterator[Located]:
    with archive.open_zip(path) as zf:
        archive.check_zip(path, zf)
        members = archive.MemberReader(path, zf)
        walk = archive.walk_zip(path, zf, root, _readable_in_zip)
        yield from _read_walk(path, walk, members)


def _read_walk(root: Path, walk: Walk,
               members: archive.MemberReader | None) -> Iterator[Located]:
    """The documents of a folder's files (`members` None) or a zip's members."""
    if not walk.places:
        raise DocumentError(root, f"holds no file to read ({walk.skipped} of other types "
                                  f"skipped); it takes {_HINT} files")
    if walk.skipped:
        log.info("%s: skipped %d file(s) of types it does not read", root, walk.skipped)
    for place in walk.places:
        found: Iterable[Found]
        if members is not None:
            found = _read_member(place, members)
        else:
            archive.check_size(place.path, place.path.stat().st_size, place.suffix)
            if place.suffix == ".zip":
                yield from _read_zip(place.path, place.source)
                continue
            found = _read_disk_file(place)
        yield from ((place, line, doc) for line, doc in found)


def _read_disk_file(place: Place) -> Iterator[Found]:
    """The documents of a file on disk whose size has been checked."""
    if place.suffix == ".pdf":
        yield from ((None, d) for d in _read_pdf(place.path, place))
    elif place.suffix == ".jsonl":
        with place.path.open("rb") as fh:
            yield from read_jsonl(fh, place)
    else:
        yield from ((None, d) for d in _byte_reader(place.suffix)(_bytes(place), place))


def _bytes(place: Place) -> bytes:
    """The file's bytes, read bounded (a regular file only; one that grew since its size was
    checked is still read no further than the bound)."""
    limit = archive.MAX_TEXT_BYTES if place.suffix in (".txt", ".md") else archive.MAX_FILE_BYTES
    try:
        return read_file(place.path, limit, place.source)
    except SpecError as err:
        raise place.error(err.detail) from None


def _read_member(place: Place, members: archive.MemberReader) -> list[Found]:
    data = members.read(place)
    if place.suffix == ".jsonl":
        return list(read_jsonl(io.BytesIO(data), place))
    if place.suffix == ".pdf":
        return [(None, d) for d in _read_pdf_bytes(data, place)]
    return [(None, d) for d in _byte_reader(place.suffix)(data, place)]


def _byte_reader(suffix: str) -> Callable[[bytes, Place], list[Document]]:
    """The reader of a format read from its bytes (lxml and python-docx are imported only when
    a page or a Word file is read)."""
    if suffix == ".docx":
        from .docx import read_docx
        return read_docx
    if suffix in (".html", ".htm"):
        from .html import read_html
        return read_html
    return read_markdown if suffix == ".md" else read_text


def _read_pdf(path: Path, place: Place) -> list[Document]:
    from .pdf import read_pdf  # imported only when a PDF is read
    return read_pdf(path, place.source, place.doc_id)


def _read_pdf_bytes(data: bytes, place: Place) -> list[Document]:
    """A PDF inside a zip: the PDF reader takes a path, so the member is put in a private
    temporary folder for as long as it is read, and named as the member in any error."""
    with tempfile.TemporaryDirectory(prefix="flowkit-pdf-") as folder:
        path = Path(folder) / "member.pdf"
        path.write_bytes(data)
        try:
            return _read_pdf(path, place)
        except DocumentError as err:
            raise place.error(err.reason, err.line) from None
