"""Knowledge bases, as the Knowledge page and the CLI use them: the list with counts, creating
one, ingesting files (unless ready), chunkers and their params, side-by-side search (BM25, dense,
hybrid), a parse preview of files (their sections and tables as the readers see them) beside the
chunks a knowledge base has of them, the knowledge-graph index, attaching a SQLite file (through
flowkit.runtime.kbsql, the read-only guard text-to-SQL runs behind)."""
from __future__ import annotations

import io
import json
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowkit import registry
from flowkit.contract import Operator
from flowkit.documents.model import Document, Section
from flowkit.documents.provenance import pages_text, provenance
from flowkit.documents.read import read_files
from flowkit.errors import DocumentError, FlowkitError, ResourceError
from flowkit.eval.datasets import Dataset
from flowkit.ingest import SAMPLE_KB, ingest, ingest_unless_ready
from flowkit.operators._fuse import rrf
from flowkit.operators.indexing.graph import load_graph
from flowkit.runtime.kb import CHANGING, COMPLETE, INTERRUPTED, KnowledgeBase, check_name
from flowkit.runtime.kblock import kb_write_lock
from flowkit.runtime.kbsql import (
    ALLOW_KEY,
    ATTACHED_FILE,
    SQLITE_HEADER,
    attach_database,
    open_readonly,
    resolve_allowlist,
)

from .uploads import name_problem, save_uploads
from .workspace import Workspace

__all__ = ["ATTACHED_FILE", "SAMPLE_KB", "SQLITE_HEADER", "KnowledgeBase", "ingest",
           "ingest_unless_ready", "pages_text", "provenance"]
GRAPH_FILE = "graph.json"
#: The file types the Knowledge page accepts and `flowkit ingest` reads (a .zip holds any of the
#: others); the readers are flowkit/documents/read.py.
UPLOAD_TYPES = ["pdf", "docx", "html", "htm", "md", "txt", "jsonl", "zip"]
#: The chunker a new ingest starts from: the structure-aware one where it is registered.
DEFAULT_CHUNKERS = ("indexing.chunk_structure", "indexing.chunk_fixed")
#: How many body rows of a table the parse preview keeps.
PREVIEW_ROWS = 5
#: The knowledge bases table's state column, by KnowledgeBase.state.
STATE_TEXT = {COMPLETE: "complete", CHANGING: "being changed",
              INTERRUPTED: "⚠ interrupted: ingest again"}
#: The state column of a knowledge base with no chunk yet.
EMPTY_TEXT = "empty: add files"


def kb_rows(resources: Any) -> list[dict[str, Any]]:
    """One row per knowledge base: name, state (STATE_TEXT: marks one whose last ingest was cut
    short; EMPTY_TEXT for one with no chunk), chunks, documents, chunker, embedder, graph, database."""
    out = []
    for name in resources.kb_names():
        kb = resources.kb(name)
        meta = kb.meta()
        try:
            count = kb.count()
        except FlowkitError:
            count = meta.get("chunks", 0)
        state = STATE_TEXT.get(kb.state, kb.state)
        if kb.state == COMPLETE and not count:
            state = EMPTY_TEXT          # nothing ingested yet is not a complete ingest
        out.append({"name": name, "state": state, "chunks": count,
                    "documents": meta.get("documents", 0),
                    "chunker": meta.get("chunker", ""), "embedder": meta.get("embedder", ""),
                    "graph": (kb.dir / GRAPH_FILE).is_file(),
                    "database": attached_database(kb) is not None,
                    "description": meta.get("description", "")})
    return out


def create(resources: Any, name: str, description: str = "") -> KnowledgeBase:
    """A new, empty knowledge base (its folder and meta.json); ingest files into it next.
    Written under the knowledge base's write lock, so it cannot race an ingest of the same name."""
    name = check_name(name.strip())
    kb = resources.kb(name)
    kb.require_name_for_new()
    with kb_write_lock(kb.dir, name):
        if name in resources.kb_names() or kb.exists:
            raise ResourceError(f"a knowledge base named '{name}' already exists")
        kb.update_meta(name=name, description=description.strip(), created=time.time(), chunks=0)
    return kb


def chunkers() -> dict[str, type[Operator[Any]]]:
    """Indexing operators that can chunk documents (they have a chunk() method)."""
    return {k: c for k, c in registry.all_operators().items() if hasattr(c, "chunk")}


def default_chunker(keys: Iterable[str]) -> str:
    """The chunker a new ingest starts from: the first of DEFAULT_CHUNKERS among `keys` (the
    registered chunkers), else the first of them ("" when there is none)."""
    keys = list(keys)
    return next((k for k in DEFAULT_CHUNKERS if k in keys), keys[0] if keys else "")


def default_params(key: str) -> dict[str, Any]:
    """The chunker's params with their defaults (what the params box starts from)."""
    cls = chunkers()[key]
    try:
        return cls.Params().model_dump(mode="json")
    except Exception:  # noqa: BLE001 - Params with required fields: start from nothing
        return {}


