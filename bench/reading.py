"""Reading benchmark: can the generator read? (not a test). Prints a table, writes JSON.

Each question of a shared set gets its gold passages (`supporting_doc_ids`) plus a few distractors
from its own `context_doc_ids`, shuffled with a fixed seed, so retrieval cannot be blamed: a low
score here means the model cannot read, a low score in `flowkit eval` with a good score here means
retrieval missed. Per model x prompt variant: EM, F1, Acc (gold answer contained), answer length in
words, seconds per question, generation tokens/s. Answers are cut as the answer operator cuts them
(first line, citations removed).

The questions are the set's questions after the first `--skip` (default 100: evaluations use the
first 100, so prompts are never tuned on them). The JSON (default flowkit/runtime/reading_bench.json)
is what `flowkit models` and the Settings page show.

Usage: python bench/reading.py [--n 60] [--models smollm2-135m,gemma3-270m] [--variants ...]
                               [--threads 1] [--compare-threads 10] [--out FILE]
On a shared machine run one process per model side by side (so both see the same load), each
with its own --out, then join them: python bench/reading.py --merge A.json B.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.eval.datasets import read_jsonl, shared_data_dir
from flowkit.eval.metrics import accuracy, exact_match, token_f1
from flowkit.operators._answers import short_answer
from flowkit.operators._text import passages
from flowkit.operators.generation.answer import ANSWER_PROMPT
from flowkit.runtime.llm import BASE_EXAMPLES, LlamaCppLLM, LLMSettings
from flowkit.runtime.models import READING_FILE, gguf_info, model_file

SHORT_SYSTEM = ("Answer the question based on the given passages. Only give me the answer and do "
                "not output any other words.\n\nPassages:\n{passages}")

#: the answer operator's prompt before this benchmark (cited short answer)
CITED_PROMPT = (
    "Answer the question using only the passages. Reply with a short answer (a few words), then "
    "the number of the passage you used in brackets, like [1].\n\n{passages}\n\n"
    "Question: {question}\nAnswer:")

#: name -> (user prompt, system prompt or None, in-context examples for base models)
VARIANTS: dict[str, tuple[str, str | None, bool]] = {
    # the answer operator's own prompt, formatted per model kind as flows send it
    "operator": (ANSWER_PROMPT, None, True),
    # the answer operator's earlier prompt: a few words, then a citation
    "cited": (CITED_PROMPT, None, True),
    # FlashRAG's "only give me the answer" with the passages in the system text
    "short_system": ("Question: {question}\nAnswer:", SHORT_SYSTEM, True),
    # the passages and the question, nothing else (no instruction, no examples)
    "plain": ("{passages}\n\nQuestion: {question}\nAnswer:", None, False),
    # the operator's prompt with the examples written into the prompt itself (for a base model
    # that is the text "operator" sends already, so it is measured for instruct models only)
    "fewshot": (BASE_EXAMPLES + "\n\n" + ANSWER_PROMPT, None, False),
}


def build_items(data_dir: Path, n: int, skip: int, distractors: int, seed: int) -> list[dict[str, Any]]:
    """Questions `skip`..`skip+n` with gold passages + distractors, shuffled by a seeded RNG."""
    questions = read_jsonl(data_dir / "questions.jsonl")[skip:skip + n]
    with open(data_dir / "corpus.jsonl", encoding="utf-8") as f:
        corpus = {d["id"]: d for d in map(json.loads, f) if d}
    items = []
    for i, q in enumerate(questions):
        rng = random.Random(seed * 100003 + i)
        gold = [corpus[d] for d in q.get("supporting_doc_ids") or [] if d in corpus]
        others = [d for d in q.get("context_doc_ids") or []
                  if d in corpus and d not in set(q.get("supporting_doc_ids") or [])]
        docs = gold + [corpus[d] for d in rng.sample(others, min(distractors, len(others)))]
        rng.shuffle(docs)
        items.append({"id": q["id"], "question": q["question"], "answers": q["answers"],
                      "docs": docs})
    return items


def _perf(llm: LlamaCppLLM) -> tuple[float, int]:
    """Generation (not prompt) milliseconds and tokens of the last call, from llama.cpp."""
    try:
        import llama_cpp
        data = llama_cpp.llama_perf_context(llm._llama._ctx.ctx)
        return float(data.t_eval_ms), int(data.n_eval)
    except (AttributeError, TypeError):
        return 0.0, 0


def _perf_reset(llm: LlamaCppLLM) -> None:
    try:
        import llama_cpp
        llama_cpp.llama_perf_context_reset(llm._llama._ctx.ctx)
    except (AttributeError, TypeError):
        pass


def run_variant(llm: LlamaCppLLM, items: list[dict[str, Any]], variant: str, max_tokens: int,
                passage_chars: int) -> dict[str, Any]:
    """Answer every item with one prompt variant; the scores and timings."""
    prompt_t, system_t, examples = VARIANTS[variant]
    llm.settings = replace(llm.settings, prompt_examples=examples)
    em, f1, acc, words, secs, gen_ms, gen_tok = [], [], [], [], [], 0.0, 0
    samples = []
    for it in items:
        shown = passages(it["docs"], len(it["docs"]), passage_chars)
        prompt = prompt_t.replace("{passages}", shown).replace("{question}", it["question"])
        system = system_t.replace("{passages}", shown) if system_t else None
        _perf_reset(llm)
        t0 = time.perf_counter()
        out = llm.complete(prompt, max_tokens=max_tokens, system=system)
        secs.append(time.perf_counter() - t0)
        ms, ntok = _perf(llm)
        gen_ms, gen_tok = gen_ms + ms, gen_tok + ntok
        answer = short_answer(out.text)        # as generation.answer cuts it
        em.append(exact_match(answer, it["answers"]))
        f1.append(token_f1(answer, it["answers"]))
        acc.append(accuracy(answer, it["answers"]))
        words.append(len(answer.split()))
        if len(samples) < 5:
            samples.append({"question": it["question"][:80], "answer": answer[:80]})
    return {"variant": variant, "n": len(items), "em": round(100 * statistics.mean(em), 1),
            "f1": round(100 * statistics.mean(f1), 1), "acc": round(100 * statistics.mean(acc), 1),
            "words": round(statistics.mean(words), 1), "s_per_q": round(statistics.mean(secs), 2),
            "tok_s": round(gen_tok / (gen_ms / 1000), 1) if gen_ms else None, "samples": samples}


def print_table(results: list[dict[str, Any]]) -> None:
    print(f"\n{'model':14} {'kind':8} {'variant':13} {'EM':>5} {'F1':>5} {'Acc':>5} {'words':>5} "
          f"{'s/q':>5} {'tok/s':>6}")
    for r in results:
        print(f"{r['model']:14} {r['kind']:8} {r['variant']:13} {r['em']:5.1f} {r['f1']:5.1f} "
              f"{r['acc']:5.1f} {r['words']:5.1f} {r['s_per_q']:5.2f} {r['tok_s'] or 0:6.1f}")


def merge(paths: list[str], out: str) -> int:
    """Join result files into one (the settings of the last file head it)."""
    joined: dict[str, Any] = {}
    results: dict[tuple[str, str], dict[str, Any]] = {}
    threads: list[dict[str, Any]] = []
    for p in paths:
        data = json.loads(Path(p).read_text())
        joined.update({k: v for k, v in data.items() if k not in ("results", "threads_measured")})
        results.update({(r["model"], r["variant"]): r for r in data.get("results") or []})
        threads += data.get("threads_measured") or []
    joined.update(results=list(results.values()), threads_measured=threads)
    Path(out).write_text(json.dumps(joined, indent=1) + "\n")
    print_table(joined["results"])
    print(f"wrote {out}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--set", default="hotpotqa_dev_500_ircotfmt")
    ap.add_argument("--data-dir", default="", help="default: the set in ../shared/data")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--skip", type=int, default=100, help="questions left out at the start")
    ap.add_argument("--distractors", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", default="smollm2-135m,gemma3-270m",
                    help="packaged model ids or GGUF paths, comma-separated")
    ap.add_argument("--variants", default="operator,cited,short_system,plain,fewshot")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--compare-threads", type=int, default=0,
                    help="first time N questions with 1 and 2 threads (operator variant)")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--passage-chars", type=int, default=600)
    ap.add_argument("--out", default=str(READING_FILE))
    ap.add_argument("--merge", nargs="+", default=[],
                    help="only join these result files (runs done side by side, one model each) "
                         "into --out; a later file's (model, variant) replaces an earlier one's")
    args = ap.parse_args()
    if args.merge:
        return merge(args.merge, args.out)
    data_dir = Path(args.data_dir) if args.data_dir else shared_data_dir() / args.set
    items = build_items(data_dir, args.n, args.skip, args.distractors, args.seed)
    report: dict[str, Any] = {
        "set": args.set, "n": len(items), "skip": args.skip, "distractors": args.distractors,
        "seed": args.seed, "threads": args.threads, "max_tokens": args.max_tokens,
        "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "results": [], "threads_measured": []}
    for ident in [m.strip() for m in args.models.split(",") if m.strip()]:
        path = model_file(ident)
        kind = gguf_info(path)["kind"]
        if args.compare_threads:
            for t in (1, 2):
                llm = LlamaCppLLM(LLMSettings(model_path=ident, n_threads=t, n_ctx=4096))
                llm.tokenize("warm up")
                r = run_variant(llm, items[:args.compare_threads], "operator", args.max_tokens,
                                args.passage_chars)
                report["threads_measured"].append({"model": ident, "threads": t,
                                                   "s_per_q": r["s_per_q"], "tok_s": r["tok_s"]})
                print(f"{ident} threads={t}: {r['s_per_q']} s/question, {r['tok_s']} tok/s",
                      flush=True)
        llm = LlamaCppLLM(LLMSettings(model_path=ident, n_threads=args.threads, n_ctx=4096))
        llm.tokenize("warm up")
        for variant in [v.strip() for v in args.variants.split(",") if v.strip()]:
            if kind == "base" and variant == "fewshot":
                continue
            r = run_variant(llm, items, variant, args.max_tokens, args.passage_chars)
            r.update(model=ident, file=path.name, kind=kind)
            samples = r.pop("samples")    # the set's text stays out of the stored JSON
            report["results"].append(r)
            print(f"{ident:14} {kind:8} {variant:13} EM {r['em']:5.1f} F1 {r['f1']:5.1f} "
                  f"Acc {r['acc']:5.1f} words {r['words']:4.1f} {r['s_per_q']:5.2f} s/q "
                  f"{r['tok_s']} tok/s  e.g. {samples[0]['answer']!r}", flush=True)
            Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print_table(report["results"])
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
