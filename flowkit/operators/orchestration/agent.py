"""The planning step of an agent loop (Agent-UniRAG, Pham et al. 2025)."""
from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from .._answers import real_answer
from .._text import fill

PLAN_PROMPT = (
    "You answer questions by searching. Question: {question}\n"
    "Evidence so far:\n{evidence}\n"
    "Decide the next step. Reply with two lines: first Thought: and what is still missing; then "
    "Action: and either Search[ a search query ] when something is missing, or Final Answer[ "
    "the shortest answer ] when the evidence answers the question (a name, a date, a number, "
    "or yes or no).")
SEARCH = re.compile(r"search\s*\[\s*(.+?)\s*\]", re.I | re.S)
FINAL = re.compile(r"final\s*answer\s*\[\s*(.+?)\s*\]", re.I | re.S)
THOUGHT = re.compile(r"thought\s*:\s*(.+)", re.I)


@operator("orchestration.agent_plan")
class AgentPlan(Operator["AgentPlan.Params"]):
    """Plan the next action of an agent loop: a Thought, then an Action, either Search[query]
    ('continue': the search tool runs) or Final Answer[answer] ('done'). Thoughts and actions go
    into the working memory's history. The loop also ends ('done') when the compute budget of
    `max_searches` searches is spent (Agent-UniRAG, Pham et al. 2025)."""

    class Params(OperatorParams):
        max_searches: int = Field(3, ge=1, le=50, description="Compute budget: searches before "
                                  "the agent must answer")
        max_tokens: int = Field(64, ge=16, le=512, description="Tokens for Thought + Action")
        prompt: str = Field(PLAN_PROMPT, min_length=10, description="Template with {question} "
                            "and {evidence} slots")

    kind = "judge"
    routes = ("continue", "done")
    reads = ("question",)
    optional_reads = ("evidence", "history", "queries", "documents")
    writes = ("route", "judgement", "queries", "history", "drafts")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        searches = sum(1 for h in memory.get("history") or [] if h.get("action") == "Search")
        if searches >= self.params.max_searches:
            return {"route": "done", "judgement": {"by": self.node_id, "verdict": "done",
                                                   "reason": f"budget of {searches} searches spent"},
                    "history": [{"thought": "compute budget spent", "action": "Final Answer"}]}
        evidence = [e for e in memory.get("evidence") or []]
        if not evidence and memory.get("documents"):   # no reflector: the raw passages are the notes
            evidence = [f"{d.get('title', '')}: {(d.get('text') or '')[:200]}"
                        for d in list(memory["documents"])[:3]]
        prompt = fill(self.params.prompt, "params.prompt", question=memory["question"],
                      evidence="\n".join(f"- {e}" for e in evidence[-6:]) or "(none yet)")
        text = ctx.llm.complete(prompt, max_tokens=self.params.max_tokens).text
        thought_m = THOUGHT.search(text)
        thought = thought_m.group(1).split("\n")[0].strip() if thought_m else text.split("\n")[0]
        final, search = FINAL.search(text), SEARCH.search(text)
        asked = {q.lower() for q in memory.get("queries") or []}
        if final and real_answer(final.group(1)) and evidence and \
                (not search or final.start() < search.start()):
            answer = real_answer(final.group(1))
            return {"route": "done", "drafts": [answer],
                    "history": [{"thought": thought, "action": "Final Answer", "answer": answer}],
                    "judgement": {"by": self.node_id, "verdict": "done", "reason": "Final Answer"}}
        query = real_answer(search.group(1)) if search else ""     # no copied placeholder
        if len(query) < 3 or query.lower() in asked:
            query = memory["question"] if memory["question"].lower() not in asked or not evidence \
                else f"{memory['question']} {thought}"
        return {"route": "continue", "queries": [query],
                "history": [{"thought": thought, "action": "Search", "query": query}],
                "judgement": {"by": self.node_id, "verdict": "continue", "reason": "Search"}}
