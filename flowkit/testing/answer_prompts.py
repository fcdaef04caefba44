"""Real prompts for comparing servers: the `generation.answer` operator's prompt (its default
template, its passage format) on the sample knowledge base's questions, each with its supporting
article first, then 0, 2 or 4 other articles (as a retriever ranking it first would show them)."""
from __future__ import annotations

import json
from importlib import resources

from flowkit.memory import Doc
from flowkit.operators._text import fill, passages
from flowkit.operators.generation.answer import ANSWER_PROMPT


def answer_prompts(n: int) -> list[str]:
    """`n` prompts (at most 36: 12 questions x 3 passage counts), shortest passage lists first."""
    kb = resources.files("flowkit.sample_kb")
    articles = [json.loads(line) for line in
                kb.joinpath("articles.jsonl").read_text(encoding="utf-8").splitlines() if line]
    questions = [json.loads(line) for line in
                 kb.joinpath("questions.jsonl").read_text(encoding="utf-8").splitlines() if line]
    by_id: dict[str, Doc] = {a["id"]: a for a in articles}
    out: list[str] = []
    for extra in (0, 2, 4):
        for i, q in enumerate(questions):
            docs: list[Doc] = [by_id[d] for d in q["supporting_doc_ids"]]
            others = [a for a in articles if a["id"] not in q["supporting_doc_ids"]]
            docs += [others[(i * 5 + k) % len(others)] for k in range(extra)]
            out.append(fill(ANSWER_PROMPT, "prompt", question=q["question"],
                            passages=passages(docs, 5, 600)))
    if n > len(out):
        raise ValueError(f"answer_prompts has {len(out)} prompts, not {n}")
    return out[:n]
