"""Question sets the run page can pick a question from: the sample KB's, and the shared QA sets.

The sample questions ship in flowkit/sample_kb/questions.jsonl. Third-party sets are read by path
from ../shared/data/<set>/questions.jsonl (beside the checkout) and never copied into the project.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowkit import sample_kb

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_QUESTIONS = sample_kb.QUESTIONS
MAX_QUESTIONS = 500   # the picker shows at most this many questions of a set


def shared_data_dir() -> Path:
    """$FLOWKIT_SHARED_DATA, else ../shared/data beside the repository."""
    env = os.environ.get("FLOWKIT_SHARED_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


@dataclass(frozen=True)
class QuestionSet:
    """A questions.jsonl file under a display name."""

    name: str
    path: Path


def question_sets() -> list[QuestionSet]:
    """The sample set first, then every shared set that has a questions.jsonl."""
    out = []
    if SAMPLE_QUESTIONS.is_file():
        out.append(QuestionSet("sample (Halvard Archipelago)", SAMPLE_QUESTIONS))
    shared = shared_data_dir()
    if shared.is_dir():
        for folder in sorted(p for p in shared.iterdir() if p.is_dir()):
            path = folder / "questions.jsonl"
            if path.is_file():
                out.append(QuestionSet(folder.name, path))
    return out


def load_questions(path: Path, limit: int = MAX_QUESTIONS) -> list[dict[str, Any]]:
    """The first `limit` questions of a file: {id, question, answers}; bad lines are skipped."""
    out: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if len(out) >= limit:
                break
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(obj, dict) and str(obj.get("question", "")).strip():
                answers = obj.get("answers") or []
                out.append({"id": str(obj.get("id", len(out))), "question": str(obj["question"]),
                            "answers": [str(a) for a in answers] if isinstance(answers, list)
                            else [str(answers)]})
    return out
