"""`flowkit serve-model --parallel 4` against the serial server (`--parallel 1`), side by side.

Both servers run at once on the packaged default model (same --n-ctx, same threads). Each round
sends the same real prompts (`flowkit.testing.answer_prompts`: the `generation.answer` operator's
prompt on the sample knowledge base, 1 to 5 passages) through flowkit's own OpenAI-compatible
client: one at a time to the serial server, then `--at-once` at a time to the parallel one, the
order of the two passes alternating between rounds so that the machine's load falls on both alike.
Printed: each pass's wall time and completion tokens a second, the throughput ratio (parallel over
serial; the median over rounds), the number of completions whose text differs between the two
servers (and whether either server changed its own answers between rounds), and the load average.

Measured on the 2-core build machine while other work ran (load average 4.5 to 9, this bench at
nice 10), SmolLM2-135M Q4_1, --n-ctx 4096, max_tokens 64: the answer prompts are prefill-bound
(17,584 prompt tokens to 630 completion tokens over 32 prompts), and the machine's load swung
more than batching changes: 32 prompts, one round: ratio 0.53; 12 prompts, two rounds: 0.28 and
1.30 (the same serial pass took 53 s, then 188 s). Completions that differ: 0 of 32, 0 of 12 in
both rounds. Read the ratio on an idle machine before drawing anything from it.

Usage: nice python bench/serve_parallel.py [--prompts 32] [--at-once 4] [--rounds 2]
                                           [--max-tokens 64] [--closed-book]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.runtime.llm_contract import Completion, LLMSettings
from flowkit.runtime.models import packaged_path
from flowkit.runtime.openai_client import OpenAICompatibleLLM
from flowkit.testing.answer_prompts import answer_prompts
from flowkit.testing.servers import llama_server


def run_pass(url: str, prompts: list[str], at_once: int,
             max_tokens: int) -> tuple[float, list[Completion]]:
    """(wall seconds, completions in prompt order) for `prompts` sent `at_once` at a time."""
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url, n_ctx=4096))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(at_once) as pool:
        out = list(pool.map(lambda p: llm.complete(p, max_tokens=max_tokens), prompts))
    return time.perf_counter() - t0, out


def closed_book(prompts: list[str]) -> list[str]:
    """The questions alone, asked for an explanation (longer answers: decoding dominates)."""
    return [p.rsplit("Question: ", 1)[1].removesuffix("\nAnswer:") +
            " Explain your answer in a few sentences." for p in prompts]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--at-once", type=int, default=4, help="the parallel server's slots, and "
                    "the requests in flight to it")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--closed-book", action="store_true", help="questions alone, asked to "
                    "explain: long answers instead of short ones from passages")
    args = ap.parse_args()
    prompts = answer_prompts(args.prompts)
    if args.closed_book:
        prompts = closed_book(prompts)
    model = packaged_path("smollm2-135m")
    print(f"load average at start: {os.getloadavg()} on {os.cpu_count()} cores", flush=True)
    with ExitStack() as stack:
        serial_url = stack.enter_context(llama_server(model, n_ctx=4096))
        parallel_url = stack.enter_context(llama_server(
            model, n_ctx=4096, extra_args=("--parallel", str(args.at_once))))
        ratios: list[float] = []
        answers: dict[str, list[list[str]]] = {"serial": [], "parallel": []}
        for r in range(args.rounds):
            passes = [("serial", serial_url, 1), ("parallel", parallel_url, args.at_once)]
            timing: dict[str, float] = {}
            for name, url, at_once in passes if r % 2 == 0 else passes[::-1]:
                wall, done = run_pass(url, prompts, at_once, args.max_tokens)
                tokens = sum(c.completion_tokens for c in done)
                timing[name] = tokens / wall
                answers[name].append([c.text for c in done])
                print(f"round {r + 1} {name:8s} ({at_once} at a time): {wall:7.1f} s, "
                      f"{tokens} completion tokens, {tokens / wall:6.2f} tokens/s, "
                      f"{sum(c.prompt_tokens for c in done)} prompt tokens", flush=True)
            ratios.append(timing["parallel"] / timing["serial"])
            differ_now = sum(a != b for a, b in zip(answers["serial"][-1],
                                                      answers["parallel"][-1]))
            print(f"round {r + 1} throughput ratio parallel/serial: {ratios[-1]:.2f}; "
                  f"{differ_now} of {len(prompts)} completions differ; load average "
                  f"{os.getloadavg()}", flush=True)
    first_serial, first_parallel = answers["serial"][0], answers["parallel"][0]
    differ = [i for i, (a, b) in enumerate(zip(first_serial, first_parallel)) if a != b]
    print(f"median throughput ratio over {args.rounds} rounds: {statistics.median(ratios):.2f}")
    print(f"completions that differ between the servers: {len(differ)} of {len(prompts)}"
          + (f" (prompts {differ})" if differ else ""))
    for name, rounds in answers.items():
        unstable = sum(any(rnd[i] != rounds[0][i] for rnd in rounds) for i in range(len(prompts)))
        print(f"{name}: {unstable} completions changed between rounds")
    for i in differ[:3]:
        print(f"  prompt {i}: serial {first_serial[i]!r} / parallel {first_parallel[i]!r}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
