"""Query rewriting: a better search query (Rewrite-Retrieve-Read), a hypothetical answer passage
(HyDE) and a more generic step-back question.

Also the small parsing helpers the other pre-retrieval families share: the default model often
answers instead of rewriting, numbers or labels its lines, or drifts off topic, so every item is
cleaned and checked against the question's content words, with the question as the fallback.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any, TypeVar

from pydantic import Field

from ...context import RunContext
from ...contract import Operator, OperatorParams, operator
from ...memory import MemoryView
from ...text import content_words, tokens
from .._text import fill, first_line

REWRITE_PROMPT = "Write a short search query for the question.\nQuestion: {question}\nSearch query:"
HYDE_PROMPT = ("Write a short encyclopedia passage that answers the question.\n"
               "Question: {question}\nPassage:")
STEP_BACK_PROMPT = ("Question: {question}\nAsk a more general question about the same topic.\n"
                    "General question:")

MAX_QUERY_CHARS = 300
_LABEL = re.compile(
    r"^\s*(?:[-*\u2022>]\s*|\(?\d{1,2}\s*[.):]\s*|(?:search |general |step-back |rephrased |"
    r"rewritten |verification |sub-?)?(?:query|question|passage|rewrite)\s*\d{0,2}\s*:\s*)", re.I)
_ANSWERISH = re.compile(r"^\s*(?:the\s+)?answer\s*(?:is)?\s*:", re.I)


def clean_line(text: str) -> str:
    """One item without list markers, labels ('Query:', 'Sub-question 2:') or quotes."""
    line = text.strip()
    while True:
        stripped = _LABEL.sub("", line, count=1)
        if stripped == line:
            break
        line = stripped
    return line.strip().strip("\"'`").strip()


def norm(text: str) -> str:
    """Lower-case words only: what two phrasings are compared by."""
    return " ".join(tokens(text))


def topic_words(text: str) -> set[str]:
    """Words that carry the topic, a plural 's' dropped ('lighthouses' matches 'lighthouse')."""
    return {w[:-1] if len(w) > 4 and w.endswith("s") else w for w in content_words(text)}


def on_topic(text: str, *anchors: str) -> bool:
    """True when the text shares a content word with the anchors (or the anchors have none)."""
    want = set().union(*(topic_words(a) for a in anchors)) if anchors else set()
    return not want or bool(topic_words(text) & want)


def question_items(text: str, limit: int, anchors: Iterable[str],
                   skip: Iterable[str] = ()) -> list[str]:
    """Distinct on-topic items from a list the model wrote, question-shaped ones preferred: lines
    are split further at '?', labels and numbers removed, answers ('The answer is: ...') dropped."""
    anchor_list = [a for a in anchors if a]
    seen = {norm(s) for s in skip}
    items: list[str] = []
    for line in text.splitlines():
        for piece in re.split(r"(?<=\?)\s+", line):
            item = clean_line(piece)[:MAX_QUERY_CHARS]
            key = norm(item)
            if len(item) < 5 or not key or key in seen or _ANSWERISH.match(item):
                continue
            if not on_topic(item, *anchor_list):
                continue
            seen.add(key)
            items.append(item)
    questions = [i for i in items if i.endswith("?")]
    return (questions or items)[:limit]


#: The prompt param of an operator whose template has the question as its only slot.
QuestionPrompt = Annotated[str, Field(min_length=10, description="Template with a {question} slot "
                                      "(plain replacement, no code)")]


def ask(memory: MemoryView, ctx: RunContext, template: str, max_tokens: int,
        **slots: str) -> tuple[str, str]:
    """The question and the model's reply to `template` filled with it (and `slots`)."""
    question = memory["question"]
    prompt = fill(template, "params.prompt", question=question, **slots)
    return question, ctx.llm.complete(prompt, max_tokens=max_tokens).text


QP = TypeVar("QP", bound=OperatorParams)


class QueryWriter(Operator[QP]):
    """An operator that writes search queries from the question."""

    reads = ("question",)
    writes = ("queries",)


