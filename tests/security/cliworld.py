"""A small world for the CLI security tests: a workspace whose model is a FakeLLM and whose
knowledge base 'test' is in memory, a question set on disk, and `flowkit` run in this process."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flowkit.spec import dump
from flowkit.testing import FakeLLM, MemoryKB, flow
from service import cli
from service.cli import common
from service.workspace import Workspace

CORPUS = [{"id": "d1", "title": "Corren", "text": "The Corren Lighthouse was designed by Mara Velt."},
          {"id": "d2", "title": "Velt", "text": "Mara Velt was born on the island of Tessel."}]

Runner = Callable[..., tuple[int, str, str]]


def question(qid: str, text: str, qtype: str = "single", answer: str = "Mara Velt") -> dict[str, Any]:
    return {"id": qid, "question": text, "answers": [answer], "type": qtype,
            "supporting_doc_ids": ["d1"]}


def make_workspace(data_dir: Path) -> Workspace:
    """A Workspace on data_dir answering every question 'Mara Velt' from an in-memory KB."""
    ws = Workspace(data_dir)
    ws.resources.set_llm(FakeLLM([], default="Mara Velt"))
    ws.resources._kbs["test"] = MemoryKB("test", CORPUS)     # type: ignore[assignment]
    return ws


def flow_file(root: Path, name: str = "good") -> Path:
    """A retrieve-then-answer flow file."""
    path = root / f"{name}.json"
    dump(flow(name, [("ret", "retrieval.bm25", {"top_k": 1}), ("gen", "generation.answer")],
              ["ret>gen"]), path)
    return path


def question_file(root: Path, questions: list[dict[str, Any]], name: str = "qs") -> Path:
    path = root / f"{name}.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return path


def runner(home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
           ) -> Runner:
    """`run(*args)` runs `flowkit --data-dir home ARGS` in this process on the fake workspace and
    returns (exit code, stdout, stderr)."""
    monkeypatch.setattr(common, "open_workspace", lambda args: make_workspace(home))
    monkeypatch.setenv("COLUMNS", "200")
    for console in (common.out, common.err):     # made at import: give tables room for names
        monkeypatch.setattr(console, "width", 200)

    def run(*args: str) -> tuple[int, str, str]:
        code = cli.main(["--data-dir", str(home), *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err
    return run
