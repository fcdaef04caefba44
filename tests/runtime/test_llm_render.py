"""How a prompt is rendered for the model: chat template (instruct) or plain completion (base)."""
from __future__ import annotations

import pytest

from flowkit.runtime.llm import BASE_EXAMPLES, base_prompt


def test_base_prompt_folds_the_system_text_and_adds_examples_before_an_answer_cue() -> None:
    text, stops = base_prompt("Question: q\nAnswer:", system="Use the passages: P1")
    assert text == f"Use the passages: P1\n\n{BASE_EXAMPLES}\n\nQuestion: q\nAnswer:"
    assert stops == ["\n"]                       # a base model never stops by itself
    assert BASE_EXAMPLES.count("\nAnswer: ") == 2 and "<" not in BASE_EXAMPLES


def test_base_prompt_without_examples_or_cue() -> None:
    assert base_prompt("Question: q\nAnswer:", examples=False) == ("Question: q\nAnswer:", ["\n"])
    # a one-line cue other than Answer: gets the newline stop but no reading examples
    assert base_prompt("Question: q\nSearch query:") == ("Question: q\nSearch query:", ["\n"])
    # a list asked for on the following lines, or no cue at all: stop at a blank line only
    assert base_prompt("Questions:\n") == ("Questions:\n", ["\n\n"])
    assert base_prompt("Q", system="  ") == ("Q", ["\n\n"])


def test_a_loaded_base_model_renders_plainly_and_honours_the_examples_setting() -> None:
    """LlamaCppLLM.render with no chat template (a base GGUF) uses base_prompt and the setting."""
    from dataclasses import replace

    from flowkit.runtime.llm import LlamaCppLLM, LLMSettings

    llm = LlamaCppLLM(LLMSettings(model_path="smollm2-135m"))
    llm._llama, llm._formatter = object(), None     # a loaded base model stand-in
    assert llm.kind == "base"
    assert llm.render("Question: q\nAnswer:", system="S") == \
        (f"S\n\n{BASE_EXAMPLES}\n\nQuestion: q\nAnswer:", ["\n"])
    llm.settings = replace(llm.settings, prompt_examples=False)
    assert llm.render("Question: q\nAnswer:", system="S") == ("S\n\nQuestion: q\nAnswer:", ["\n"])


@pytest.mark.real
def test_real_models_kind_and_format() -> None:
    """SmolLM2 has a chat template (instruct); Gemma 3 270M has none (base): its prompt is plain
    completion with the examples, the exact text is returned, and the answer is one line."""
    from flowkit.runtime.llm import LlamaCppLLM, LLMSettings

    smol = LlamaCppLLM(LLMSettings(model_path="smollm2-135m", n_ctx=1024, n_threads=1))
    assert smol.kind == "instruct"
    text, _ = smol.render("Question: q\nAnswer:", system="S")
    assert text.startswith("<|im_start|>system\nS") and BASE_EXAMPLES not in text

    gemma = LlamaCppLLM(LLMSettings(model_path="gemma3-270m", n_ctx=1024, n_threads=1))
    assert gemma.kind == "base"
    prompt = ("[1] Corren Lighthouse: The Corren Lighthouse was designed by Mara Velt in 1887."
              "\nQuestion: Who designed the Corren Lighthouse?\nAnswer:")
    out = gemma.complete(prompt, max_tokens=24)
    assert out.prompt == f"{BASE_EXAMPLES}\n\n{prompt}"
    assert out.text and "\n" not in out.text and len(out.text.split()) <= 6
    # grounded in the passage (its exact words are one CPU's): it repeats a word of the passage
    assert any(w.strip(".,").lower() in prompt.lower() for w in out.text.split()), out.text
