"""Today's PDF ingest against the structure-aware one, on a real manual, side by side in one run.

Not a test. The manual is SQLite's documentation as Debian ships it (`sqlite3-doc`, public domain;
`make manual` installs it): eleven of its HTML pages (PAGES, about 115 printed pages, many of
them tables) printed to PDF by Chromium at run time into a cache folder, never copied into this
repository. Both ingests read the same PDFs into knowledge bases of their own in one data folder:

  old  pypdf's `extract_text`, every page of a file joined into one document, cut by
       `indexing.chunk_fixed` (what `flowkit ingest` did before the document readers);
  new  `flowkit.ingest.ingest(..., chunker="indexing.chunk_structure")` (the readers in
       flowkit/documents and the structure-aware chunker).

The questions (bench/documents_questions.jsonl) are ours: 45 questions a user of SQLite would
ask, written after reading the pages and each checked by hand against the text of sqlite3-doc
3.40.1-2+deb12u2 (Debian 12): 20 answered by a table row, 15 by prose, 5 needing two places,
5 "how do I", interleaved so that --limit N keeps a mix. Each names where its answer is (`where`)
and carries `evidence`: one group of short substrings per place, copied from the supporting row or
sentence (a row's key cell and value, or a row and the column header that says what it means).

What is measured, old and new on the same questions:
1. ingest seconds per PDF page: the whole ingest, the embedding part apart (a timing wrapper
   around the knowledge base's embedder) and the rest (reading, chunking, indexing);
2. evidence recall@5 without the model: the top 5 of `retrieval.hybrid` (the search `naive_rag`
   makes) for the question; a question counts when every evidence group is found whole, after
   whitespace and Unicode normalisation, inside one of those 5 chunks. Beside it, how many
   questions have their evidence in some chunk at all (what no retriever can exceed);
3. per template (--templates): answer EM/F1 through flowkit's own evaluation runner with the
   packaged default model (Gemma 3 270M), the evidence recall of the searches the flow made (top 5
   of each; `naive_rag` keeps 4, so these are the passages its answer step reads), by question
   type, and the paired F1 difference new minus old with its 95% bootstrap interval
   (`metrics.paired_bootstrap`, as the Compare page shows it).

Measured here (2 cores shared with other work): printing the 11 pages takes about 1 min (once),
each ingest 2.5-4 min (mostly embedding), `naive_rag` 8-16 s a question and
`post_retrieval_branching` (three short answer calls) 5-10 s; the whole run, 45 questions x 2
templates x 2 ingests, about 35 min. `--limit 7 --templates naive_rag` is a quick look.

Evaluations are stored in the data folder under ids derived from the chunks, so a second run
with the same ingest resumes (and the completion cache serves repeated prompts).

Usage:
  python bench/documents.py [--limit N] [--templates naive_rag,post_retrieval_branching]
      [--ingests old,new] [--out results.json] [--reuse] [--data-dir DIR] [--cache DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from flowkit import templates
from flowkit.eval.metrics import QuestionResult, by_type, paired_bootstrap, summarize
from flowkit.eval.runner import FlowEntry, collect_results, eval_id_for, make_plan
from flowkit.eval.strategy import EvalRun
from flowkit.ingest import ingest, make_chunker
from flowkit.operators import _answers, _window
from flowkit.operators.retrieval.search import HybridSearch
from flowkit.runtime.kb import KnowledgeBase
from service.evaluations import eval_repo
from service.evaluations import run as run_evaluation
from service.workspace import Workspace

ROOT = Path(__file__).resolve().parent.parent
MANUAL_DIR = Path("/usr/share/doc/sqlite3")
PAGES = ("datatype3", "lang_datefunc", "limits", "nulls", "lang_expr", "json1", "printf",
         "stricttables", "fileformat2", "pragma", "autoinc")
QUESTIONS = Path(__file__).with_name("documents_questions.jsonl")
CHROMIUM = ("chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
            "--generate-pdf-document-outline")
NEW_CHUNKER = "indexing.chunk_structure"
NEW_PARTS = (ROOT / "flowkit/operators/indexing/structured.py", ROOT / "flowkit/documents/read.py")
KB_NAMES = {"old": "sqlite-pypdf", "new": "sqlite-structured"}
K = 5
#: where a knowledge base's meta.json keeps the timing of the ingest that made it (for --reuse)
TIMING_KEY = "bench_documents_ingest"


# ---- the manual --------------------------------------------------------------------------

def print_manual(cache: Path) -> list[Path]:
    """The PDFs of PAGES, printed by Chromium into `cache` unless already there."""
    if not MANUAL_DIR.is_dir():
        raise SystemExit(f"{MANUAL_DIR} is missing: run `make manual` (apt-get install sqlite3-doc)")
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for page in PAGES:
        html, pdf = MANUAL_DIR / f"{page}.html", cache / f"{page}.pdf"
        if not pdf.is_file() or pdf.stat().st_mtime < html.stat().st_mtime:
            subprocess.run([*CHROMIUM, f"--print-to-pdf={pdf}", html.as_uri()], check=True,
                           capture_output=True, timeout=180)
        out.append(pdf)
    return out


def manual_version() -> str:
    try:
        done = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "sqlite3-doc"],
                              capture_output=True, text=True, timeout=30)
        return done.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def pdf_page_count(pdfs: Sequence[Path]) -> int:
    from pypdf import PdfReader
    return sum(len(PdfReader(str(p)).pages) for p in pdfs)


def read_questions(path: Path, limit: int | None) -> list[dict[str, Any]]:
    qs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return qs[:limit] if limit else qs


# ---- the two ingests -------------------------------------------------------------------------

class _TimedEmbedder:
    """Wraps a knowledge base's embedder and adds up the seconds spent embedding."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0

    def embed(self, texts: list[str]) -> Any:
        t0 = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - t0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@dataclass
