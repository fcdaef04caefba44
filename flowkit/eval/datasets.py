"""Question sets: read them from a folder (questions.jsonl + corpus.jsonl), a .jsonl file or a CSV.

A question is a plain dict {id, question, answers, type, supporting_doc_ids, context_doc_ids}; the
order of the file is kept, so "the first N questions" is always the same N. Third-party sets are
read where they lie (by path) and never copied into the project; only the questions go into the
database (see storage.evals), and the corpus is ingested into a knowledge base when asked.

Files are read through `flowkit.jsonread` (a regular file of at most MAX_FILE_BYTES, UTF-8, each
.jsonl line bounded in depth, numbers and text), and every field is checked for its type: a bad
file is a DatasetError naming the file, the line and the field, never a traceback.
"""
from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import jsonread, sample_kb
from ..errors import FlowkitError, NotFoundError, SpecError
from ..memory import kind_of

ROOT = Path(__file__).resolve().parent.parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared_data_dir() -> Path:
    """$FLOWKIT_SHARED_DATA, else ../shared/data beside the repository."""
    env = os.environ.get("FLOWKIT_SHARED_DATA")
    return Path(env) if env else SHARED_DATA
SAMPLE_QUESTIONS = sample_kb.QUESTIONS
SAMPLE_CORPUS = sample_kb.ARTICLES

#: One question file read at most (the largest set beside the project is a few MB).
MAX_FILE_BYTES = 64 * 1024 * 1024
#: One corpus file read at most (ingest's own bound on a file).
MAX_CORPUS_BYTES = 512 * 1024 * 1024
#: Questions in one set, characters of one text field, entries of one list field.
MAX_QUESTIONS = 200_000
MAX_TEXT = 20_000
MAX_LIST = 1_000
#: Nesting of one .jsonl line (a question is a flat record).
MAX_LINE_DEPTH = 16


class DatasetError(FlowkitError):
    """A question file that cannot be read: the message names the file, the line and the field."""


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


def _text(value: Any, where: str, name: str, *, required: bool = False) -> str:
    """A text field (where not `required`, a number is taken as its text: an id 7, an answer
    1884); DatasetError when it is another type, too long or holds a NUL character."""
    if value is None or value == "":
        if required:
            raise DatasetError(f"{where}: no '{name}'")
        return ""
    numbers = () if required else (int, float)
    if isinstance(value, bool) or not isinstance(value, (str, *numbers)):
        raise DatasetError(f"{where}: field '{name}' must be text, got "
                           f"{kind_of(value, number_names=True)}")
    text = value.strip() if isinstance(value, str) else str(value)
    if required and not text:
        raise DatasetError(f"{where}: no '{name}'")
    if len(text) > MAX_TEXT:
        raise DatasetError(f"{where}: field '{name}' has {len(text):,} characters; at most "
                           f"{MAX_TEXT:,}")
    if "\x00" in text:
        raise DatasetError(f"{where}: field '{name}' holds a NUL character")
    return text


def _texts(value: Any, where: str, name: str) -> list[str]:
    """A list-of-text field (one text is a list of one); DatasetError naming the culprit."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    if isinstance(value, dict):
        raise DatasetError(f"{where}: field '{name}' must be a list of texts, got an object")
    if len(items) > MAX_LIST:
        raise DatasetError(f"{where}: field '{name}' has {len(items):,} entries; at most "
                           f"{MAX_LIST:,}")
    return [t for i, v in enumerate(items) if v is not None
            and (t := _text(v, where, f"{name}[{i}]" if isinstance(value, list) else name))]


def _clean(obj: dict[str, Any], where: str, n: int) -> dict[str, Any]:
    """One question record, every field checked: `where` names the file and line."""
    at = f"{where}: line {n}"
    question = _text(obj.get("question"), at, "question", required=True)
    answers = obj.get("answers")
    name = "answers"
    if answers is None:
        answers, name = obj.get("answer", []), "answer"
    q: dict[str, Any] = {"id": _text(obj.get("id"), at, "id") or f"q{n:05d}",
                         "question": question, "answers": _texts(answers, at, name)}
    kind = _text(obj.get("type"), at, "type")
    if kind:
        q["type"] = kind
    for key in ("supporting_doc_ids", "context_doc_ids"):
        ids = _texts(obj.get(key), at, key)
        if ids:
            q[key] = ids
    return q


def _unique(questions: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    seen: set[str] = set()
    for q in questions:
        if q["id"] in seen:
            raise FlowkitError(f"{where}: question id '{q['id']}' appears twice")
        seen.add(q["id"])
    return questions


def _read(p: Path, max_bytes: int) -> str:
    """The text of a dataset file: a regular file within `max_bytes`, valid UTF-8."""
    if not p.exists():
        raise NotFoundError(f"file not found: {p}")
    try:
        return jsonread.decode_utf8(jsonread.read_file(p, max_bytes), str(p))
    except SpecError as err:
        raise DatasetError(str(err)) from None


def _json_lines(p: Path, text: str) -> Iterable[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line, each parsed within the bounds."""
    for n, line in enumerate(text.split("\n"), 1):   # not splitlines: JSON text may hold U+2028
        obj = _json_line(p, n, line)
        if obj is not None:
            yield n, obj


