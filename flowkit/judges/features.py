"""The sufficiency judge's input text, shared by the operator and by training."""
from __future__ import annotations

from collections.abc import Sequence

from ..memory import MemoryView


def chain_items(memory: MemoryView) -> list[str]:
    """The reasoning chain so far: the history's sub-question/sub-answer pairs, else the drafts."""
    pairs = [f"{h.get('sub_question', '')} {h.get('sub_answer', '')}".strip()
             for h in memory.get("history") or [] if h.get("sub_question") or h.get("sub_answer")]
    return pairs or [d for d in memory.get("drafts") or [] if d]


def judge_text(question: str, chain: Sequence[str]) -> str:
    """The classifier's input text: 'question || step 1 || step 2 ...'."""
    return " || ".join([question, *chain])