class IngestTiming:
    ingest: str
    kb: str
    pages: int
    chunks: int
    total_s: float
    embed_s: float

    @property
    def rest_s(self) -> float:
        """Reading, chunking and indexing: everything but the embedding."""
        return self.total_s - self.embed_s

    def per_page(self) -> dict[str, float]:
        n = max(self.pages, 1)
        return {"total": self.total_s / n, "read_chunk_index": self.rest_s / n,
                "embed": self.embed_s / n}

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"rest_s": self.rest_s, "s_per_page": self.per_page()}


def _ingest_pypdf(ws: Workspace, kb: str, pdfs: Sequence[Path]) -> int:
    """Today's path, kept here: one document per file (pypdf's text of every page joined), cut
    into fixed windows of words."""
    from pypdf import PdfReader
    records = [{"id": p.stem, "title": p.stem, "source": p.name,
                "text": "\n".join(page.extract_text() or "" for page in PdfReader(str(p)).pages)}
               for p in pdfs]
    op = make_chunker("indexing.chunk_fixed")
    chunks = op.chunk(records)
    base = ws.resources.kb(kb)
    with base.changing():
        n = base.add(chunks)
        base.update_meta(chunker="indexing.chunk_fixed",
                         chunker_params=op.params.model_dump(mode="json"))
    return n


def _ingest_structured(ws: Workspace, kb: str, pdfs: Sequence[Path]) -> int:
    return ingest(ws.resources, kb, pdfs, chunker=NEW_CHUNKER)


INGESTS: dict[str, Callable[[Workspace, str, Sequence[Path]], int]] = {
    "old": _ingest_pypdf, "new": _ingest_structured}


def timed_ingest(ws: Workspace, which: str, pdfs: Sequence[Path], pages: int,
                 reuse: bool = False) -> IngestTiming:
    """Drop the knowledge base, ingest again and time it (the embedder is warmed first, so its
    load is not counted). With `reuse`, a ready knowledge base that this bench ingested is kept
    and the timing recorded in its meta.json is reported."""
    kb = KB_NAMES[which]
    base = ws.resources.kb(kb)
    recorded = base.meta().get(TIMING_KEY) if base.exists else None
    if reuse and base.ready and isinstance(recorded, dict):
        return IngestTiming(**recorded)
    if base.exists:
        base.drop()
    inner = base.embedder
    inner.embed(["warm up"])
    timer = _TimedEmbedder(inner)
    base.embedder = timer
    try:
        t0 = time.perf_counter()
        n = INGESTS[which](ws, kb, pdfs)
        total = time.perf_counter() - t0
    finally:
        base.embedder = inner
    timing = IngestTiming(which, kb, pages, n, total, timer.seconds)
    base.update_meta(**{TIMING_KEY: asdict(timing)})
    return timing


# ---- evidence ------------------------------------------------------------------------------

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                         "\u2212": "-", "\u00a0": " "})


def norm(text: str) -> str:
    """NFKC, straight quotes, lower case, whitespace collapsed: how evidence is looked for."""
    return " ".join(unicodedata.normalize("NFKC", text).translate(_QUOTES).lower().split())


