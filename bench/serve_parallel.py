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

Prompts read in batches beside the generating slots (chunked over steps), against the engine that
read each prompt alone (`--baseline-tree`, the commit before), same machine and rounds, load
average 3.0 to 3.7 from other sessions' evaluations (this bench at nice 10): 12 prompts, two
rounds: parallel/baseline 0.60 and 1.02 (median 0.81); parallel/serial 0.24 and 0.52, baseline/
serial 0.40 and 0.50. An earlier single round on 32 prompts gave 0.09 (baseline 45 s, in a quiet
moment; the new engine 520 s, the serial server 275 s). Completions that differ from the serial
server: 0 of 12 in both rounds and 0 of 32 (both engines); none changed between rounds. The two
cores were oversubscribed throughout (llama.cpp's two threads a server beside other work), so
these ratios say nothing yet about the change: measure on an idle machine.

With `--baseline-tree DIR` (a checkout of an earlier commit, e.g. `git archive HEAD~3 | tar -x
-C DIR`) a third server, `--parallel` from that tree's code, runs in the same rounds: the ratio
parallel/baseline compares two builds of the batching engine under the same load.

Usage: nice python bench/serve_parallel.py [--prompts 32] [--at-once 4] [--rounds 2]
                                           [--max-tokens 64] [--closed-book]
                                           [--baseline-tree DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
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


@contextmanager
def _started_in(tree: str | None) -> Iterator[None]:
    """Run what starts inside in `tree` (a server launched with `-m service.cli` then imports
    that tree's code: the baseline build); nothing when `tree` is None."""
    if tree is None:
        yield
        return
    here = os.getcwd()
    os.chdir(tree)
    try:
        yield
    finally:
        os.chdir(here)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--prompts", type=int, default=32)
    ap.add_argument("--at-once", type=int, default=4, help="the parallel server's slots, and "
                    "the requests in flight to it")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--closed-book", action="store_true", help="questions alone, asked to "
                    "explain: long answers instead of short ones from passages")
    ap.add_argument("--baseline-tree", help="a checkout of an earlier commit (git archive or "
                    "worktree): its --parallel server is measured too, in the same rounds")
    args = ap.parse_args()
    prompts = answer_prompts(args.prompts)
    if args.closed_book:
        prompts = closed_book(prompts)
    model = packaged_path("smollm2-135m")
    print(f"load average at start: {os.getloadavg()} on {os.cpu_count()} cores", flush=True)
    with ExitStack() as stack:
        servers = [("serial", stack.enter_context(llama_server(model, n_ctx=4096)), 1)]
        extra = ("--parallel", str(args.at_once))
        servers.append(("parallel", stack.enter_context(
            llama_server(model, n_ctx=4096, extra_args=extra)), args.at_once))
        if args.baseline_tree:
            with _started_in(args.baseline_tree):
                servers.append(("baseline", stack.enter_context(
                    llama_server(model, n_ctx=4096, extra_args=extra)), args.at_once))
        ratios: dict[str, list[float]] = {name: [] for name, _, _ in servers[1:]}
        answers: dict[str, list[list[str]]] = {name: [] for name, _, _ in servers}
        for r in range(args.rounds):
            timing: dict[str, float] = {}
            for name, url, at_once in servers if r % 2 == 0 else servers[::-1]:
                wall, done = run_pass(url, prompts, at_once, args.max_tokens)
                tokens = sum(c.completion_tokens for c in done)
                timing[name] = tokens / wall
                answers[name].append([c.text for c in done])
                print(f"round {r + 1} {name:8s} ({at_once} at a time): {wall:7.1f} s, "
                      f"{tokens} completion tokens, {tokens / wall:6.2f} tokens/s, "
                      f"{sum(c.prompt_tokens for c in done)} prompt tokens", flush=True)
            for name in ratios:
                ratios[name].append(timing[name] / timing["serial"])
                differ_now = sum(a != b for a, b in zip(answers["serial"][-1],
                                                          answers[name][-1]))
                print(f"round {r + 1} throughput ratio {name}/serial: {ratios[name][-1]:.2f}; "
                      f"{differ_now} of {len(prompts)} completions differ", flush=True)
            if "baseline" in timing:
                print(f"round {r + 1} throughput ratio parallel/baseline: "
                      f"{timing['parallel'] / timing['baseline']:.2f}", flush=True)
            print(f"round {r + 1} load average {os.getloadavg()}", flush=True)
    first_serial = answers["serial"][0]
    for name in ratios:
        print(f"median throughput ratio {name}/serial over {args.rounds} rounds: "
              f"{statistics.median(ratios[name]):.2f}")
        differ = [i for i, (a, b) in enumerate(zip(first_serial, answers[name][0])) if a != b]
        print(f"completions that differ between serial and {name}: {len(differ)} of "
              f"{len(prompts)}" + (f" (prompts {differ})" if differ else ""))
        for i in differ[:3]:
            print(f"  prompt {i}: serial {first_serial[i]!r} / {name} {answers[name][0][i]!r}")
    if "baseline" in ratios:
        each = [p / b for p, b in zip(ratios["parallel"], ratios["baseline"])]
        print(f"median throughput ratio parallel/baseline: {statistics.median(each):.2f}")
    for name, rounds in answers.items():
        unstable = sum(any(rnd[i] != rounds[0][i] for rnd in rounds) for i in range(len(prompts)))
        print(f"{name}: {unstable} completions changed between rounds")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