def first_sentence(text: str) -> str:
    line = clean_line(first_line(text))
    m = re.match(r"(.{12,}?[.?!])(?:\s|$)", line)          # not cut at "St." or "Mt."
    return (m.group(1) if m else line)[:MAX_QUERY_CHARS].strip()


@operator("pre_retrieval.rewrite")
class Rewrite(QueryWriter["Rewrite.Params"]):
    """Rewrite the question into a better search query (Rewrite-Retrieve-Read, Ma et al. 2023).

    The model first writes the query the retriever should see; a search node with query_from
    "queries" then uses it. When the model writes nothing usable or drifts off topic, the
    question is the query.
    """

    class Params(OperatorParams):
        prompt: QuestionPrompt = REWRITE_PROMPT
        max_tokens: int = Field(32, ge=4, le=256, description="Longest query in tokens")
        keep_question: bool = Field(False, description="Search with the question as well as the "
                                    "rewritten query")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        question, text = ask(memory, ctx, self.params.prompt, self.params.max_tokens)
        query = first_sentence(text)
        if len(query) < 3 or not on_topic(query, question):
            query = question
        queries = [question, query] if self.params.keep_question else [query]
        return {"queries": list(dict.fromkeys(queries))}


@operator("pre_retrieval.hyde")
class HyDE(QueryWriter["HyDE.Params"]):
    """Write a hypothetical answer passage and search with it (HyDE, Gao et al. 2022).

    A made-up passage that answers the question sits closer to real answer passages in embedding
    space than the short question does; its facts may be wrong, only its shape matters. Extra
    passages are sampled at `temperature`; keeping the question as a query too follows the paper,
    which averages the question's embedding with the passages'. Off-topic passages are dropped.
    """

    class Params(OperatorParams):
        prompt: QuestionPrompt = HYDE_PROMPT
        max_tokens: int = Field(96, ge=16, le=512, description="Longest passage in tokens")
        passages: int = Field(1, ge=1, le=4, description="Hypothetical passages to write (each one "
                              "a query)")
        temperature: float = Field(0.7, ge=0.0, le=1.5, description="Sampling temperature of the "
                                   "second and later passages (the first uses the model default)")
        keep_question: bool = Field(True, description="Search with the question as well as the "
                                    "passages")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        p, question = self.params, memory["question"]
        prompt = fill(p.prompt, "params.prompt", question=question)
        found: dict[str, str] = {}
        for i in range(p.passages):
            text = ctx.llm.complete(prompt, max_tokens=p.max_tokens,
                                    temperature=p.temperature if i else None).text
            passage = clean_line(" ".join(text.split()))
            if len(passage) >= 10 and on_topic(passage, question):
                found.setdefault(norm(passage), passage)
        passages = list(found.values())
        queries = ([question] if p.keep_question or not passages else []) + passages
        return {"queries": queries}


@operator("pre_retrieval.step_back")
class StepBack(QueryWriter["StepBack.Params"]):
    """Ask a more generic step-back question and search with both (step-back prompting, Zheng
    et al. 2023).

    A question about the broader concept behind the question ("what is the history of X?")
    retrieves background the specific one misses. Writes queries = [question, step-back
    question]; only the question when the model repeats it or drifts off topic.
    """

    class Params(OperatorParams):
        prompt: QuestionPrompt = STEP_BACK_PROMPT
        max_tokens: int = Field(40, ge=8, le=256, description="Longest step-back question in "
                                "tokens")

    def run(self, memory: MemoryView, ctx: RunContext) -> dict[str, Any]:
        question, text = ask(memory, ctx, self.params.prompt, self.params.max_tokens)
        items = question_items(text, 1, [question], skip=[question])
        step_back = first_sentence(items[0] if items else text)
        if len(step_back) < 5 or norm(step_back) == norm(question) \
                or not on_topic(step_back, question):
            return {"queries": [question]}
        return {"queries": [question, step_back]}
