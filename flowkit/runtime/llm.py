"""LLM backends, one import away: the model contract, the llama.cpp backend and the prompt formats.

The code lives in three rooms, each with one concern; this module re-exports their public names
so that `from flowkit.runtime.llm import X` keeps working:

- `llm_contract`: `Completion`, the `LLM` and `StreamingLLM` protocols, `LLMSettings`,
  `StopCheck`, `OnToken`, `default_threads`;
- `llama_cpp_backend`: `LlamaCppLLM` (the model in this process; the supervised worker,
  `supervisor.WorkerLLM`, serves it over HTTP), `default_model_path`, `resolve_model_path`;
- `prompt_formats`: `base_prompt`, `BASE_EXAMPLES`, `ANSWER_CUE` and the chat template formatter.

`openai_client.OpenAICompatibleLLM` is the one HTTP client for the worker and for external servers;
`backends.make_llm` picks the backend the settings name.
"""
from __future__ import annotations

from .gguf import file_hash
from .llama_cpp_backend import LlamaCppLLM, default_model_path, resolve_model_path
from .llm_contract import (
    LLM,
    Completion,
    LLMSettings,
    OnToken,
    StopCheck,
    StreamingLLM,
    default_threads,
)
from .prompt_formats import _CUE_END, ANSWER_CUE, BASE_EXAMPLES, _chat_formatter, base_prompt

__all__ = ["ANSWER_CUE", "BASE_EXAMPLES", "LLM", "_CUE_END", "Completion", "LLMSettings",
           "LlamaCppLLM", "OnToken", "StopCheck", "StreamingLLM", "_chat_formatter", "base_prompt",
           "default_model_path", "default_threads", "file_hash", "resolve_model_path"]
