"""Engine overhead, measured side by side in one run (not a test). Prints ratios.

1. naive flow end to end through flowkit (model in process) vs the same retrieval + llama.cpp
   calls in bare Python (goal <= 1.05);
2. naive flow end to end with the model in its worker process vs in process (goal <= 1.05);
3. tracing on (SQLite, one transaction per step) vs off (goal <= 1.03);
4. generation tokens/s through the worker vs raw llama-cpp-python (goal >= 0.95);
5. how long the worker takes to come back after a crash (SIGSEGV, then the next call).

Variants are interleaved round by round so drift in machine load hits all of them alike; the
figures are medians. Usage: python bench/engine.py [--rounds 7] [--data-dir DIR]
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit import compile_flow, run_flow
from flowkit.ingest import ensure_sample
from flowkit.operators._fuse import rrf
from flowkit.operators._text import passages
from flowkit.operators.generation.answer import ANSWER_PROMPT
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.llm import LlamaCppLLM, LLMSettings
from flowkit.runtime.resources import Resources, Settings
from flowkit.runtime.supervisor import WorkerLLM
from flowkit.templates import load_template
from flowkit.trace import NullSink
from storage.repo import Store

QUESTIONS = ["Who designed the Corren Lighthouse?", "When was the Corren Lighthouse first lit?",
             "What is the name of the main telescope at the Mount Aldra Observatory?"]


def bare_naive(res: Resources, model: LlamaCppLLM, question: str) -> str:
    """What the naive template does, written by hand: hybrid retrieval, one prompt, one call."""
    kb = res.kb("sample")
    docs = rrf([kb.lexical(question, 20), kb.dense(question, 20)], k=60)[:4]
    prompt = ANSWER_PROMPT.replace("{passages}", passages(docs, 4, 600)).replace("{question}", question)
    llama = model._load()
    text, stops = model.render(prompt)
    llama.reset()
    out = llama.create_completion(text, max_tokens=64, temperature=0.0, stop=stops,
                                  seed=res.settings.llm.seed)
    return out["choices"][0]["text"]


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--data-dir", default="")
    args = ap.parse_args()
    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="flowkit-bench-"))
    settings = LLMSettings(n_ctx=4096)
    res = Resources(data_dir, Settings(llm=settings))
    store = Store(res.database_url)
    flow = compile_flow(load_template("naive_rag"))
    inproc = LlamaCppLLM(settings)
    worker = WorkerLLM(settings, log_dir=data_dir / "logs")

    # generation throughput first, while nothing else (embedder, Chroma) is loaded in this process:
    # a long completion through the worker vs raw llama-cpp-python
    prompt = "Write a long story about a lighthouse keeper and a storm."
    llama = inproc._load()
    text, stops = inproc.render(prompt)
    tps_worker: list[float] = []
    tps_raw: list[float] = []
    worker.complete(prompt, max_tokens=8)          # warm up both
    llama.create_completion(text, max_tokens=8, temperature=0.0, stop=stops, seed=settings.seed)

    def through_worker() -> None:
        out = worker.complete(prompt, max_tokens=160, temperature=0.0)
        tps_worker.append(out.completion_tokens / (out.ms / 1000))

    def raw_llama() -> None:
        llama.reset()
        t0 = time.perf_counter()
        raw = llama.create_completion(text, max_tokens=160, temperature=0.0, stop=stops,
                                      seed=settings.seed)
        tps_raw.append(raw["usage"]["completion_tokens"] / (time.perf_counter() - t0))

    # ABBA order: whichever goes second in a pair runs on a warmer cache, so alternate
    for i in range(2 * args.rounds):
        first, second = (through_worker, raw_llama) if i % 2 == 0 else (raw_llama, through_worker)
        first()
        second()

    ensure_sample(res)                     # now the embedder, Chroma and BM25 join this process

    def run_with(llm: object, sink: object = None) -> None:
        res.set_llm(llm)
        run_flow(flow, res, RunRequest(q, kb="sample"), RunHooks(sink=sink or NullSink()))

    q = QUESTIONS[0]
    bare_naive(res, inproc, q)             # warm up: model, embedder, Chroma, BM25, worker
    run_with(inproc)
    run_with(worker)

    t_bare, t_in, t_worker, t_on = [], [], [], []
    for r in range(args.rounds):
        for q in QUESTIONS:
            variants = [
                lambda: t_bare.append(timed(lambda: bare_naive(res, inproc, q))),
                lambda: t_in.append(timed(lambda: run_with(inproc))),
                lambda: t_worker.append(timed(lambda: run_with(worker))),
                lambda: t_on.append(timed(lambda: run_with(worker, store.sink())))]
            k = r % len(variants)
            for v in variants[k:] + variants[:k]:   # rotate who goes first each round
                v()

    # restart after a crash: SIGSEGV the worker, then time the next call (start, load, answer)
    restart_s: list[float] = []
    for _ in range(args.rounds):
        pid = worker.pid or 0
        os.kill(pid, signal.SIGSEGV)
        time.sleep(0.2)                      # let it die before the next call
        t0 = time.perf_counter()
        try:
            worker.count_tokens("x")
        except Exception:  # noqa: BLE001 - the first call after the crash reports it
            worker.count_tokens("x")
        restart_s.append(time.perf_counter() - t0)
    worker.close()

    med = statistics.median
    print(f"rounds: {args.rounds} x {len(QUESTIONS)} questions; data dir {data_dir}")
    print(f"naive flow, bare Python               median {med(t_bare) * 1000:8.1f} ms")
    print(f"naive flow, flowkit, model in process median {med(t_in) * 1000:8.1f} ms")
    print(f"naive flow, flowkit, model in worker  median {med(t_worker) * 1000:8.1f} ms")
    print(f"naive flow, worker + SQLite trace     median {med(t_on) * 1000:8.1f} ms")
    print(f"ratio flowkit (in process) / bare     {med(t_in) / med(t_bare):.3f}   (goal <= 1.05)")
    print(f"ratio worker / in process             {med(t_worker) / med(t_in):.3f}   (goal <= 1.05)")
    print(f"ratio tracing on / off                {med(t_on) / med(t_worker):.3f}   (goal <= 1.03)")
    print(f"generation tokens/s worker {med(tps_worker):.1f}, raw llama-cpp-python {med(tps_raw):.1f}")
    print(f"ratio tokens/s worker / raw           {med(tps_worker) / med(tps_raw):.3f}   (goal >= 0.95)")
    print(f"worker restart after SIGSEGV          median {med(restart_s):.2f} s "
          f"(min {min(restart_s):.2f}, max {max(restart_s):.2f}; process start + model load)")


if __name__ == "__main__":
    main()
