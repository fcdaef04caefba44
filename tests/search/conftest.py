"""A small search world: 9 questions with a corpus, a flow file, a space that varies its answer
prompt (one prompt the scripted model answers well, one it cannot), and a Workspace whose model
is a FakeLLM and whose knowledge base is in memory."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from flowkit import registry
from flowkit.runtime.resources import Settings
from flowkit.spec import dump
from flowkit.testing import FakeLLM, MemoryKB, flow
from service.workspace import Workspace

FACTS = [("Corren Lighthouse", "designed by", "Mara Velt"), ("Sundby Viaduct", "built by", "Ole Rask"),
         ("Halvard Ferry", "founded by", "Jorun Abbe"), ("Tessel Bridge", "painted by", "Ida Moen"),
         ("Vik Tower", "planned by", "Per Lund"), ("Brenn Mill", "owned by", "Kari Holt"),
         ("Ask Library", "opened by", "Siv Dahl"), ("Lome Church", "restored by", "Eli Berg"),
         ("Nes Harbour", "dug by", "Tor Vang")]
CORPUS = [{"id": f"d{i}", "title": s, "text": f"The {s} was {v} {o}."}
          for i, (s, v, o) in enumerate(FACTS)]
QUESTIONS = [{"id": f"q{i}", "question": f"Who was the {s} {v}?", "answers": [o],
              "type": "single", "supporting_doc_ids": [f"d{i}"]}
             for i, (s, v, o) in enumerate(FACTS)]
ANSWERS = {q["question"]: q["answers"][0] for q in QUESTIONS}
VAGUE = "Reply briefly.\n{passages}\nQ: {question}\nA:"
PLAIN = registry.get("generation.answer").Params.model_fields["prompt"].default


def answer_for(prompt: str) -> str:
    m = re.search(r"Question: (.*?)\nAnswer:", prompt, flags=re.S)
    return ANSWERS.get(m.group(1).strip(), "unknown") if m else "unknown"


def fake_llm() -> FakeLLM:
    return FakeLLM([(r"Question: .*\nAnswer:", answer_for)], default="I do not know")


def make_workspace(data_dir: Path, settings: Settings | None = None) -> Workspace:
    ws = Workspace(data_dir, settings)
    ws.resources.set_llm(fake_llm())
    ws.resources._kbs["test"] = MemoryKB("test", CORPUS)
    return ws


def space_doc(flow_path: Path, **over: object) -> dict:
    doc = {"kind": "flowkit-search-space", "version": 1, "name": "tiny",
           "flows": [str(flow_path)],
           "params": [{"node": "gen", "param": "prompt", "choices": [VAGUE, PLAIN]},
                      {"node": "ret", "param": "top_k", "choices": [1, 2]}],
           "max_candidates": 4, "seed": 1}
    doc.update(over)
    return doc


@dataclass
class World:
    root: Path
    ws: Workspace
    dataset: Path
    flow: Path
    space: Path


@pytest.fixture()
def world(tmp_path: Path) -> World:
    ds = tmp_path / "files" / "tinyqa"
    ds.mkdir(parents=True)
    (ds / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    (ds / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
    good = tmp_path / "files" / "good.json"
    dump(flow("good", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer")],
              ["ret>gen"]), good)
    space = tmp_path / "files" / "space.json"
    space.write_text(json.dumps(space_doc(good)))
    return World(tmp_path, make_workspace(tmp_path / "home"), ds, good, space)