def evidence_found(groups: Sequence[Sequence[str]], chunk_texts: Sequence[str]) -> bool:
    """True when every group of evidence substrings lies whole inside one of the chunks."""
    texts = [norm(t) for t in chunk_texts]
    return all(any(all(norm(s) in t for s in group) for t in texts) for group in groups)


class _KbContext:
    """What a search operator reads from its run context: the knowledge base."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb


def retrieval_recall(ws: Workspace, kb: str, questions: Sequence[dict[str, Any]]) -> dict[str, bool]:
    """Question id -> evidence in the top K of `retrieval.hybrid` (no model involved)."""
    base = ws.resources.kb(kb)
    search = HybridSearch("probe", HybridSearch.Params(top_k=K))
    ctx: Any = _KbContext(base)
    return {q["id"]: evidence_found(q["evidence"], [d["text"] for d in
                                                    search.search(q["question"], ctx)])
            for q in questions}


def findable(ws: Workspace, kb: str, questions: Sequence[dict[str, Any]]) -> dict[str, bool]:
    """Question id -> its evidence lies in some chunk of the knowledge base (the ceiling)."""
    base = ws.resources.kb(kb)
    texts = [d["text"] for d in base.chunks(limit=base.count() + 1)]
    return {q["id"]: evidence_found(q["evidence"], texts) for q in questions}


def kb_fingerprint(base: KnowledgeBase) -> str:
    """The chunks, the views searched beside them when there are any (kb_views), and whether BM25
    stems: a search that finds other chunks gives another evaluation."""
    rows: list[Any] = sorted((d["id"], d["text"]) for d in base.chunks(limit=base.count() + 1))
    views = {k: base.meta().get(k) for k in ("views", "row_views") if base.meta().get(k)}
    if views:
        rows.append(views)
    if base.bm25.stemmed:
        rows.append("bm25 stemmed")
    return hashlib.sha1(json.dumps(rows, ensure_ascii=False).encode()).hexdigest()[:12]


def reader_fingerprint() -> str:
    """The code that decides what a reader is shown of a chunk (flowkit.operators._window) and
    how its answer is cut (flowkit.operators._answers): a change there gives another evaluation,
    not the stored one."""
    code = b"".join(Path(m.__file__ or "").read_bytes() for m in (_window, _answers))
    return hashlib.sha1(code).hexdigest()[:12]


# ---- answering -----------------------------------------------------------------------------

@dataclass
class FlowOutcome:
    """One template on one knowledge base: scored results and per-question evidence hits."""

    template: str
    ingest: str
    eval_id: str
    results: list[QuestionResult]
    evidence: dict[str, bool] = field(default_factory=dict)
    wall_s: float = 0.0


def answer(ws: Workspace, template: str, which: str, questions: list[dict[str, Any]]) -> FlowOutcome:
    """Run (or resume) the template on the questions against one knowledge base through the
    evaluation runner, and score it."""
    kb = KB_NAMES[which]
    base = ws.resources.kb(kb)
    flows = [FlowEntry(ref=template, spec=templates.load_template(template))]
    derived = eval_id_for(flows, "sqlite-manual", kb, None, questions)
    eid = hashlib.sha1(f"{derived}:{kb_fingerprint(base)}:{reader_fingerprint()}".encode()
                       ).hexdigest()[:12]
    plan = make_plan(flows, "sqlite-manual", questions, kb, eval_id=eid,
                     name=f"{template} on the SQLite manual ({which} ingest)")
    t0 = time.perf_counter()

    def progress(p: Any) -> None:
        print(f"  {template} / {which}: {p.describe()}", flush=True)

    run_evaluation(ws, plan, EvalRun(progress=progress))
    wall = time.perf_counter() - t0
    repo = eval_repo(ws)
    retrievals = repo.retrievals(plan.eval_id)
    results = collect_results(plan, repo.runs(plan.eval_id), retrievals, k=K)[plan.flows[0].label]
    by_q = {q["id"]: q for q in questions}
    hits: dict[str, bool] = {}
    for r in results:
        ids = list(dict.fromkeys(_chunk_id(c) for ranked in retrievals.get(r.run_id, [])
                                 for c in ranked[:K]))
        texts = [d["text"] for d in base.by_ids(ids)]
        hits[r.question_id] = evidence_found(by_q[r.question_id]["evidence"], texts)
    return FlowOutcome(template, which, plan.eval_id, results, hits, wall)


def _chunk_id(entry: str | dict[str, Any]) -> str:
    """A recorded search result: a chunk id, or a record of the chunk's place with its "id"."""
    return entry if isinstance(entry, str) else str(entry["id"])


