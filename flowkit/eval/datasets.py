"""Question sets: read them from a folder (questions.jsonl + corpus.jsonl), a .jsonl file or a CSV.

A question is a plain dict {id, question, answers, type, supporting_doc_ids, context_doc_ids}; the
order of the file is kept, so "the first N questions" is always the same N. Third-party sets are
read where they lie (by path) and never copied into the project; only the questions go into the
database (see storage.evals), and the corpus is ingested into a knowledge base when asked.
"""
from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import sample_kb
from ..errors import FlowkitError, NotFoundError

ROOT = Path(__file__).resolve().parent.parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared_data_dir() -> Path:
    """$FLOWKIT_SHARED_DATA, else ../shared/data beside the repository."""
    env = os.environ.get("FLOWKIT_SHARED_DATA")
    return Path(env) if env else SHARED_DATA
SAMPLE_QUESTIONS = sample_kb.QUESTIONS
SAMPLE_CORPUS = sample_kb.ARTICLES


@dataclass
class Dataset:
    """A named list of questions, where it came from and its corpus file (if it has one)."""

    name: str
    questions: list[dict[str, Any]]
    source: str = ""
    corpus: str = ""
    kb: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def first(self, limit: int | None) -> list[dict[str, Any]]:
        """The first `limit` questions in file order (all when limit is None or 0)."""
        return list(self.questions[:limit] if limit else self.questions)

    @property
    def has_gold_passages(self) -> bool:
        return any(q.get("supporting_doc_ids") for q in self.questions)


def _clean(obj: dict[str, Any], where: str, n: int) -> dict[str, Any]:
    question = str(obj.get("question") or "").strip()
    if not question:
        raise FlowkitError(f"{where}: line {n} has no 'question'")
    answers = obj.get("answers")
    if answers is None:
        answers = obj.get("answer", [])
    if isinstance(answers, str):
        answers = [answers]
    q: dict[str, Any] = {"id": str(obj.get("id") or f"q{n:05d}"), "question": question,
                         "answers": [str(a) for a in answers if a is not None]}
    if obj.get("type"):
        q["type"] = str(obj["type"])
    for key in ("supporting_doc_ids", "context_doc_ids"):
        if obj.get(key):
            q[key] = [str(x) for x in obj[key]]
    return q


