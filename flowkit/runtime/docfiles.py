"""Reading the files `flowkit ingest` takes, as the plain records ingest passes to chunkers.

The readers live in `flowkit.documents` (one per format: .pdf, .docx, .html/.htm, .md, .txt,
.jsonl, and a .zip or a folder of them; see `flowkit.documents.read`); this module keeps the
names the rest of flowkit has always imported from here. `read_documents(paths)` is one record
{id, title, text, source, format, ...} per document, the typed document itself under
`flowkit.documents.model.STRUCTURE_KEY`.

Every refusal is a DocumentError (a ResourceError) naming the file (and line, for .jsonl; the
member, for a .zip): bytes that are not UTF-8, lines nested too deeply or holding NaN or lone
surrogates, lines without text, a file or a zip too large, an id used twice (which would silently
overwrite the first document in the index). Its `path`, `line` and `reason` are there apart, so a
caller that saved the file under another name (the studio's uploads) can name it as its user did.

A document's title: a .jsonl line's own `title`; a .md file's first line when it is a heading
(`# Title`); an HTML page's <title>; a .docx file's title property; otherwise the file name
without its extension. The text is never cut into a title: a prompt shows "title: text", and a
title taken from the text's first sentence would repeat it there.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..documents.archive import (
    MAX_ARCHIVE_FILES,
    MAX_DOC_CHARS,
    MAX_FILE_BYTES,
    MAX_TEXT_BYTES,
    MAX_ZIP_BYTES,
    MAX_ZIP_RATIO,
)
from ..documents.jsonl import MAX_LINE_DEPTH
from ..documents.markdown import MAX_TITLE_CHARS, text_title
from ..documents.read import SUFFIXES, read_files

__all__ = ["MAX_ARCHIVE_FILES", "MAX_DOC_CHARS", "MAX_FILE_BYTES", "MAX_LINE_DEPTH",
           "MAX_TEXT_BYTES", "MAX_TITLE_CHARS", "MAX_ZIP_BYTES", "MAX_ZIP_RATIO", "SUFFIXES",
           "read_documents", "text_title"]


def read_documents(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """One record {id, title, text, source, format, ...} per document of the files and folders
    at `paths` (see flowkit.documents.read)."""
    return [doc.record() for doc in read_files(paths)]