# ---- report --------------------------------------------------------------------------------

def _share(hits: dict[str, bool], ids: Sequence[str] | None = None) -> float:
    keys = list(hits) if ids is None else [i for i in ids if i in hits]
    return sum(hits[i] for i in keys) / len(keys) if keys else math.nan


def _pct(x: float) -> str:
    return "   -" if math.isnan(x) else f"{100 * x:5.1f}"


def _interval(results: list[QuestionResult], base: list[QuestionResult]) -> dict[str, Any]:
    if not results or not base:
        return {}
    return paired_bootstrap(results, base, "f1").to_dict()


def _fmt_interval(d: dict[str, Any]) -> str:
    if not d or d.get("n", 0) == 0:
        return "-"
    return (f"{100 * d['mean']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]"
            + (" *" if d.get("significant") else ""))


def summarise(questions: list[dict[str, Any]], timings: dict[str, IngestTiming],
              recall: dict[str, dict[str, bool]], ceiling: dict[str, dict[str, bool]],
              outcomes: list[FlowOutcome]) -> dict[str, Any]:
    types = sorted({q["type"] for q in questions})
    ids_of = {t: [q["id"] for q in questions if q["type"] == t] for t in types}
    out: dict[str, Any] = {
        "questions": len(questions), "types": {t: len(v) for t, v in ids_of.items()},
        "ingest": {w: t.to_dict() for w, t in timings.items()},
        "evidence_in_kb": {w: _share(h) for w, h in ceiling.items()},
        "retrieval_recall_at_5": {w: {"all": _share(h), **{t: _share(h, ids_of[t]) for t in types}}
                                  for w, h in recall.items()},
        "retrieval_hits": recall, "templates": {}}
    if "old" in timings and "new" in timings and timings["old"].total_s > 0:
        out["ingest_ratio_new_over_old"] = timings["new"].total_s / timings["old"].total_s
    for o in outcomes:
        s = summarize(o.template, o.results)
        entry = out["templates"].setdefault(o.template, {})
        entry[o.ingest] = {
            "eval_id": o.eval_id, "n": s.n, "em": s.em, "f1": s.f1, "failed": s.failed,
            "seconds_per_question": s.seconds, "wall_s": o.wall_s,
            "evidence_recall_at_5": _share(o.evidence),
            "by_type": {t: {"n": v.n, "em": v.em, "f1": v.f1,
                            "evidence_recall_at_5": _share(o.evidence, ids_of.get(t, []))}
                        for t, v in by_type(o.template, o.results).items()},
            "results": [r.to_dict() for r in o.results], "evidence_hits": o.evidence}
    for template, entry in out["templates"].items():
        if "old" in entry and "new" in entry:
            new = [o for o in outcomes if o.template == template and o.ingest == "new"][0].results
            old = [o for o in outcomes if o.template == template and o.ingest == "old"][0].results
            entry["f1_new_minus_old"] = _interval(new, old)
            entry["f1_new_minus_old_by_type"] = {
                t: _interval([r for r in new if r.type == t], [r for r in old if r.type == t])
                for t in types}
    return out


