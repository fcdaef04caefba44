"""Server engines and Ray workers, measured side by side in one run (not a test). Prints ratios.

1. the naive flow end to end, embedded engines (model worker, PersistentClient, SQLite) vs all
   three server engines on loopback (llama-cpp-python's OpenAI server, `chroma run`, PostgreSQL);
2. `flowkit eval` of 3 flows x N questions with 1 vs 2 Ray workers (speed-up);
3. Chroma query p50, embedded vs server, at the sample KB's size and at --big chunks (random
   384-dim vectors written straight into the collection: the query cost, not the embedder's).

Usage: python bench/scale.py [--rounds 3] [--questions 20] [--big 100000]
"""
from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit import compile_flow, run_flow
from flowkit.eval.runner import make_plan, resolve_flows, run_evaluation
from flowkit.eval.strategy import EvalRun, RayWorkers
from flowkit.ingest import ensure_sample
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.llm import LLMSettings, default_model_path
from flowkit.runtime.resources import Resources, Settings, save_settings
from flowkit.runtime.vectorstore import ChromaStore
from flowkit.templates import load_template
from flowkit.testing.servers import chroma_server, llama_server, postgres_server
from service.workspace import Workspace
from storage.evals import EvalRepo
from storage.repo import Store

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ["Who designed the Corren Lighthouse?", "When was the Corren Lighthouse first lit?",
             "What is the name of the main telescope at the Mount Aldra Observatory?"]


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def end_to_end(rounds: int, tmp: Path) -> tuple[float, float]:
    """Median seconds of the naive flow, embedded vs servers (same model file, same seed)."""
    with llama_server(default_model_path(), n_ctx=4096, log_dir=tmp) as url, \
            chroma_server(tmp / "chroma-data") as (host, port), postgres_server() as pg:
        embedded = Resources(tmp / "embedded", Settings(llm=LLMSettings(n_ctx=4096)))
        served = Resources(tmp / "served", Settings(
            llm=LLMSettings(backend="openai", base_url=url, model_name="default", n_ctx=4096),
            chroma_host=host, chroma_port=port, database_url=pg))
        served.set_embedder(embedded.embedder)
        for res in (embedded, served):
            ensure_sample(res)
        stores = {id(embedded): Store(embedded.database_url), id(served): Store(pg)}
        flow = compile_flow(load_template("naive_rag"))
        for res in (embedded, served):          # warm up
            run_flow(flow, res, RunRequest(QUESTIONS[0], kb="sample"),
                     RunHooks(sink=stores[id(res)].sink()))
        t_emb, t_srv = [], []
        for r in range(rounds):
            for q in QUESTIONS:
                pair = [(embedded, t_emb), (served, t_srv)]
                for res, out in (pair if r % 2 == 0 else pair[::-1]):
                    out.append(timed(lambda: run_flow(flow, res, RunRequest(q, kb="sample"),
                                                      RunHooks(sink=stores[id(res)].sink()))))
        return statistics.median(t_emb), statistics.median(t_srv)


def ray_speedup(n_questions: int, tmp: Path) -> tuple[float, float]:
    """Seconds for 3 flows x n questions, 1 worker (serial) vs 2 Ray workers."""
    home = tmp / "eval-home"
    settings = Settings(llm=LLMSettings(n_ctx=4096))
    save_settings(home, settings)
    ws = Workspace(home, settings)
    ensure_sample(ws.resources)
    path = ROOT / "flowkit" / "sample_kb" / "questions.jsonl"
    qs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    qs = (qs * (n_questions // len(qs) + 1))[:n_questions]
    qs = [{**q, "id": f"{q['id']}-{i}"} for i, q in enumerate(qs)]
    flows = resolve_flows(ws, ["naive_rag", "rewrite_retrieve_read", "advanced_linear"])
    repo = EvalRepo(ws.store)
    one = timed(lambda: run_evaluation(ws, repo, make_plan(flows, "bench", qs, "sample",
                                                           eval_id="bench1")))
    workers = RayWorkers(2, functools.partial(Workspace, home, settings))
    two = timed(lambda: run_evaluation(
        ws, repo, make_plan(flows, "bench", qs, "sample", eval_id="bench2"), EvalRun(workers)))
    return one, two


def chroma_p50(big: int, tmp: Path) -> dict[str, tuple[float, float]]:
    """Query p50 in ms, embedded vs server, at the sample size and at `big` chunks."""
    rng = np.random.default_rng(0)
    out: dict[str, tuple[float, float]] = {}
    with chroma_server(tmp / "chroma-q") as (host, port):
        stores = (ChromaStore(path=tmp / "chroma-emb"), ChromaStore(host=host, port=port))
        for label, n in (("sample", 120), (f"{big}", big)):
            vecs = rng.normal(size=(n, 384)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            for store in stores:
                for i in range(0, n, 5000):
                    chunk = vecs[i:i + 5000]
                    ids = [f"c{j}" for j in range(i, i + len(chunk))]
                    store.upsert(f"q{label}", ids, chunk, ["x"] * len(chunk), [{"i": 0}] * len(chunk))
            queries = rng.normal(size=(60, 384)).astype(np.float32)
            times: list[list[float]] = [[], []]
            for q in queries:
                for k, store in enumerate(stores):
                    times[k].append(timed(lambda: store.query(f"q{label}", q, 5)) * 1000)
            out[label] = (statistics.median(times[0]), statistics.median(times[1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--questions", type=int, default=20)
    ap.add_argument("--big", type=int, default=100_000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="flowkit-scale-"))
    emb, srv = end_to_end(args.rounds, tmp)
    print(f"naive flow, embedded engines     median {emb * 1000:8.1f} ms")
    print(f"naive flow, three server engines median {srv * 1000:8.1f} ms")
    print(f"ratio servers / embedded         {srv / emb:.3f}")
    one, two = ray_speedup(args.questions, tmp)
    print(f"eval 3 flows x {args.questions} questions: 1 worker {one:.1f} s, 2 Ray workers {two:.1f} s")
    print(f"speed-up 2 workers / 1           {one / two:.2f}x")
    for label, (e, s) in chroma_p50(args.big, tmp).items():
        print(f"Chroma query p50 at {label:>7} chunks: embedded {e:.2f} ms, server {s:.2f} ms "
              f"(ratio {s / e:.2f})")


if __name__ == "__main__":
    main()
