"""A small evaluation world for the eval tests: a question set with a corpus on disk, two flow
files, and a Workspace whose model is a FakeLLM and whose knowledge base is in memory."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from flowkit.spec import dump
from flowkit.testing import FakeLLM, MemoryKB, flow
from service.workspace import Workspace
from storage.evals import EvalRepo

CORPUS = [
    {"id": "d1", "title": "Corren Lighthouse", "text": "The Corren Lighthouse was designed by Mara Velt."},
    {"id": "d2", "title": "Mara Velt", "text": "Mara Velt was born on the island of Tessel."},
    {"id": "d3", "title": "Tessel", "text": "Tessel holds a lantern festival every November."},
    {"id": "d4", "title": "Sundby Viaduct", "text": "The Sundby Viaduct has 11 arches."},
    {"id": "d5", "title": "Halvard Ferry", "text": "Jorun Abbe founded the Halvard Ferry Company."},
    {"id": "d6", "title": "Corren", "text": "The Corren Lighthouse was first lit in 1884."},
]
QUESTIONS = [
    {"id": "q1", "question": "Who designed the Corren Lighthouse?", "answers": ["Mara Velt"],
     "type": "single", "supporting_doc_ids": ["d1"]},
    {"id": "q2", "question": "Where was the designer of the Corren Lighthouse born?",
     "answers": ["Tessel", "the island of Tessel"], "type": "bridge",
     "supporting_doc_ids": ["d1", "d2"]},
    {"id": "q3", "question": "How many arches does the Sundby Viaduct have?", "answers": ["11"],
     "type": "single", "supporting_doc_ids": ["d4"]},
    {"id": "q4", "question": "Who founded the Halvard Ferry Company?", "answers": ["Jorun Abbe"],
     "type": "single", "supporting_doc_ids": ["d5"]},
    {"id": "q5", "question": "When was the Corren Lighthouse first lit?", "answers": ["1884"],
     "type": "single", "supporting_doc_ids": ["d6"]},
    {"id": "q6", "question": "What does Tessel hold every November?",
     "answers": ["a lantern festival"], "type": "single", "supporting_doc_ids": ["d3"]},
]
# what the "good" flow answers (q3 wrong on purpose), keyed by question
ANSWERS = {"Who designed the Corren Lighthouse?": "Mara Velt [1]",
           "Where was the designer of the Corren Lighthouse born?": "Tessel [1]",
           "How many arches does the Sundby Viaduct have?": "twelve [1]",
           "Who founded the Halvard Ferry Company?": "Jorun Abbe [1]",
           "When was the Corren Lighthouse first lit?": "It was first lit in 1884 [1]",
           "What does Tessel hold every November?": "a lantern festival [1]"}


def answer_for(prompt: str) -> str:
    m = re.search(r"Question: (.*?)\nAnswer:", prompt, flags=re.S)
    return ANSWERS.get(m.group(1).strip(), "unknown") if m else "unknown"


def fake_llm() -> FakeLLM:
    return FakeLLM([(r"Question: .*\nAnswer:", answer_for)], default="I do not know")


def good_flow():
    return flow("good", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer")],
                ["ret>gen"])


def vague_flow():
    return flow("vague", [("ret", "retrieval.bm25", {"top_k": 1}),
                          ("gen", "generation.answer",
                           {"prompt": "Reply briefly.\n{passages}\nQ: {question}\nA:"})],
                ["ret>gen"])


def make_workspace(data_dir: Path, llm: FakeLLM | None = None) -> Workspace:
    """A Workspace on data_dir with a FakeLLM and an in-memory knowledge base named 'test'."""
    ws = Workspace(data_dir)
    ws.resources.set_llm(llm or fake_llm())
    ws.resources._kbs["test"] = MemoryKB("test", CORPUS)
    return ws


@dataclass
class World:
    root: Path
    ws: Workspace
    repo: EvalRepo
    dataset: Path
    good: Path
    vague: Path


def write_world(root: Path) -> tuple[Path, Path, Path]:
    ds = root / "tinyqa"
    ds.mkdir(parents=True, exist_ok=True)
    (ds / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (ds / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
    good, vague = root / "good.json", root / "vague.json"
    dump(good_flow(), good)
    dump(vague_flow(), vague)
    return ds, good, vague


@pytest.fixture()
def world(tmp_path: Path, db_url: str) -> World:
    """The world on SQLite and again on a real PostgreSQL (settings.database_url)."""
    ds, good, vague = write_world(tmp_path / "files")
    if db_url.startswith("postgresql"):
        from flowkit.runtime.resources import Settings, save_settings
        save_settings(tmp_path / "home", Settings(database_url=db_url))
    ws = make_workspace(tmp_path / "home")
    return World(tmp_path, ws, EvalRepo(ws.store), ds, good, vague)
