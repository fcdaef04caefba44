"""Shared fixtures. `real` tests use the real default model, embedder and Chroma on the sample KB."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def real_resources(tmp_path_factory: pytest.TempPathFactory):
    """Resources on a fresh data dir with the sample KB ingested (real embedder, real Chroma) and
    the real default model (SmolLM2-135M through llama.cpp), shared by the whole session."""
    from flowkit.ingest import ensure_sample
    from flowkit.runtime.resources import Resources, Settings
    from flowkit.runtime.llm import LLMSettings

    data_dir = tmp_path_factory.mktemp("flowkit-real")
    res = Resources(data_dir, Settings(llm=LLMSettings(n_ctx=4096)))
    ensure_sample(res)
    return res


@pytest.fixture()
def sample_questions() -> list[dict]:
    import json
    path = ROOT / "assets" / "sample_kb" / "questions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