def print_report(rep: dict[str, Any]) -> None:
    ingests = list(rep["ingest"])
    print(f"\nSQLite manual ({rep['manual']['pages']} PDF pages, {len(PAGES)} files, "
          f"sqlite3-doc {rep['manual']['version']}); {rep['questions']} questions "
          + ", ".join(f"{n} {t}" for t, n in rep["types"].items()))
    print(f"\n{'ingest':8} {'chunks':>7} {'s/page':>8} {'read+chunk+index':>17} {'embed':>8}")
    for w in ingests:
        t = rep["ingest"][w]
        pp = t["s_per_page"]
        print(f"{w:8} {t['chunks']:7d} {pp['total']:8.3f} {pp['read_chunk_index']:17.3f} "
              f"{pp['embed']:8.3f}")
    if "ingest_ratio_new_over_old" in rep:
        print(f"ingest time new / old: {rep['ingest_ratio_new_over_old']:.2f}x")
    types = list(rep["types"])
    print(f"\nevidence recall@{K}, retrieval.hybrid top {K} of the question (no model)")
    print(f"{'ingest':8} {'in KB':>6} {'all':>6} " + " ".join(f"{t:>6}" for t in types))
    for w in ingests:
        r = rep["retrieval_recall_at_5"].get(w, {})
        print(f"{w:8} {_pct(rep['evidence_in_kb'].get(w, math.nan)):>6} {_pct(r.get('all', math.nan)):>6} "
              + " ".join(f"{_pct(r.get(t, math.nan)):>6}" for t in types))
    for template, entry in rep["templates"].items():
        print(f"\n{template}: EM / F1 / evidence recall@{K} of its searches, by question type")
        print(f"{'ingest':8} {'n':>3} {'EM':>6} {'F1':>6} {'R@5':>6} "
              + " ".join(f"{'F1 ' + t:>12}" for t in types) + f" {'s/q':>6}")
        for w in ingests:
            e = entry.get(w)
            if not e:
                continue
            bt = e["by_type"]
            print(f"{w:8} {e['n']:3d} {_pct(e['em']):>6} {_pct(e['f1']):>6} "
                  f"{_pct(e['evidence_recall_at_5']):>6} "
                  + " ".join(f"{_pct(bt[t]['f1']) if t in bt else '-':>12}" for t in types)
                  + f" {e['seconds_per_question']:6.1f}")
        if "f1_new_minus_old" in entry:
            print(f"F1 new - old (paired, 95% bootstrap): {_fmt_interval(entry['f1_new_minus_old'])}")
            for t, d in entry["f1_new_minus_old_by_type"].items():
                print(f"  {t:8} {_fmt_interval(d)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--limit", type=int, default=None, help="the first N questions only")
    ap.add_argument("--templates", default="naive_rag,post_retrieval_branching",
                    help="comma-separated templates ('' to measure ingest and retrieval only)")
    ap.add_argument("--ingests", default="old,new", help="old, new or both")
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--data-dir", type=Path, default=ROOT / ".flowkit" / "bench-documents")
    ap.add_argument("--cache", type=Path, default=ROOT / ".flowkit" / "bench-manual",
                    help="where the printed PDFs are kept")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--reuse", action="store_true",
                    help="keep knowledge bases this bench ingested before (and their timings)")
    a = ap.parse_args()
    ingests = [w for w in a.ingests.split(",") if w]
    bad = [w for w in ingests if w not in INGESTS]
    if bad:
        ap.error(f"--ingests: unknown {bad}; use old, new or both")
    if "new" in ingests and not all(p.is_file() for p in NEW_PARTS):
        print("the structure-aware ingest has not landed yet "
              f"({', '.join(str(p.relative_to(ROOT)) for p in NEW_PARTS if not p.is_file())} "
              "missing): measuring the old ingest only", flush=True)
        ingests = [w for w in ingests if w != "new"]
    if shutil.which("chromium") is None:
        raise SystemExit("chromium is missing: run `make browser`")
    questions = read_questions(a.questions, a.limit)
    t0 = time.perf_counter()
    pdfs = print_manual(a.cache)
    pages = pdf_page_count(pdfs)
    print(f"manual: {len(pdfs)} PDFs, {pages} pages in {a.cache} "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)
    ws = Workspace(a.data_dir)
    try:
        timings: dict[str, IngestTiming] = {}
        recall: dict[str, dict[str, bool]] = {}
        ceiling: dict[str, dict[str, bool]] = {}
        for w in ingests:
            timings[w] = timed_ingest(ws, w, pdfs, pages, a.reuse)
            t = timings[w]
            print(f"ingest {w}: {t.chunks} chunks in {t.total_s:.1f} s "
                  f"(embedding {t.embed_s:.1f} s)", flush=True)
            ceiling[w] = findable(ws, KB_NAMES[w], questions)
            recall[w] = retrieval_recall(ws, KB_NAMES[w], questions)
        outcomes = [answer(ws, tpl, w, questions)
                    for tpl in [t for t in a.templates.split(",") if t] for w in ingests]
    finally:
        ws.close()
    rep = summarise(questions, timings, recall, ceiling, outcomes)
    rep["manual"] = {"package": "sqlite3-doc", "version": manual_version(), "pages": pages,
                     "files": [p.name for p in pdfs]}
    print_report(rep)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(_no_nan(rep), indent=1, default=str) + "\n")
        print(f"\nwrote {a.out}")
    return 0


def _no_nan(value: Any) -> Any:
    """JSON has no NaN: a share over no questions is written as null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return value


if __name__ == "__main__":
    sys.exit(main())
