"""`flowkit serve-model --parallel 4` and llama.cpp's `llama-server --parallel 4 --no-repack`
against the serial server (`serve-model`, `--parallel 1`), side by side.

The servers run at once on the packaged default model, each slot with 4096 tokens of context and
every core's threads (2 here). Each round sends the same real prompts
(`flowkit.testing.answer_prompts`: the `generation.answer` operator's prompt on the sample
knowledge base, 1 to 5 passages) through flowkit's own OpenAI-compatible client with the same
greedy settings (temperature 0, seed 42, repeat_penalty 1.0): one at a time to the serial server,
then `--at-once` at a time to each parallel one, the order of the passes reversed every other
round so that the machine's load falls on all alike. Printed: each pass's wall time and
completion tokens a second (the tokens of every engine counted by the serial server's tokenizer:
llama-server's `usage` also counts the end-of-generation token), the throughput ratios (each over
serial, llama-server over serve-model's `--parallel`; the median over rounds), the completions
whose text differs from the serial server's (and whether a server changed its own answers between
rounds), and the load average.

llama-server (`make llama-server`, started by `flowkit.testing.servers.llama_cpp_server`: `-t`
and `-tb` every core, `--no-repack`) is given what serve-model computes with: llama-cpp-python's
defaults (`-fa off`, `-b 512 -ub 512`), `-c` 4 x 4096 split per slot (`--no-kv-unified` after the
fixture's `--kv-unified`: serve-model's `--parallel` context is split per sequence;
`--llama-kv-unified` keeps the fixture's one pool of that size instead) and no prompt cache
(`--no-cache-prompt --cache-ram 0`: serve-model evaluates every prompt whole, and a repeated
round would otherwise read cached prompts; `--llama-prompt-cache` leaves it on). `--no-llama-server`
leaves it out.

llama-server against serve-model --parallel 4, measured on the 2-core build machine while other
sessions' tests ran at normal priority (this bench at nice 10), 12 answer prompts (3,722 prompt
tokens, 227 completion tokens, max_tokens 64; both engines read the same 3,722 prompt tokens, the
chat template applied alike), three runs: `--rounds 4` (rounds 1-4; load average 2.9 at the
start, 7.3 to 9.0 during, 4.6 at the end), then `--rounds 2` twice (rounds 5-6, load 3.2 to 4.0;
rounds 7-8, load 2.1 to 2.6, the quietest). Wall seconds (completion tokens a second):

    round  order  serial        parallel      llama-server  par/serial  llama/serial  llama/par
    1      s p l  120.6 (1.88)  180.3 (1.26)  192.9 (1.18)  0.67        0.63          0.93
    2      l p s  224.4 (1.01)  162.2 (1.40)  228.4 (1.03)  1.38        1.02          0.74
    3      s p l  119.2 (1.91)  156.0 (1.45)  197.5 (1.15)  0.76        0.60          0.79
    4      l p s   43.0 (5.28)  165.8 (1.37)   76.3 (2.97)  0.26        0.56          2.17
    5      s p l   50.0 (4.54)   20.1 (11.30) 200.8 (1.13)  2.49        0.25          0.10
    6      l p s   70.6 (3.21)   68.1 (3.33)   55.3 (4.11)  1.04        1.28          1.23
    7      s p l   31.6 (7.18)   40.9 (5.54)   49.7 (4.73)  0.77        0.66          0.85
    8      l p s   19.7 (11.50)  16.6 (13.64)  34.0 (6.69)  1.19        0.58          0.49
    median                                                 0.91        0.61          0.82
    all 8 rounds' seconds and tokens together:             0.84        0.66          0.79

Completions that differ from the serial server's: serve-model --parallel 0 of 12 in every round
(0 of 96); llama-server 1 of 12 in rounds 2 and 7 (2 of 96; round 7: prompt 6, "...was Mara Velt,
born on the island of Tessel." where the serial server stops after "Mara Velt."; round 2 one of
the same length, 235 completion tokens against 227) and the serial server's answers in the other
rounds. The likely cause: which requests llama-server evaluates in one batch depends on their
timing, and on the CPU a token's logits depend on how its own sequence's tokens are split into
micro-batches (flowkit/runtime/batch_engine.py chooses them so that they cannot). serve-model,
serial or --parallel, never changed an answer between rounds. llama-server was the slower of the
two parallel engines in 6 of 8 rounds, both quietest ones included, and 0.79 over all; but the
load moved a pass's time by up to 10x (serve-model --parallel: 17 s in one round, 180 s in
another), so how much slower only an idle machine (or a GPU) can say.

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
                                           [--baseline-tree DIR] [--no-llama-server]
                                           [--llama-kv-unified] [--llama-prompt-cache]
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
from flowkit.testing.servers import llama_cpp_server, llama_server

#: the serve-model context per request; every server here gives each slot this many tokens
N_CTX = 4096


def llama_cpp_args(kv_unified: bool, prompt_cache: bool) -> tuple[str, ...]:
    """llama-server's flags beyond `llama_cpp_server`'s, so that it computes what serve-model
    computes: llama-cpp-python's defaults there (flash attention off, logical and physical batch
    512), the KV cache split per slot (serve-model's `--parallel` context) unless `kv_unified`,
    and no prompt caching (serve-model evaluates every prompt whole) unless `prompt_cache`.
    A later flag wins over `llama_cpp_server`'s `--kv-unified`."""
    out = ["-fa", "off", "-b", "512", "-ub", "512"]
    if not kv_unified:
        out.append("--no-kv-unified")
    if not prompt_cache:
        out += ["--no-cache-prompt", "--cache-ram", "0"]
    return tuple(out)


def run_pass(url: str, prompts: list[str], at_once: int,
             max_tokens: int) -> tuple[float, list[Completion]]:
    """(wall seconds, completions in prompt order) for `prompts` sent `at_once` at a time."""
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url, n_ctx=N_CTX))
    t0 = time.perf_counter()
    with ThreadPoolExecutor(at_once) as pool:
        out = list(pool.map(lambda p: llm.complete(p, max_tokens=max_tokens), prompts))
    return time.perf_counter() - t0, out


