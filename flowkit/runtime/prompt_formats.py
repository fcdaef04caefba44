"""Prompt formats: the exact text a model is sent for one user turn.

An instruct model (a GGUF that carries a chat template) gets its own template (`_chat_formatter`);
a base model gets plain completion (`base_prompt`), with two made-up reading examples in front of
an answer prompt (`BASE_EXAMPLES`) and a stop at the end of the line its cue asks for.

Every completion-cache key holds `format_version()`: `PROMPT_FORMAT_VERSION`, a number raised by
hand with any change to what `base_prompt` or `_chat_formatter` send a model, and a digest of the
text they send (`BASE_EXAMPLES`, `ANSWER_CUE`, the cue pattern), so that an edit of that text
changes the keys by itself. Comments, docstrings and refactors that send the same text change
nothing, and a user's cache stays full.
"""
from __future__ import annotations

import hashlib
import re
from typing import Any

#: The version of this module's prompt shaping, part of every completion-cache key: raise it with
#: any change to the text `base_prompt` or `_chat_formatter` produce (not for comments or
#: docstrings). Version 1 was no number but a hash of this module's source; moving to this
#: constant (issue 49) changed every existing cache key once: entries cached before then miss and
#: are computed again, never served wrongly.
PROMPT_FORMAT_VERSION = 2

#: The cue that ends an answer prompt; a base model gets `BASE_EXAMPLES` before such a prompt.
ANSWER_CUE = "Answer:"
#: Two made-up reading examples (text written for flowkit) that show a base model the shape of a
#: short answer: one name or date on the line after "Answer:", then a new line.
BASE_EXAMPLES = (
    "[1] Lake Orin: Lake Orin is a reservoir above the village of Castell. Its dam was finished "
    "in 1931.\nQuestion: In which year was the dam of Lake Orin finished?\nAnswer: 1931\n\n"
    "[1] Mira Holt: Mira Holt (born 1950) is a painter from Dunmore.\n"
    "[2] Tomas Vale: Tomas Vale (born 1962) is a sculptor.\n"
    "Question: Who was born first, Mira Holt or Tomas Vale?\nAnswer: Mira Holt")
_CUE_END = re.compile(r"[A-Za-z][A-Za-z ()-]{0,40}:$")


def base_prompt(prompt: str, system: str | None = None, *,
                examples: bool = True) -> tuple[str, list[str]]:
    """Plain completion for a base model (a GGUF without a chat template), and its stop strings.

    The system text is folded in front of the prompt (a base model has no system turn). A prompt
    that ends in "Answer:" gets `BASE_EXAMPLES` in front of it when `examples` is on. A prompt whose
    last line is a cue such as "Answer:" or "Search query:" asks for one line, so generation stops
    at the first new line (a base model never stops by itself); any other prompt stops at a blank
    line.
    """
    parts = [system.strip()] if system and system.strip() else []
    if examples and prompt.rstrip().endswith(ANSWER_CUE):
        parts.append(BASE_EXAMPLES)
    parts.append(prompt)
    last = prompt.splitlines()[-1] if prompt.splitlines() else ""
    return "\n\n".join(parts), (["\n"] if _CUE_END.search(last) and not prompt.endswith("\n")
                                  else ["\n\n"])


def _chat_formatter(llama: Any) -> Any:
    """The GGUF's own chat template, or None for a base model without one."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    template = llama.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    eos = llama.detokenize([llama.token_eos()]).decode("utf-8", "ignore")
    bos = llama.detokenize([llama.token_bos()]).decode("utf-8", "ignore")
    return Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos,
                               add_generation_prompt=True)


def format_version() -> str:
    """The prompt format's version as the completion cache keys it: `PROMPT_FORMAT_VERSION` and a
    short sha256 of the text this module puts into prompts (see the module's help)."""
    text = "\n".join((BASE_EXAMPLES, ANSWER_CUE, _CUE_END.pattern))
    return f"{PROMPT_FORMAT_VERSION}:{hashlib.sha256(text.encode('utf-8')).hexdigest()[:12]}"
