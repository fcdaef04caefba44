"""Reading the files `flowkit ingest` takes: .jsonl ({id, title, text, ...}), .txt, .md, .pdf.

Every refusal is a DocumentError (a ResourceError) naming the file (and line, for .jsonl): bytes
that are not UTF-8, lines nested too deeply or holding NaN or lone surrogates, lines without text,
and an id used twice (which would silently overwrite the first document in the index). Its `path`,
`line` and `reason` are there apart, so a caller that saved the file under another name (the
studio's uploads) can name it as its user did.

A document's title: a .jsonl line's own `title`; a .md file's first line when it is a heading
(`# Title`); otherwise, a .txt, a .pdf or a .md without a heading, the file name without its
extension. The text is never cut into a title: a prompt shows "title: text", and a title taken
from the text's first sentence would repeat it there.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import DocumentError, SpecError, short
from ..jsonread import check_value, decode_utf8, parse

#: Deepest nesting of one .jsonl line (documents are flat records with a little metadata).
MAX_LINE_DEPTH = 32
#: Longest text in one document, in characters (the bound is there to stop hostile input only).
MAX_DOC_CHARS = 20_000_000
MAX_FILE_BYTES = 512 * 1024 * 1024   # one ingested file; a larger corpus: split it into files
#: Longest title taken from a Markdown heading, in characters.
MAX_TITLE_CHARS = 200


def read_documents(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Documents {id, title, text, source} from .jsonl ({id,title,text}), .txt, .md or .pdf files."""
    docs: list[dict[str, Any]] = []
    seen: dict[str, str] = {}            # id -> where it was first seen ('name.jsonl:3')
    for raw in paths:
        p = Path(raw)
        if not p.is_file():
            raise DocumentError(p, "file not found")
        size = p.stat().st_size
        if size > MAX_FILE_BYTES:
            raise DocumentError(p, f"{size:,} bytes is more than one ingest takes "
                                   f"({MAX_FILE_BYTES:,}); split it into smaller files")
        suffix = p.suffix.lower()
        if suffix == ".jsonl":
            found = list(_read_jsonl(p))
        elif suffix in (".txt", ".md"):
            found = _read_text(p)
        elif suffix == ".pdf":
            found = _read_pdf(p)
        else:
            raise DocumentError(p, f"unsupported file type '{suffix}'; use .jsonl, .txt, .md or .pdf")
        for line, doc in found:
            if doc["id"] in seen:
                raise DocumentError(p, f"duplicate id '{short(doc['id'])}' (first at "
                                       f"{seen[doc['id']]}); give every document its own id", line)
            seen[doc["id"]] = f"{p.name}:{line}" if line is not None else p.name
            docs.append(doc)
    return docs


def _read_jsonl(p: Path) -> Iterable[tuple[int | None, dict[str, Any]]]:
    with p.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            where = f"{p}:{lineno}"
            if not raw.strip():
                continue
            try:
                obj = parse(decode_utf8(raw, where), where, max_depth=MAX_LINE_DEPTH,
                            max_string=MAX_DOC_CHARS)
            except SpecError as err:
                raise DocumentError(p, _what(err), lineno) from None
            if not isinstance(obj, dict) or not isinstance(obj.get("text", ""), str) or \
                    not str(obj.get("text", "")).strip():
                raise DocumentError(p, "each line needs a non-empty 'text' field (a string)", lineno)
            extra = {k: v for k, v in obj.items() if k not in ("id", "title", "text")}
            bad = [k for k in extra if not k or k.startswith("chroma:")]
            if bad:
                raise DocumentError(p, f"field name '{short(bad[0])}' is not allowed", lineno)
            doc_id = obj.get("id")
            yield lineno, {"id": _text(doc_id) if doc_id not in (None, "") else f"{p.stem}-{lineno}",
                          "title": _text(obj.get("title") or ""), "text": obj["text"],
                          "source": p.name, **extra}


def _what(err: SpecError) -> str:
    if err.code == "bad_json":
        return f"not valid JSON ({err.detail.split(': ', 1)[-1]})"
    field = f" (field {err.field})" if err.field else ""
    return f"{err.detail}{field} [{err.code}]"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _read_text(p: Path) -> list[tuple[int | None, dict[str, Any]]]:
    try:
        text = decode_utf8(p.read_bytes(), str(p)).replace("\x00", "")
    except SpecError as err:
        raise DocumentError(p, f"{_what(err)}; save it as UTF-8 text") from None
    if not text.strip():
        return []
    return [(None, {"id": p.stem, "title": text_title(p, text), "text": text, "source": p.name})]


def text_title(p: Path, text: str) -> str:
    """A .txt or .md file's title: a Markdown file's first line when it is a heading ('# Title',
    cut to MAX_TITLE_CHARS), else the file name without its extension ('lighthouses.txt' ->
    'lighthouses'); never a sentence of the text."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    if p.suffix.lower() == ".md" and first.startswith("#"):
        heading = first.lstrip("#").strip()[:MAX_TITLE_CHARS]
        if heading:
            return heading
    return p.stem


def _read_pdf(p: Path) -> list[tuple[int | None, dict[str, Any]]]:
    from pypdf import PdfReader
    try:
        reader = PdfReader(str(p))
        text = "\n".join((page.extract_text() or "") for page in reader.pages)
    except Exception as err:  # pypdf raises several kinds for broken files
        raise DocumentError(p, f"cannot read PDF: {short(str(err))}") from err
    if not text.strip():
        return []
    try:
        check_value(text, str(p), max_depth=1, max_string=MAX_DOC_CHARS)
    except SpecError as err:
        raise DocumentError(p, _what(err)) from None
    return [(None, {"id": p.stem, "title": p.stem, "text": text, "source": p.name})]