def counted(url: str, texts: list[str]) -> int:
    """The tokens in `texts` by the serial server's tokenizer: one count for every engine
    (llama-server's usage counts the end-of-generation token, llama-cpp-python's does not)."""
    llm = OpenAICompatibleLLM(LLMSettings(backend="openai", base_url=url, n_ctx=N_CTX))
    return sum(llm.count_tokens(t) for t in texts if t)


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
    ap.add_argument("--at-once", type=int, default=4, help="the parallel servers' slots, and "
                    "the requests in flight to each")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--closed-book", action="store_true", help="questions alone, asked to "
                    "explain: long answers instead of short ones from passages")
    ap.add_argument("--baseline-tree", help="a checkout of an earlier commit (git archive or "
                    "worktree): its --parallel server is measured too, in the same rounds")
    ap.add_argument("--no-llama-server", action="store_true", help="leave out llama.cpp's "
                    "llama-server (`make llama-server` builds it)")
    ap.add_argument("--llama-kv-unified", action="store_true", help="llama-server's slots share "
                    "one KV pool of N x 4096 tokens (the test fixture's --kv-unified) instead of "
                    "4096 each, as serve-model's")
    ap.add_argument("--llama-prompt-cache", action="store_true", help="leave llama-server's "
                    "prompt cache on (a repeated prompt or prefix is not evaluated again)")
    args = ap.parse_args()
    prompts = answer_prompts(args.prompts)
    if args.closed_book:
        prompts = closed_book(prompts)
    model = packaged_path("smollm2-135m")
    threads = os.cpu_count() or 1            # llama_server's threads: every core
    print(f"load average at start: {os.getloadavg()} on {os.cpu_count()} cores", flush=True)
    with ExitStack() as stack:
        servers = [("serial", stack.enter_context(llama_server(model, n_ctx=N_CTX)), 1)]
        extra = ("--parallel", str(args.at_once))
        servers.append(("parallel", stack.enter_context(
            llama_server(model, n_ctx=N_CTX, extra_args=extra)), args.at_once))
        if not args.no_llama_server:
            servers.append(("llama", stack.enter_context(llama_cpp_server(
                model, n_ctx=N_CTX * args.at_once, parallel=args.at_once, threads=threads,
                extra_args=llama_cpp_args(args.llama_kv_unified, args.llama_prompt_cache))),
                args.at_once))
        if args.baseline_tree:
            with _started_in(args.baseline_tree):
                servers.append(("baseline", stack.enter_context(
                    llama_server(model, n_ctx=N_CTX, extra_args=extra)), args.at_once))
        ratios: dict[str, list[float]] = {name: [] for name, _, _ in servers[1:]}
        answers: dict[str, list[list[str]]] = {name: [] for name, _, _ in servers}
        speeds: dict[str, list[float]] = {name: [] for name, _, _ in servers}
        for r in range(args.rounds):
            timing: dict[str, float] = {}
            for name, url, at_once in servers if r % 2 == 0 else servers[::-1]:
                wall, done = run_pass(url, prompts, at_once, args.max_tokens)
                tokens = counted(servers[0][1], [c.text for c in done])
                timing[name] = tokens / wall
                speeds[name].append(tokens / wall)
                answers[name].append([c.text for c in done])
                print(f"round {r + 1} {name:8s} ({at_once} at a time): {wall:7.1f} s, "
                      f"{tokens} completion tokens ({sum(c.completion_tokens for c in done)} "
                      f"by its own count), {tokens / wall:6.2f} tokens/s, "
                      f"{sum(c.prompt_tokens for c in done)} prompt tokens", flush=True)
            for name in ratios:
                ratios[name].append(timing[name] / timing["serial"])
                differ_now = sum(a != b for a, b in zip(answers["serial"][-1],
                                                          answers[name][-1]))
                print(f"round {r + 1} throughput ratio {name}/serial: {ratios[name][-1]:.2f}; "
                      f"{differ_now} of {len(prompts)} completions differ", flush=True)
            for name in ("llama", "baseline"):
                if name in timing:
                    print(f"round {r + 1} throughput ratio {name}/parallel: "
                          f"{timing[name] / timing['parallel']:.2f}", flush=True)
            print(f"round {r + 1} load average {os.getloadavg()}", flush=True)
    first_serial = answers["serial"][0]
    for name in ratios:
        print(f"median throughput ratio {name}/serial over {args.rounds} rounds: "
              f"{statistics.median(ratios[name]):.2f}")
        differ = [i for i, (a, b) in enumerate(zip(first_serial, answers[name][0])) if a != b]
        print(f"completions that differ between serial and {name}: {len(differ)} of "
              f"{len(prompts)}" + (f" (prompts {differ})" if differ else ""))
        ever = sum(any(rnd[i] != first_serial[i] for rnd in answers[name])
                   for i in range(len(prompts)))
        print(f"  in any of the {args.rounds} rounds: {ever} of {len(prompts)}")
        for i in differ[:3]:
            print(f"  prompt {i}: serial {first_serial[i]!r} / {name} {answers[name][0][i]!r}")
    for name in ("llama", "baseline"):
        if name in ratios:
            each = [o / p for o, p in zip(ratios[name], ratios["parallel"])]
            print(f"median throughput ratio {name}/parallel: {statistics.median(each):.2f} "
                  f"(rounds: {', '.join(f'{e:.2f}' for e in each)})")
    for name, rounds in answers.items():
        unstable = sum(any(rnd[i] != rounds[0][i] for rnd in rounds) for i in range(len(prompts)))
        print(f"{name}: {unstable} completions changed between rounds; completion tokens/s "
              f"by round: {', '.join(f'{v:.2f}' for v in speeds[name])}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
