"""Which LLM backend a run gets: `make_llm(settings)` (kept apart from llm.py, which the backends
themselves import, so that no module imports its own importers)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ResourceError
from .llama_cpp_backend import LlamaCppLLM
from .llm_contract import LLMSettings


def make_llm(settings: LLMSettings, log_dir: Path | None = None) -> Any:
    """The backend the settings name: llama.cpp in a supervised worker process (the default), in
    this process (`in_process`), or an OpenAI-compatible server (`backend: "openai"`)."""
    if settings.backend == "llama_cpp":
        if settings.in_process:
            return LlamaCppLLM(settings)
        from .supervisor import WorkerLLM  # lazy: the worker machinery only when used
        return WorkerLLM(settings, log_dir=log_dir)
    if settings.backend == "openai":
        from .openai_client import OpenAICompatibleLLM
        return OpenAICompatibleLLM(settings)
    raise ResourceError(f"unknown LLM backend '{settings.backend}' (settings: backend); "
                        "use 'llama_cpp' or 'openai'")
