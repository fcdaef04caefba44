"""JSON Lines (.jsonl): one document per line, {id, title, text, ...} as its author wrote it.

Keeps: the id (a line without one gets '<file>-<line>'), the title, the text (paragraphs split at
blank lines, in one section without a heading) and every other field as it is (year, url, ...:
they become the document's metadata). Loses nothing it is given; it has no headings, tables or
pages of its own.

Every refusal names the file and line: bytes that are not UTF-8, a line nested deeper than
MAX_LINE_DEPTH or holding NaN or lone surrogates, a line without a non-empty 'text' string, and a
field named '' , 'chroma:...' (the store's own keys) or '_document' (where a reader's structure
travels). Lines are read one at a time, never the whole file at once.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from ..errors import SpecError, short
from ..jsonread import decode_utf8, parse
from .archive import MAX_DOC_CHARS, Place
from .model import STRUCTURE_KEY, Document, plain_document

#: Deepest nesting of one .jsonl line (documents are flat records with a little metadata).
MAX_LINE_DEPTH = 32


def read_jsonl(lines: Iterable[bytes], place: Place) -> Iterator[tuple[int, Document]]:
    """(line number, document) for every non-blank line, in order."""
    for lineno, raw in enumerate(lines, 1):
        if raw.strip():
            yield lineno, _document(raw, lineno, place)


def _document(raw: bytes, lineno: int, place: Place) -> Document:
    where = f"{place.source}:{lineno}"
    try:
        obj = parse(decode_utf8(raw, where), where, max_depth=MAX_LINE_DEPTH,
                    max_string=MAX_DOC_CHARS)
    except SpecError as err:
        raise place.error(spec_reason(err), lineno) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("text", ""), str) or \
            not str(obj.get("text", "")).strip():
        raise place.error("each line needs a non-empty 'text' field (a string)", lineno)
    extra = {k: v for k, v in obj.items() if k not in ("id", "title", "text")}
    bad = [k for k in extra if not k or k.startswith("chroma:") or k == STRUCTURE_KEY]
    if bad:
        raise place.error(f"field name '{short(bad[0])}' is not allowed", lineno)
    doc_id = obj.get("id")
    return plain_document(_text(doc_id) if doc_id not in (None, "") else
                          f"{place.doc_id}-{lineno}", _text(obj.get("title") or ""),
                          place.source, "jsonl", obj["text"], extra)


def spec_reason(err: SpecError) -> str:
    """A SpecError of a JSON line as a DocumentError's reason."""
    if err.code == "bad_json":
        return f"not valid JSON ({err.detail.split(': ', 1)[-1]})"
    field = f" (field {err.field})" if err.field else ""
    return f"{err.detail}{field} [{err.code}]"


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