def parse_params(key: str, text: str) -> dict[str, Any]:
    """The params box as a dict, checked against the chunker's Params (ValueError if wrong)."""
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError as err:
        raise ValueError(f"params are not JSON (line {err.lineno}: {err.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("params must be a JSON object")
    from pydantic import ValidationError as PydanticValidationError
    try:
        chunkers()[key].Params.model_validate(data)
    except PydanticValidationError as err:
        first = err.errors()[0]
        raise ValueError(f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}") from None
    return data


def search(kb: Any, query: str, k: int = 5) -> dict[str, list[dict[str, Any]]]:
    """BM25, dense and hybrid (reciprocal rank fusion of the two) results for one query."""
    lexical = kb.lexical(query, k)
    dense = kb.dense(query, k)
    hybrid = rrf([dense, lexical])[:k]
    return {"BM25": lexical, "Dense": dense, "Hybrid (RRF)": hybrid}


def load_kg(kb_dir: Path) -> Any:
    """The knowledge-graph index of a knowledge base (networkx), or None when it has none."""
    path = kb_dir / GRAPH_FILE
    if not path.is_file():
        return None
    return load_graph(kb_dir)


def attached_database(kb: Any) -> Path | None:
    """The SQLite file attached to a knowledge base for text-to-SQL, if any."""
    for name in (ATTACHED_FILE, "attached.db", "database.sqlite"):
        p = kb.dir / name
        if p.is_file():
            return p
    return None


def attach(data_dir: Path, kb: Any, upload: Path, tables: Iterable[str] | None = None,
           columns: Mapping[str, Iterable[str]] | None = None) -> Path:
    """Attach a SQLite file through the text-to-SQL operator's helper: header, integrity check
    and tables checked, a read-only snapshot copied to <kb dir>/attached.sqlite. Returns where it
    went; ResourceError names what is wrong with the file.

    `tables` (default: every table and view in the file) and optional `columns` per table are the
    allowlist text-to-SQL queries are held to; it is stored in the knowledge base's meta.json
    (`database_allow`). A name not in the file is refused and nothing changes."""
    with upload.open("rb") as fh:
        if fh.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise ResourceError(f"{upload.name} is not a SQLite database (wrong header)")
    with kb_write_lock(kb.dir, kb.name):
        out = Path(attach_database(data_dir, kb.name, upload, tables, columns))
        con = open_readonly(out)
        try:
            allow = resolve_allowlist(con, tables, columns)
        finally:
            con.close()
        kb.update_meta(database=out.name, **{ALLOW_KEY: allow.to_meta()})
    return out


def attach_upload(data_dir: Path, kb: Any, name: str, data: bytes,
                  tables: Iterable[str] | None = None) -> Path:
    """Attach an uploaded SQLite file: its name checked like every upload (service.uploads: no
    path, NUL, '..' or over-long name; UploadRefused names it), saved to a temporary folder,
    then `attach`ed. Nothing is created for a refused name."""
    with tempfile.TemporaryDirectory() as tmp:
        [path] = save_uploads(Path(tmp) / "upload", [(name, data)])
        return attach(data_dir, kb, path, tables)


def allowed_tables(kb: Any) -> list[str] | None:
    """The tables text-to-SQL may read in the attached database (None: no allowlist stored)."""
    allow = kb.meta().get(ALLOW_KEY)
    return list(allow.get("tables", [])) if isinstance(allow, dict) else None


def upload_tables(data: bytes) -> list[str]:
    """The tables and views of an uploaded SQLite file (to choose the allowlist from); [] when
    it is not a readable SQLite file."""
    import sqlite3
    import tempfile
    if not data.startswith(SQLITE_HEADER):
        return []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "upload.sqlite"
        path.write_bytes(data)
        try:
            con = open_readonly(path)
            try:
                return list(resolve_allowlist(con).tables)
            finally:
                con.close()
        except (sqlite3.Error, ResourceError):
            return []


def sqlite_tables(path: Path) -> list[tuple[str, int]]:
    """(table, rows) of a SQLite file, opened read-only."""
    import sqlite3
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return [(n, con.execute(f'SELECT COUNT(*) FROM "{n}"').fetchone()[0]) for n in names]
    finally:
        con.close()


def ingest_files(ws: Workspace, kb: str, paths: Iterable[Path],
                 chunker: str | None = None,
                 params: Mapping[str, Any] | None = None,
                 progress: Callable[[int, int], None] | None = None) -> int:
    """Chunk, embed and index files into a knowledge base (created if new). Returns chunks.
    `chunker` None: the knowledge base's own, the structure-aware one for a new knowledge base
    (flowkit.ingest.chunker_for)."""
    return ingest(ws.resources, kb, list(paths), chunker, dict(params) if params is not None else None,
                  progress=progress)


def ingest_corpus(ws: Workspace, dataset: Dataset, kb: str, *, force: bool = False,
                  progress: Callable[[int, int], None] | None = None) -> int:
    """Ingest a dataset's corpus.jsonl into `kb` unless the knowledge base is ready (listed,
    complete, with chunks; one a crash left incomplete is ingested again): the one "ingest unless
    ready" the CLI and the studio share. Returns chunks added, 0 when it was ready; FlowkitError
    when it is not ready and the dataset has no corpus."""
    if not dataset.corpus:
        if ws.resources.kb(kb).ready and not force:
            return 0
        raise FlowkitError(f"dataset '{dataset.name}' has no corpus.jsonl to ingest")
    return ingest_unless_ready(ws.resources, kb, [dataset.corpus], force=force, progress=progress)


def upload_files(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Uploaded (name, bytes) files as ingest saves them: the files of a folder upload (names
    with a folder path, 'site/guide/a.html') go into one .zip named after their top folder
    ('site.zip' holding 'guide/a.html', read as 'site/guide/a.html' by the .zip reader, with its
    checks); other files unchanged."""
    def parts(name: str) -> list[str]:
        """A folder upload's relative path, or [] for anything else (a plain name; a path that
        is absolute, climbs with '..' or holds an empty or refused part stays as it is, for
        save_uploads to refuse by name)."""
        if "/" not in name:
            return []
        names = name.split("/")
        return names if all(name_problem(p) is None for p in names) else []

    nested = [(name, data) for name, data in files if parts(name)]
    if not nested:
        return list(files)
    tops = {parts(name)[0] for name, _ in nested}
    one_top = len(tops) == 1        # the .zip is named after it: not repeated inside
    top, skip = (next(iter(tops)), 1) if one_top else ("folder", 0)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in nested:
            zf.writestr("/".join(parts(name)[skip:]), data)
    return [*(f for f in files if not parts(f[0])), (f"{top}.zip", buf.getvalue())]


# ---- parse preview: a file's sections and tables as flowkit reads them -------------------------
@dataclass(frozen=True)
class SectionPreview:
    """One section: its id, heading path ("" before the first heading), pages ("23-24", "" for a
    format without pages), and how many blocks and tables it holds."""

    id: str
    path: str
    pages: str
    blocks: int
    tables: int


@dataclass(frozen=True)
class TablePreview:
    """One table: the section it is in, its caption, header, number of body rows, and the first
    PREVIEW_ROWS of them."""

    section: str
    caption: str
    header: tuple[str, ...]
    rows: int
    first_rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class DocumentPreview:
    """One document as its reader made it: where it came from, its title, format, last page (0:
    no pages), its sections and its tables."""

    source: str
    title: str
    format: str
    pages: int
    sections: tuple[SectionPreview, ...]
    tables: tuple[TablePreview, ...]


def _pages(section: Section) -> str:
    pages = section.pages
    if not pages:
        return ""
    return str(pages[0]) if pages[0] == pages[-1] else f"{pages[0]}-{pages[-1]}"


def preview_documents(docs: Iterable[Document]) -> list[DocumentPreview]:
    """The preview records of typed documents, in order."""
    out = []
    for doc in docs:
        sections = tuple(SectionPreview(s.id, s.path_text(), _pages(s), len(s.blocks),
                                        sum(b.table is not None for b in s.blocks))
                         for s in doc.sections)
        tables = tuple(TablePreview(s.path_text(), t.caption, t.header, len(t.rows),
                                    t.rows[:PREVIEW_ROWS]) for s, t in doc.tables())
        out.append(DocumentPreview(doc.source, doc.title, doc.format, doc.pages, sections, tables))
    return out


def parse_preview(paths: Iterable[str | Path]) -> list[DocumentPreview]:
    """What the readers make of files, folders and .zip files (flowkit.documents.read): each
    document's sections and tables. Writes nothing; DocumentError names a file it cannot read."""
    return preview_documents(read_files([Path(p) for p in paths]))


def preview_uploads(files: list[tuple[str, bytes]]) -> list[DocumentPreview]:
    """`parse_preview` of uploaded (name, bytes) files: saved to a temporary folder under their
    checked names (service.uploads; UploadRefused names a bad one; a folder's files zipped by
    `upload_files`) and removed after. A file the readers refuse raises DocumentError naming it
    as the user named it, not by its saved copy."""
    files = upload_files(files)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "preview"
        paths = save_uploads(folder, files)
        names = {path: name for path, (name, _) in zip(paths, files)}
        try:
            return parse_preview(paths)
        except DocumentError as err:
            shown = names.get(err.path) or _relative(err.path, folder)
            raise DocumentError(Path(shown), err.reason, err.line) from None


def _relative(path: Path, folder: Path) -> str:
    """A path inside the temporary upload folder as the user knows it (the part under it)."""
    try:
        return str(Path(path).relative_to(folder))
    except ValueError:
        return Path(path).name


def document_chunks(kb: KnowledgeBase, source: str, limit: int = 200) -> list[dict[str, Any]]:
    """The chunks a knowledge base holds of one document, by its `source` metadata (the file as
    its user named it): {id, title, text, meta}, at most `limit`, in the store's order."""
    if not kb.exists or not kb.count():
        return []
    rows = kb.store.get(kb.name, where={"source": source}, limit=limit)
    rows.sort(key=lambda r: r[2]["position"] if isinstance(r[2].get("position"), int) else 0)
    return [{"id": cid, "title": str(meta.get("title", "")), "text": text, "meta": meta}
            for cid, text, meta in rows]
