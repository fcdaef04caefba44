"""Short answers: cut at the first line, no lead-in; placeholders copied from prompts are refused by
the judges that stop on "the answer is ..." (run through flows with a scripted model)."""
from __future__ import annotations

import re

import pytest

from flowkit import compile_flow, run_flow
from flowkit.operators._answers import real_answer, short_answer
from flowkit.operators.generation.answer import ANSWER_PROMPT
from flowkit.operators.generation.chain import COT_PROMPT
from flowkit.operators.orchestration.agent import PLAN_PROMPT
from flowkit.run_request import RunRequest
from flowkit.testing import FakeLLM, fake_resources, flow

Q = "Who designed the Corren Lighthouse?"


@pytest.mark.parametrize("text, expected", [
    ("Mara Velt\nShe was an engineer.", "Mara Velt"),
    ("\n  The answer is: Mara Velt [1].", "Mara Velt"),
    ("Answer:\nMara Velt", "Mara Velt"),
    ("So the answer is Tessel.", "Tessel"),
    ("So the answer is: <answer>.", ""),
    ("", ""),
    ("Answers differ by year", "Answers differ by year"),
    ("No | Yes", "No"),                                    # a copied table row: its first cell
    ("Yes | Yes | Yes | Yes [2]", "Yes"),
    ("| 16 | 2 | The page size", "16"),
    ("The answer is: json_set() | Yes | Yes", "json_set()"),
    ("x || y", "x || y"),                                   # an operator, not cells
    ("a|b", "a|b"),
])
def test_short_answer_cuts_to_the_first_line_without_lead_in(text: str, expected: str) -> None:
    assert short_answer(text) == expected


@pytest.mark.parametrize("text", ["<answer>", " [answer] ", "{answer}", "(answer)", "(the answer)",
                                  "...", "short answer",
                                  "the shortest answer", "a search query", "", None, "  \"\" "])
def test_placeholders_and_empty_strings_are_not_answers(text: str | None) -> None:
    assert real_answer(text) == ""


def test_no_shipped_prompt_holds_a_copyable_placeholder() -> None:
    for prompt in (ANSWER_PROMPT, COT_PROMPT, PLAN_PROMPT):
        assert not re.search(r"<[a-z ]+>", prompt), prompt
    assert "shortest answer" in ANSWER_PROMPT


def test_answer_operator_keeps_the_first_line_only() -> None:
    llm = FakeLLM([(r"Answer:$", "The answer is: Mara Velt [1]\nShe designed it in 1887.")])
    spec = flow("a", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer")],
                ["ret>gen"])
    result = run_flow(compile_flow(spec), fake_resources(llm), RunRequest(Q, kb="test"))
    assert result.status == "ok", result.error
    assert result.answer == "Mara Velt" and result.memory["drafts"] == ["Mara Velt"]


def _ircot(llm: FakeLLM) -> object:
    spec = flow("ircot", [("ret", "retrieval.bm25", {"top_k": 2, "query_from": "queries"}),
                          ("cot", "generation.cot_step"),
                          ("enough", "orchestration.rule_judge",
                           {"max_rounds": 3, "stop_on_answer": True}),
                          ("read", "generation.answer")],
                ["ret>cot", "cot>enough", "enough>ret:continue", "enough>read:done"], entry="ret")
    return run_flow(compile_flow(spec), fake_resources(llm), RunRequest(Q, kb="test"))


def test_a_copied_placeholder_does_not_end_an_ircot_loop() -> None:
    copied = FakeLLM([(r"Next sentence:$", "So the answer is: <answer>."),
                      (r"Answer:$", "Mara Velt")])
    result = _ircot(copied)
    assert result.status == "ok", result.error
    rounds = [s for s in copied.prompts if s.endswith("Next sentence:")]
    assert len(rounds) == 3                       # ran to max_rounds: "<answer>" is no answer
    assert result.answer == "Mara Velt"
    stated = FakeLLM([(r"Next sentence:$", "So the answer is: Mara Velt."),
                      (r"Answer:$", "Mara Velt")])
    result = _ircot(stated)
    assert len([s for s in stated.prompts if s.endswith("Next sentence:")]) == 1
    assert result.answer == "Mara Velt"


def test_a_placeholder_reasoning_step_is_not_a_search_query() -> None:
    # Gemma 3 270M wrote "(answer)" as its reasoning step; searching with that finds nothing useful
    copied = FakeLLM([(r"Next sentence:$", "(answer)"), (r"Answer:$", "Mara Velt")])
    result = _ircot(copied)
    assert result.status == "ok", result.error
    assert result.memory["queries"] == [Q]
    rounds = [s for s in copied.prompts if s.endswith("Next sentence:")]
    assert len(rounds) == 3 and "Reasoning so far: nothing yet." in rounds[0]


def test_a_repeated_reasoning_step_keeps_only_what_is_new() -> None:
    from flowkit.operators.generation.chain import new_sentences
    said = ["Mara Velt designed the lighthouse."]
    assert new_sentences("Mara Velt designed the lighthouse. She was born on Tessel.", said) == \
        "She was born on Tessel."
    assert new_sentences("Mara Velt designed the lighthouse.", said) == ""
    llm = FakeLLM([(r"Next sentence:$", "Mara Velt designed the lighthouse."),
                   (r"Answer:$", "Mara Velt")])
    result = _ircot(llm)
    assert result.memory["drafts"][:2] == ["Mara Velt designed the lighthouse.", "Mara Velt"]
    assert [h["thought"] for h in result.memory["history"]] == [
        "Mara Velt designed the lighthouse."]
    assert result.memory["queries"] == [Q]       # nothing new: the question is searched again


def test_the_reasoning_prompt_shows_a_worked_step_before_the_question() -> None:
    llm = FakeLLM([(r"Next sentence:$", "Mara Velt designed it. So the answer is Mara Velt."),
                   (r"Answer:$", "Mara Velt")])
    _ircot(llm)
    prompt = next(s for s in llm.prompts if s.endswith("Next sentence:"))
    assert prompt.index("So the answer is Pellham.") < prompt.index(f"Question: {Q}")


def test_agent_refuses_a_copied_final_answer_placeholder() -> None:
    spec = flow("agent", [("ret", "retrieval.bm25", {"top_k": 2, "query_from": "queries"}),
                          ("plan", "orchestration.agent_plan", {"max_searches": 2}),
                          ("final", "generation.answer")],
                ["ret>plan", "plan>ret:continue", "plan>final:done"], entry="ret")
    copied = "Thought: done.\nAction: Final Answer[ the shortest answer ]"
    llm = FakeLLM([(r"Reply with two lines", copied), (r"Answer:$", "Mara Velt")])
    result = run_flow(compile_flow(spec), fake_resources(llm), RunRequest(Q, kb="test"))
    assert result.status == "ok", result.error
    plans = [h for h in result.memory["history"] if h.get("action")]
    # the placeholder was no final answer: the agent searched until its budget was spent
    assert [h["action"] for h in plans] == ["Search", "Search", "Final Answer"]
    assert result.answer == "Mara Velt"


def test_a_hostile_answer_of_many_cells_is_cut_plainly() -> None:
    assert short_answer(" | " * 100_000) == ""
    assert len(short_answer("| " * 100_000 + "x")) < 10               # a cell, never the line
    assert short_answer("No | " + "Yes | " * 100_000) == "No"
