"""Engine overhead, measured side by side in one run (not a test). Prints ratios.

1. naive flow end to end through flowkit vs the same retrieval + llama.cpp calls in bare Python
   (goal <= 1.05);
2. tracing on (SQLite, one transaction per step) vs off (goal <= 1.03);
3. generation tokens/s through flowkit's LLM wrapper vs raw llama-cpp-python (goal >= 0.95).

Variants are interleaved round by round so drift in machine load hits all of them alike; the
figures are medians. Usage: python bench/engine.py [--rounds 7] [--data-dir DIR]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit import compile_flow, run_flow  # noqa: E402
from flowkit.ingest import ensure_sample  # noqa: E402
from flowkit.operators._fuse import rrf  # noqa: E402
from flowkit.operators._text import passages  # noqa: E402
from flowkit.operators.generation.answer import ANSWER_PROMPT  # noqa: E402
from flowkit.runtime.llm import LLMSettings  # noqa: E402
from flowkit.runtime.resources import Resources, Settings  # noqa: E402
from flowkit.templates import load_template  # noqa: E402
from flowkit.trace import NullSink  # noqa: E402
from storage.repo import Store  # noqa: E402

QUESTIONS = ["Who designed the Corren Lighthouse?", "When was the Corren Lighthouse first lit?",
             "What is the name of the main telescope at the Mount Aldra Observatory?"]


def bare_naive(res: Resources, question: str) -> str:
    """What the naive template does, written by hand: hybrid retrieval, one prompt, one call."""
    kb = res.kb("sample")
    docs = rrf([kb.lexical(question, 20), kb.dense(question, 20)], k=60)[:4]
    prompt = ANSWER_PROMPT.replace("{passages}", passages(docs, 4, 600)).replace("{question}", question)
    llama = res.llm._load()
    text, stops = res.llm.render(prompt)
    llama.reset()
    out = llama.create_completion(text, max_tokens=64, temperature=0.0, stop=stops,
                                  seed=res.settings.llm.seed)
    return out["choices"][0]["text"]


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--data-dir", default="")
    args = ap.parse_args()
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="flowkit-bench-"))
    res = Resources(data_dir, Settings(llm=LLMSettings(n_ctx=4096)))
    ensure_sample(res)
    store = Store(res.database_url)
    flow = compile_flow(load_template("naive_rag"))
    bare_naive(res, QUESTIONS[0])             # warm up: model, embedder, Chroma, BM25
    run_flow(flow, QUESTIONS[0], res, kb="sample", sink=NullSink())

    t_flow, t_bare, t_on, t_off = [], [], [], []
    for r in range(args.rounds):
        for q in QUESTIONS:
            variants = [
                lambda: t_bare.append(timed(lambda: bare_naive(res, q))),
                lambda: t_off.append(timed(lambda: run_flow(flow, q, res, kb="sample",
                                                            sink=NullSink()))),
                lambda: t_on.append(timed(lambda: run_flow(flow, q, res, kb="sample",
                                                           sink=store.sink())))]
            for v in variants[r % 3:] + variants[: r % 3]:   # rotate who goes first each round
                v()
    t_flow = t_off

    # generation throughput: a long completion through the wrapper vs raw llama-cpp-python
    prompt = "Write a long story about a lighthouse keeper and a storm."
    llama = res.llm._load()
    text, stops = res.llm.render(prompt)
    tps_fk: list[float] = []
    tps_raw: list[float] = []

    def through_flowkit() -> None:
        out = res.llm.complete(prompt, max_tokens=160, temperature=0.0)
        tps_fk.append(out.completion_tokens / (out.ms / 1000))

    def raw_llama() -> None:
        llama.reset()
        t0 = time.perf_counter()
        raw = llama.create_completion(text, max_tokens=160, temperature=0.0, stop=stops,
                                      seed=res.settings.llm.seed)
        tps_raw.append(raw["usage"]["completion_tokens"] / (time.perf_counter() - t0))

    # ABBA order: whichever goes second in a pair runs on a warmer cache, so alternate
    for i in range(2 * args.rounds):
        first, second = (through_flowkit, raw_llama) if i % 2 == 0 else (raw_llama, through_flowkit)
        first()
        second()

    med = statistics.median
    print(f"rounds: {args.rounds} x {len(QUESTIONS)} questions; data dir {data_dir}")
    print(f"naive flow, flowkit (no trace)   median {med(t_flow) * 1000:8.1f} ms")
    print(f"naive flow, bare Python          median {med(t_bare) * 1000:8.1f} ms")
    print(f"naive flow, flowkit + SQLite     median {med(t_on) * 1000:8.1f} ms")
    print(f"ratio flowkit / bare             {med(t_flow) / med(t_bare):.3f}   (goal <= 1.05)")
    print(f"ratio tracing on / off           {med(t_on) / med(t_off):.3f}   (goal <= 1.03)")
    print(f"generation tokens/s flowkit {med(tps_fk):.1f}, raw llama-cpp-python {med(tps_raw):.1f}")
    print(f"ratio tokens/s flowkit / raw     {med(tps_fk) / med(tps_raw):.3f}   (goal >= 0.95)")


if __name__ == "__main__":
    main()
