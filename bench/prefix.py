"""Deterministic prefix reuse, measured side by side in one run (not a test): every template on the
first N questions of ../shared/data/hotpotqa_dev_500_ircotfmt, the real default model in process
with prefix reuse on and off (the same n_batch), calls interleaved question by question.

Prints whether every completion is the same token for token, the prompt tokens evaluated with
reuse on / off (goal <= 0.7) and the model time on / off. Retrieval is BM25 over the set's corpus
(no embedder needed), so the prompts are the flows' own.

Usage: python bench/prefix.py [--questions 10] [--n-batch 64] [--templates naive_rag,ircot]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit import ListSink, compile_flow, run_flow, templates
from flowkit.judges import save_classifier
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.llm import LlamaCppLLM, LLMSettings
from flowkit.testing import HashEmbedder, fake_resources

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "hotpotqa_dev_500_ircotfmt"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--questions", type=int, default=10)
    ap.add_argument("--n-batch", type=int, default=64)
    ap.add_argument("--templates", default="", help="comma-separated (default: every template)")
    args = ap.parse_args()
    names = [n for n in args.templates.split(",") if n] or templates.names()
    questions = [json.loads(line) for line in
                 (DATA / "questions.jsonl").read_text().splitlines()[:args.questions]]
    wanted = {d for q in questions for d in q.get("context_doc_ids") or []}
    docs = [d for d in (json.loads(line) for line in
                        (DATA / "corpus.jsonl").read_text().splitlines())
            if not wanted or d["id"] in wanted]
    base = dict(in_process=True, n_ctx=8192, n_threads=1, n_batch=args.n_batch)
    models = {"on": LlamaCppLLM(LLMSettings(**base, prefix_reuse=True)),
              "off": LlamaCppLLM(LLMSettings(**base, prefix_reuse=False))}
    tmp = Path(tempfile.mkdtemp(prefix="flowkit-prefix-"))
    save_classifier(tmp / "judges" / "sufficiency.json", [0.0] * HashEmbedder.dim, -3.0)
    seconds = {"on": 0.0, "off": 0.0}
    same, differ = 0, []
    for qi, q in enumerate(questions):
        for name in names:
            spec = compile_flow(templates.load_template(name))
            got = {}
            for tag, llm in models.items():
                res = fake_resources(None, docs=docs, kb="hotpot", embedder=HashEmbedder())
                res.llm = llm
                res.data_dir = tmp
                sink = ListSink()
                t0 = time.perf_counter()
                run_flow(spec, res, RunRequest(str(q["question"]), kb="hotpot"),
                         RunHooks(sink=sink))
                seconds[tag] += time.perf_counter() - t0
                got[tag] = [(c.prompt, c.completion, c.completion_tokens)
                            for s in sink.steps for c in s.llm_calls]
            if got["on"] == got["off"]:
                same += 1
            else:
                differ.append((name, q["id"]))
        on_so_far = models["on"].prefix.stats()["prompt_tokens_evaluated"]
        off_so_far = models["off"].prefix.stats()["prompt_tokens_evaluated"]
        print(f"question {qi + 1}/{len(questions)}: {same} runs identical so far, "
              f"{len(differ)} differ; prompt tokens evaluated on / off {on_so_far} / "
              f"{off_so_far} = {on_so_far / max(1, off_so_far):.3f}", flush=True)
    on, off = models["on"].prefix.stats(), models["off"].prefix.stats()
    print(f"n_batch {args.n_batch}, {len(names)} templates x {len(questions)} questions")
    print(f"identical token for token: {same}/{same + len(differ)} {differ[:5]}")
    print(f"prompt tokens evaluated on / off = {on['prompt_tokens_evaluated']} / "
          f"{off['prompt_tokens_evaluated']} = "
          f"{on['prompt_tokens_evaluated'] / max(1, off['prompt_tokens_evaluated']):.3f} "
          f"(reused {on['prompt_tokens_reused']})")
    print(f"time on / off = {seconds['on']:.1f} / {seconds['off']:.1f} s = "
          f"{seconds['on'] / max(seconds['off'], 1e-9):.3f}")


if __name__ == "__main__":
    main()