def _unique(questions: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    seen: set[str] = set()
    for q in questions:
        if q["id"] in seen:
            raise FlowkitError(f"{where}: question id '{q['id']}' appears twice")
        seen.add(q["id"])
    return questions


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Questions from a .jsonl file: {id, question, answers, [type], [supporting_doc_ids]} a line."""
    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"file not found: {p}")
    out = []
    with p.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise FlowkitError(f"{p}:{n}: not valid JSON ({err.msg})") from None
            if not isinstance(obj, dict):
                raise FlowkitError(f"{p}:{n}: each line must be a JSON object")
            out.append(_clean(obj, str(p), n))
    return _unique(out, str(p))


def read_csv(path: str | Path) -> list[dict[str, Any]]:
    """Questions from a CSV with a header row: question, answer (several answers separated by '|');
    optional columns id and type. A file without a header is read as question,answer pairs."""
    p = Path(path)
    if not p.is_file():
        raise NotFoundError(f"file not found: {p}")
    with p.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise FlowkitError(f"{p}: the CSV is empty")
    header = [c.strip().lower() for c in rows[0]]
    if "question" in header:
        body, cols = rows[1:], header
    else:
        body, cols = rows, ["question", "answer"]
    if "answer" not in cols and "answers" not in cols:
        raise FlowkitError(f"{p}: the CSV needs the columns question,answer")
    out = []
    for n, row in enumerate(body, 1):
        rec = dict(zip(cols, row))
        ans = rec.get("answer", rec.get("answers", ""))
        out.append(_clean({"id": rec.get("id") or f"q{n:05d}", "question": rec.get("question"),
                           "answers": [a.strip() for a in ans.split("|") if a.strip()],
                           "type": rec.get("type")}, str(p), n))
    return _unique(out, str(p))


def from_path(path: str | Path, name: str | None = None) -> Dataset:
    """A folder with questions.jsonl (and corpus.jsonl), a questions .jsonl file, or a .csv file."""
    p = Path(path).expanduser()
    if p.is_dir():
        qfile = p / "questions.jsonl"
        if not qfile.is_file():
            raise NotFoundError(f"{p}: no questions.jsonl in this folder")
        corpus = p / "corpus.jsonl"
        return Dataset(name or p.name, read_jsonl(qfile), source=str(p.resolve()),
                       corpus=str(corpus.resolve()) if corpus.is_file() else "")
    if p.suffix.lower() == ".csv":
        return Dataset(name or p.stem, read_csv(p), source=str(p.resolve()))
    if p.suffix.lower() == ".jsonl":
        corpus = p.parent / "corpus.jsonl"
        if p.resolve() == SAMPLE_QUESTIONS.resolve():
            corpus = SAMPLE_CORPUS
        return Dataset(name or (p.parent.name if p.name == "questions.jsonl" else p.stem),
                       read_jsonl(p), source=str(p.resolve()),
                       corpus=str(corpus.resolve()) if corpus.is_file() and corpus != p else "")
    raise NotFoundError(f"'{path}' is not a question folder, a .jsonl or a .csv file")


def known_sets(extra_dirs: Iterable[str | Path] = ()) -> dict[str, Path]:
    """Question sets found on disk: the sets beside the project (../shared/data/<set>/) and the
    sample questions of the bundled knowledge base, by name."""
    out: dict[str, Path] = {}
    for root in [shared_data_dir(), *map(Path, extra_dirs)]:
        if root.is_dir():
            for d in sorted(root.iterdir()):
                if (d / "questions.jsonl").is_file():
                    out[d.name] = d
    if SAMPLE_QUESTIONS.is_file():
        out["sample_questions"] = SAMPLE_QUESTIONS
    return out


def subset_corpus(dataset: Dataset, questions: list[dict[str, Any]], out_path: str | Path) -> int:
    """Write the passages that came with these questions (context + supporting ids) from the
    dataset's corpus to `out_path` (a temporary file outside the project). Returns how many."""
    if not dataset.corpus:
        raise FlowkitError(f"dataset '{dataset.name}' has no corpus.jsonl")
    wanted = {d for q in questions for key in ("context_doc_ids", "supporting_doc_ids")
              for d in q.get(key) or []}
    n = 0
    with open(dataset.corpus, encoding="utf-8") as src, open(out_path, "w", encoding="utf-8") as dst:
        for line in src:
            if line.strip() and json.loads(line).get("id") in wanted:
                dst.write(line if line.endswith("\n") else line + "\n")
                n += 1
    return n


def resolve(repo: Any, ref: str) -> Dataset:
    """A dataset by path (folder, .jsonl, .csv), by the name of a set found on disk (the sets in
    ../shared/data, sample_questions), or by the name of an imported dataset (`repo` is a
    storage.evals.EvalRepo). A set read from disk is stored too (its questions only, with its
    path as source), so that an evaluation of it can be resumed by id."""
    p = Path(ref).expanduser()
    found = known_sets()
    if p.exists() or ref in found:
        ds = from_path(p) if p.exists() else from_path(found[ref], name=ref)
        prev = repo.find_dataset(ds.name)
        ds.kb = prev.kb if prev else ""
        repo.save_dataset(ds.name, ds.source, ds.questions, kb=ds.kb)
        return ds
    info = repo.get_dataset(ref)
    corpus = ""
    src = Path(info.source) if info.source else None
    if src is not None:
        folder = src if src.is_dir() else src.parent
        if (folder / "corpus.jsonl").is_file():
            corpus = str(folder / "corpus.jsonl")
        elif src.resolve() == SAMPLE_QUESTIONS.resolve():
            corpus = str(SAMPLE_CORPUS)
    return Dataset(info.name, info.questions, source=info.source, corpus=corpus, kb=info.kb)