def _json_line(p: Path, n: int, line: str | bytes) -> dict[str, Any] | None:
    """Line `n` of a .jsonl file as an object (None when blank), parsed within the bounds."""
    try:
        text = jsonread.decode_utf8(line, f"{p}:{n}") if isinstance(line, bytes) else line
        if not text.strip():
            return None
        obj = jsonread.parse(text, f"{p}:{n}", max_depth=MAX_LINE_DEPTH,
                             max_string=MAX_CORPUS_BYTES)
    except SpecError as err:
        raise DatasetError(f"{p}:{n}: {err.detail} [{err.code}]"
                           + (f" (field '{err.field}')" if err.field else "")) from None
    if not isinstance(obj, dict):
        raise DatasetError(f"{p}:{n}: each line must be a JSON object, got "
                           f"{kind_of(obj, number_names=True)}")
    return obj


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Questions from a .jsonl file: {id, question, answers, [type], [supporting_doc_ids]} a line."""
    p = Path(path)
    out = []
    for n, obj in _json_lines(p, _read(p, MAX_FILE_BYTES)):
        out.append(_clean(obj, str(p), n))
        _count(out, p)
    return _unique(out, str(p))


def _count(questions: list[dict[str, Any]], p: Path) -> None:
    if len(questions) > MAX_QUESTIONS:
        raise DatasetError(f"{p}: more than {MAX_QUESTIONS:,} questions; split the set")


def read_csv(path: str | Path) -> list[dict[str, Any]]:
    """Questions from a CSV with a header row: question, answer (several answers separated by '|');
    optional columns id and type. A file without a header is read as question,answer pairs."""
    p = Path(path)
    text = _read(p, MAX_FILE_BYTES).removeprefix("\ufeff")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows = [(reader.line_num, r) for r in reader if any(c.strip() for c in r)]
    except csv.Error as err:   # a field over csv's limit (131,072 characters), a stray quote
        raise DatasetError(f"{p}: line {reader.line_num}: not a readable CSV row ({err})") from None
    if not rows:
        raise DatasetError(f"{p}: the CSV is empty")
    header = [c.strip().lower() for c in rows[0][1]]
    if "question" in header:
        body, cols = rows[1:], header
    else:
        body, cols = rows, ["question", "answer"]
    if "answer" not in cols and "answers" not in cols:
        raise DatasetError(f"{p}: the CSV needs the columns question,answer")
    out = []
    for n, (line, row) in enumerate(body, 1):
        rec = dict(zip(cols, row, strict=False))
        ans = rec.get("answer", rec.get("answers", ""))
        q = _clean({"id": rec.get("id") or f"q{n:05d}", "question": rec.get("question"),
                    "answers": [a.strip() for a in ans.split("|") if a.strip()],
                    "type": rec.get("type")}, str(p), line)
        out.append(q)
        _count(out, p)
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
    src = Path(dataset.corpus)
    if not src.is_file():        # a regular file (a FIFO or a device would block or never end)
        raise DatasetError(f"{src}: the corpus is not a regular file")
    if src.stat().st_size > MAX_CORPUS_BYTES:
        raise DatasetError(f"{src}: more than {MAX_CORPUS_BYTES:,} bytes; split the corpus")
    n = 0
    with src.open("rb") as fh, open(out_path, "w", encoding="utf-8") as dst:
        for lineno, raw in enumerate(fh, 1):
            obj = _json_line(src, lineno, raw)
            if obj is not None and str(obj.get("id")) in wanted:
                dst.write(raw.decode("utf-8").rstrip("\r\n") + "\n")
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
