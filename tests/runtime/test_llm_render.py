"""How a prompt is rendered for the model: chat template or plain completion."""
from __future__ import annotations


def test_a_model_without_chat_template_keeps_the_system_text() -> None:
    """A base GGUF (no chat template) gets the system text folded in front of the prompt."""
    from flowkit.runtime.llm import LlamaCppLLM, LLMSettings

    llm = LlamaCppLLM(LLMSettings())
    llm._llama, llm._formatter = object(), None     # noqa: SLF001 - loaded base model stand-in
    assert llm.render("Question: q\nAnswer:", system="Use the passages: P1") == \
        ("Use the passages: P1\n\nQuestion: q\nAnswer:", [])
    assert llm.render("Q") == ("Q", [])
