"""Which engines a workspace uses, in words, without starting any of them (the Settings page).

`describe_engines(data_dir, settings)` says which database holds flows, runs and the cache (a
SQLite file, or a server URL with its password masked), which vector engine holds the knowledge
bases (Chroma embedded in a folder, or a Chroma server at host:port), and which LLM backend runs
the model with how many threads (0 in the settings resolved to `default_threads()`). It reads the
settings only: nothing is loaded, opened or connected.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .llm_contract import default_threads
from .resources import Settings

MASK = "***"


@dataclass(frozen=True)
class EngineInfo:
    """The engines in use, as shown in Settings."""

    database_kind: str          # "SQLite" | "PostgreSQL" | the URL's scheme
    database: str               # the SQLite file, or the URL with the password masked
    vector_kind: str            # "Chroma (embedded)" | "Chroma (server)"
    vector: str                 # the Chroma folder, or host:port
    llm_backend: str            # e.g. "llama.cpp in a supervised worker process"
    model: str                  # the model file or id, or the server's URL and model name
    threads: int | None         # llama.cpp threads actually used; None for a server
    threads_from: str           # "settings" | "default: half the cores" | "the server"
    gpu_layers: int | None      # llama.cpp layers offloaded to a GPU; None for a server

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def mask_url(url: str) -> str:
    """`url` with the password of its user part replaced by `***` (nothing else changed)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:{MASK}@{host}"))


def _database(data_dir: Path, url: str) -> tuple[str, str]:
    if not url:
        return "SQLite", str(data_dir / "flowkit.db")
    scheme = urlsplit(url).scheme.split("+", 1)[0].lower()
    if scheme == "sqlite":
        return "SQLite", url.split(":///", 1)[1] if ":///" in url else url
    names = {"postgresql": "PostgreSQL", "postgres": "PostgreSQL", "mysql": "MySQL"}
    return names.get(scheme, scheme or "database"), mask_url(url)


def describe_engines(data_dir: Path | str, settings: Settings,
                     database_url: str | None = None) -> EngineInfo:
    """The engines `settings` name for the workspace in `data_dir` (`database_url`: the URL the
    workspace was opened with, when it overrides the settings')."""
    data_dir = Path(data_dir)
    db_kind, db = _database(data_dir, database_url or settings.database_url)
    if settings.chroma_host:
        vector_kind, vector = "Chroma (server)", f"{settings.chroma_host}:{settings.chroma_port}"
    else:
        vector_kind, vector = "Chroma (embedded)", str(data_dir / "chroma")
    llm = settings.llm
    if llm.backend == "openai":
        return EngineInfo(db_kind, db, vector_kind, vector, "OpenAI-compatible server",
                          f"{mask_url(llm.base_url)} ({llm.model_name or 'server-model'})",
                          None, "the server", None)
    backend = ("llama.cpp in this process" if llm.in_process
               else "llama.cpp in a supervised worker process")
    from .models import DEFAULT_MODEL
    threads = llm.n_threads or default_threads()
    return EngineInfo(db_kind, db, vector_kind, vector, backend, llm.model_path or DEFAULT_MODEL,
                      threads, "settings" if llm.n_threads else "default: half the cores",
                      llm.n_gpu_layers)
