"""Deterministic prefix reuse: the KV cache keeps only whole n_batch blocks of the last prompt, and
the answers are the same token for token with reuse on and off (real default model)."""
from __future__ import annotations

import json

import pytest

from flowkit import ListSink, compile_flow, run_flow, templates
from flowkit.ingest import SAMPLE_DIR
from flowkit.judges import save_classifier
from flowkit.runtime.llm import LlamaCppLLM, LLMSettings
from flowkit.runtime.prefix import PrefixReuse, aligned_prefix
from flowkit.testing import HashEmbedder, fake_resources


def test_aligned_prefix_keeps_whole_shared_blocks_and_never_the_last_token():
    held = list(range(40))
    assert aligned_prefix(held, list(range(40)) + [99], 16) == 32
    assert aligned_prefix(held, list(range(33)), 16) == 32         # 33 tokens: keep 32, eval 1
    assert aligned_prefix(held, list(range(32)), 16) == 16         # never the prompt's last token
    assert aligned_prefix(held, list(range(20)) + [7] * 30, 16) == 16
    assert aligned_prefix(held, [5] + list(range(1, 50)), 16) == 0
    assert aligned_prefix([], list(range(50)), 16) == 0


def test_prefix_reuse_holds_only_whole_blocks_of_the_prompt():
    class _Ctx:
        def __init__(self):
            self.removed = []

        def kv_cache_seq_rm(self, seq, p0, p1):
            self.removed.append(p0)
            return True

    class _Llama:
        def __init__(self):
            self._ctx, self.n_tokens, self.resets = _Ctx(), 0, 0

        def reset(self):
            self.resets += 1
            self.n_tokens = 0

    llama, reuse = _Llama(), PrefixReuse(8)
    assert reuse.prepare(llama, list(range(20))) == 0 and llama.resets == 1
    reuse.done(list(range(20)))                       # holds blocks [0, 16)
    assert reuse.prepare(llama, list(range(30))) == 16 and llama.n_tokens == 16
    assert llama._ctx.removed == [16]
    reuse.forget()
    assert reuse.prepare(llama, list(range(30))) == 0 and llama.resets == 2
    assert reuse.stats() == {"prompt_tokens_reused": 16, "prompt_tokens_evaluated": 20 + 14 + 30,
                             "block": 8}
    off = PrefixReuse(8, enabled=False)
    off.done(list(range(20)))
    assert off.prepare(llama, list(range(30))) == 0


@pytest.fixture(scope="module")
def models():
    """The default model twice, in process, with small blocks so that prompts share some: prefix
    reuse on in one, off in the other."""
    base = dict(in_process=True, n_ctx=4096, n_threads=2, n_batch=32)
    return LlamaCppLLM(LLMSettings(**base, prefix_reuse=True)), \
        LlamaCppLLM(LLMSettings(**base, prefix_reuse=False))


@pytest.mark.real
def test_same_answers_token_for_token_with_reuse_on_and_off(models, tmp_path):
    on, off = models
    docs = [json.loads(line) for line in (SAMPLE_DIR / "articles.jsonl").read_text().splitlines()]
    # every template on one question here (about 2 minutes); bench/prefix.py runs 10 questions
    questions = ["On which island was the designer of the Corren Lighthouse born?"]
    calls = {"on": [], "off": []}
    for name in templates.names():
        spec = compile_flow(templates.load_template(name))
        for q in questions:
            for tag, llm in (("on", on), ("off", off)):
                res = fake_resources(None, docs=docs, kb="sample", embedder=HashEmbedder())
                res.llm = llm
                res.data_dir = tmp_path
                save_classifier(tmp_path / "judges" / "sufficiency.json",
                                [0.0] * HashEmbedder.dim, -3.0)
                sink = ListSink()
                end = run_flow(spec, q, res, kb="sample", sink=sink)
                calls[tag].append((name, q, end.answer, [
                    (c.prompt, c.completion, c.completion_tokens, c.finish_reason)
                    for s in sink.steps for c in s.llm_calls]))
    for a, b in zip(calls["on"], calls["off"]):
        assert a == b, f"{a[0]} on {a[1]!r}: reuse changed a completion"
    assert len(calls["on"]) == len(templates.names())
    # the proof means something only if blocks were in fact reused
    assert on.prefix.reused > 0 and off.prefix.reused == 0
    assert on.prefix.evaluated < off.prefix.evaluated
