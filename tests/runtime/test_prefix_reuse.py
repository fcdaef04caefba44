"""Deterministic prefix reuse: the KV cache keeps only whole n_batch blocks of the last prompt, and
the answers are the same token for token with reuse on and off (real default model)."""
from __future__ import annotations

import json

import pytest

from flowkit import ListSink, compile_flow, run_flow, templates
from flowkit.ingest import SAMPLE_DIR
from flowkit.judges import save_classifier
from flowkit.run_request import RunHooks, RunRequest
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


class _Snapshots(PrefixReuse):
    """Snapshots as token lists instead of llama.cpp's bytes; records what was restored."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.restores: list[tuple[list[int], int]] = []

    def _copy_out(self, llama):
        return None, 10

    def _restore(self, llama, snap, keep):
        self.restores.append((snap.tokens, keep))
        llama.n_tokens = keep
        return True


def test_prefix_reuse_holds_only_whole_blocks_of_the_prompt():
    llama, reuse = _Llama(), PrefixReuse(8, slots=0)
    assert reuse.prepare(llama, list(range(20))) == 0 and llama.resets == 1
    reuse.done(llama, list(range(20)))                # holds blocks [0, 16), drops the rest
    assert llama.n_tokens == 16 and llama._ctx.removed == [16]
    assert reuse.prepare(llama, list(range(30))) == 16 and llama.n_tokens == 16
    assert llama._ctx.removed == [16, 16]
    reuse.forget()
    assert reuse.prepare(llama, list(range(30))) == 0 and llama.resets == 2
    assert reuse.stats()["prompt_tokens_reused"] == 16
    assert reuse.stats()["prompt_tokens_evaluated"] == 20 + 14 + 30
    off = PrefixReuse(8, enabled=False)
    off.done(llama, list(range(20)))
    assert off.prepare(llama, list(range(30))) == 0


def test_an_earlier_prefix_comes_back_from_a_snapshot_after_another_prompt():
    llama, reuse = _Llama(), _Snapshots(8, slots=2)
    a, b = list(range(40)), [100 + i for i in range(30)]
    reuse.prepare(llama, a)
    reuse.done(llama, a)                              # context: a[:40]
    assert reuse.prepare(llama, b) == 0               # a is stashed before the context resets
    reuse.done(llama, b)                              # context: b[:24]
    assert [s.tokens for s in reuse._saved] == [a]
    assert reuse.prepare(llama, a[:35] + [7, 7]) == 32  # the longest whole-block match: a's
    assert reuse.restores == [(a, 32)] and reuse.stats()["snapshots_restored"] == 1
    assert [s.tokens for s in reuse._saved] == [b[:24], a]  # b stashed, a most recently used
    reuse.done(llama, a[:35] + [7, 7])                # context: a[:32], covered by a's snapshot
    assert reuse.prepare(llama, b + [1]) == 24        # b back from its snapshot; a[:32] covered
    assert len(reuse._saved) == 2
    c = [200 + i for i in range(20)]
    reuse.done(llama, b + [1])
    reuse.prepare(llama, c)
    reuse.done(llama, c)
    assert reuse.prepare(llama, a) == 32              # c stashed: 2 slots, b was least recent
    assert [s.tokens[:1] for s in reuse._saved] == [[200], [0]]


def test_a_snapshot_is_dropped_when_a_longer_one_covers_it_and_memory_bounds_them():
    llama, reuse = _Llama(), _Snapshots(8, slots=4, max_bytes=25)
    short, long_ = list(range(20)), list(range(40))
    for prompt in (short, [500] * 20, long_, [600] * 20, [700] * 20):
        reuse.prepare(llama, prompt)
        reuse.done(llama, prompt)
    firsts = [s.tokens[0] for s in reuse._saved]
    assert firsts == [0, 600] and len(reuse._saved[0].tokens) == 40   # 25 bytes: two of 10
    assert reuse.stats()["snapshot_bytes"] == 20


def test_snapshots_of_a_sliding_window_model_hold_only_blocks_inside_the_window():
    """llama.cpp copies out only the window's cells of a sliding-window cache: a snapshot is cut to
    the whole blocks inside the window, and only when the context no longer needs the rest."""
    llama, reuse = _Llama(), _Snapshots(64)
    reuse.window(512)
    assert reuse.cap == 448
    long_ = list(range(600))
    reuse.prepare(llama, long_)
    reuse.done(llama, long_)                          # context: 576 tokens
    assert reuse.prepare(llama, long_[:520] + [9] * 80) == 512   # 512 still in use: no snapshot
    assert reuse._saved == []
    reuse.done(llama, long_[:520] + [9] * 80)
    reuse.prepare(llama, [7] * 100)                   # nothing kept: cut to 448 and copied
    assert [len(s.tokens) for s in reuse._saved] == [448] and llama._ctx.removed[-1] == 448
    reuse.window(0)
    assert reuse.cap is None


#: one template of each shape of prompts (every template: bench/prefix.py)
SHAPES = ("advanced_linear", "agent_unirag", "conditional", "corag_early_stop", "flare", "ircot",
          "iter_retgen", "naive_rag", "post_retrieval_branching", "recursive_clarifications",
          "self_rag")


def test_the_shapes_are_templates():
    assert set(SHAPES) <= set(templates.names())


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
    # one template of each shape on one question here (the agent's and CoRAG's ablations and the
    # second branching and rewrite templates share their prompts' shapes with one kept);
    # bench/prefix.py runs every template on 10 questions
    questions = ["On which island was the designer of the Corren Lighthouse born?"]
    calls = {"on": [], "off": []}
    for name in SHAPES:
        spec = compile_flow(templates.load_template(name))
        for q in questions:
            for tag, llm in (("on", on), ("off", off)):
                res = fake_resources(None, docs=docs, kb="sample", embedder=HashEmbedder())
                res.llm = llm
                res.data_dir = tmp_path
                save_classifier(tmp_path / "judges" / "sufficiency.json",
                                [0.0] * HashEmbedder.dim, -3.0)
                sink = ListSink()
                end = run_flow(spec, res, RunRequest(q, kb="sample"), RunHooks(sink=sink))
                calls[tag].append((name, q, end.answer, [
                    (c.prompt, c.completion, c.completion_tokens, c.finish_reason)
                    for s in sink.steps for c in s.llm_calls]))
    for a, b in zip(calls["on"], calls["off"]):
        assert a == b, f"{a[0]} on {a[1]!r}: reuse changed a completion"
    assert len(calls["on"]) == len(SHAPES)
    # the proof means something only if blocks were in fact reused
    assert on.prefix.reused > 0 and off.prefix.reused == 0
    assert on.prefix.restored > 0, "no earlier prefix came back from a snapshot"
    assert on.prefix.evaluated < off.prefix.evaluated
