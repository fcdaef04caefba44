"""`describe_engines`: what Settings shows about the database, vector engine and model backend."""
from __future__ import annotations

from pathlib import Path

from flowkit.runtime.engines import describe_engines, mask_url
from flowkit.runtime.llm import LLMSettings, default_threads
from flowkit.runtime.resources import Resources, Settings


def test_the_defaults_name_the_sqlite_file_embedded_chroma_and_real_threads(tmp_path: Path):
    info = describe_engines(tmp_path, Settings())
    assert (info.database_kind, info.database) == ("SQLite", str(tmp_path / "flowkit.db"))
    assert (info.vector_kind, info.vector) == ("Chroma (embedded)", str(tmp_path / "chroma"))
    assert info.llm_backend == "llama.cpp in a supervised worker process"
    assert info.threads == default_threads() >= 1 and info.threads_from.startswith("default")
    assert Resources(tmp_path, Settings()).database_url.endswith(info.database)   # the same file


def test_a_server_database_has_its_password_masked(tmp_path: Path):
    url = "postgresql+psycopg://flow:s3cret@db.example:5432/flowkit"
    info = describe_engines(tmp_path, Settings(database_url=url, chroma_host="chroma.local",
                                               chroma_port=8001,
                                               llm=LLMSettings(n_threads=3, in_process=True)))
    assert info.database_kind == "PostgreSQL" and "s3cret" not in info.database
    assert info.database == "postgresql+psycopg://flow:***@db.example:5432/flowkit"
    assert (info.vector_kind, info.vector) == ("Chroma (server)", "chroma.local:8001")
    assert (info.llm_backend, info.threads, info.threads_from) == \
        ("llama.cpp in this process", 3, "settings")


def test_an_openai_server_has_no_threads_and_no_secret(tmp_path: Path):
    llm = LLMSettings(backend="openai", base_url="http://u:pw@llm:8000/v1", model_name="m",
                      api_key="sk-123")
    info = describe_engines(tmp_path, Settings(llm=llm), database_url="sqlite:////x/y.db")
    assert info.database == "/x/y.db" and info.threads is None
    assert "pw" not in info.model and "sk-123" not in str(info.to_dict())
    assert mask_url("sqlite:///a.db") == "sqlite:///a.db"
