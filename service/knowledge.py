"""Knowledge bases, as the Knowledge page and the CLI use them: the list with counts, creating
one, ingesting files (unless ready), chunkers and their params, side-by-side search (BM25, dense,
hybrid), the knowledge-graph index, attaching a SQLite file (through flowkit.runtime.kbsql, the
read-only guard text-to-SQL runs behind)."""
from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from flowkit import registry
from flowkit.contract import Operator
from flowkit.errors import FlowkitError, ResourceError
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

from .uploads import save_uploads
from .workspace import Workspace

__all__ = ["ATTACHED_FILE", "SAMPLE_KB", "SQLITE_HEADER", "KnowledgeBase", "ingest",
           "ingest_unless_ready"]
GRAPH_FILE = "graph.json"
UPLOAD_TYPES = ["txt", "md", "jsonl", "pdf"]
#: The knowledge bases table's state column, by KnowledgeBase.state.
STATE_TEXT = {COMPLETE: "complete", CHANGING: "being changed",
              INTERRUPTED: "⚠ interrupted: ingest again"}


def kb_rows(resources: Any) -> list[dict[str, Any]]:
    """One row per knowledge base: name, state (STATE_TEXT: marks one whose last ingest was cut
    short), chunks, documents, chunker, embedder, graph, database."""
    out = []
    for name in resources.kb_names():
        kb = resources.kb(name)
        meta = kb.meta()
        try:
            count = kb.count()
        except FlowkitError:
            count = meta.get("chunks", 0)
        out.append({"name": name, "state": STATE_TEXT.get(kb.state, kb.state), "chunks": count,
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
                 chunker: str = "indexing.chunk_fixed",
                 params: Mapping[str, Any] | None = None,
                 progress: Callable[[int, int], None] | None = None) -> int:
    """Chunk, embed and index files into a knowledge base (created if new). Returns chunks."""
    return ingest(ws.resources, kb, list(paths), chunker, dict(params or {}), progress=progress)


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
