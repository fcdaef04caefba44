"""The completion cache: keys, hits recorded with their origin, cost kept apart from wall time, LRU
bound, the SQL store, and every template giving the same result served from the cache."""
from __future__ import annotations

from dataclasses import replace

import pytest

from flowkit import ListSink, compile_flow, run_flow, templates
from flowkit.judges import save_classifier
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.completion_cache import (
    CacheEntry,
    MemoryCompletionCache,
    Origin,
    cacheable,
    call_key,
    model_identity,
)
from flowkit.runtime.llm import LLMSettings
from flowkit.testing import FakeLLM, fake_resources, flow
from flowkit.testing.fakes import HashEmbedder, template_script
from storage.cache import SqlCompletionCache

Q = "Where was Mara Velt born?"
SPEC = flow("linear", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer")],
            ["ret>gen"])


def _run(spec, cache, llm=None, question=Q):
    sink = ListSink()
    llm = llm or FakeLLM([(r"Question:", "Tessel [1]")], ms=250.0)
    res = fake_resources(llm)
    result = run_flow(compile_flow(spec), res, RunRequest(question, kb="test"),
                      RunHooks(sink=sink, cache=cache))
    return result, sink, llm


def test_a_second_run_is_served_from_the_cache_with_the_original_cost_and_origin():
    cache = MemoryCompletionCache()
    first, sink1, llm1 = _run(SPEC, cache)
    second, sink2, llm2 = _run(SPEC, cache)
    assert len(llm1.prompts) == 1 and llm2.prompts == []          # the model was not called again
    assert second.answer == first.answer and second.citations == first.citations
    assert (second.cost.calls, second.cost.tokens) == (first.cost.calls, first.cost.tokens)
    call1, call2 = sink1.steps[1].llm_calls[0], sink2.steps[1].llm_calls[0]
    assert call1.cached_from is None and first.cost.cached == 0
    assert call2.cached_from == {"run_id": first.run_id, "node_id": "gen", "visit": 1}
    assert (call2.prompt, call2.completion, call2.ms) == (call1.prompt, call1.completion, call1.ms)
    assert second.cost.cached == 1
    # the cost counts the call at its original 250 ms; the wall time does not
    assert second.cost.ms >= 250.0 > second.wall_ms


def test_without_a_cache_every_call_computes():
    _, _, llm1 = _run(SPEC, None)
    _, _, llm2 = _run(SPEC, None)
    assert len(llm1.prompts) == len(llm2.prompts) == 1


def test_each_part_of_the_key_misses():
    identity = {"backend": "llama_cpp", "model_sha256": "a" * 64, "n_ctx": 4096, "seed": 42,
                "n_gpu_layers": 0, "threads": 1, "n_batch": 512, "extra_bufts": "auto", "platform": "p",
                "prompt_format": "f", "examples": True}
    call = {"temperature": 0.0, "prompt": "Q", "system": None, "max_tokens": 32,
            "stop": ["\n"], "logprobs": False}
    base = call_key(identity, "complete", **call)
    assert base == call_key(dict(identity), "complete", **dict(call))     # stable
    changed_identity = {"backend": "openai", "model_sha256": "b" * 64, "n_ctx": 2048, "seed": 7,
                        "n_gpu_layers": -1, "threads": 2, "n_batch": 64, "extra_bufts": "off",
                        "platform": "amx", "prompt_format": "g", "examples": False}
    for part, value in changed_identity.items():
        assert call_key({**identity, part: value}, "complete", **call) != base, part
    changed_call = {"temperature": 0.5, "prompt": "Q ", "system": "be brief", "max_tokens": 33,
                    "stop": ["\n\n"], "logprobs": True}
    for part, value in changed_call.items():
        assert call_key(identity, "complete", **{**call, part: value}) != base, part
    assert call_key(identity, "logprobs", **call) != base


def test_a_changed_prompt_misses_and_only_that_call_computes():
    cache = MemoryCompletionCache()
    _run(SPEC, cache)
    changed = flow("linear", [("ret", "retrieval.bm25", {"top_k": 1}), ("gen", "generation.answer")],
                   ["ret>gen"])
    result, sink, llm = _run(changed, cache)
    assert len(llm.prompts) == 1 and result.cost.cached == 0
    assert sink.steps[1].llm_calls[0].cached_from is None


def test_cacheable_needs_greedy_or_a_fixed_llama_seed():
    assert not cacheable(None, 0.0)
    assert cacheable({"backend": "openai", "seed": 42}, 0.0)
    assert not cacheable({"backend": "openai", "seed": 42}, 0.7)
    assert cacheable({"backend": "llama_cpp", "seed": 42}, 0.7)
    assert not cacheable({"backend": "llama_cpp", "seed": -1}, 0.7)


def test_sampled_calls_are_never_cached():
    from flowkit.context import RunContext
    cache = MemoryCompletionCache()
    llm = FakeLLM(default="Tessel")
    assert llm.cache_identity()["backend"] == "fake"
    ctx = RunContext(fake_resources(llm), "test", "gen", 1, cache=cache, run_id="r1")
    ctx.llm.complete("Q?", temperature=0.8)
    ctx.llm.complete("Q?", temperature=0.8)
    assert len(llm.prompts) == 2 and len(cache) == 0
    ctx.llm.complete("Q?", temperature=0.0)
    ctx.llm.complete("Q?", temperature=0.0)
    assert len(llm.prompts) == 3 and len(cache) == 1
    assert [c.cached_from for c in ctx.llm_calls] == [None, None, None,
                                                        {"run_id": "r1", "node_id": "gen", "visit": 1}]


def test_model_identity_of_a_llama_backend_is_made_without_loading(tmp_path):
    class _Unloaded:
        def __init__(self, path):
            self.settings = LLMSettings(n_ctx=2048)
            self.path = path

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 64)
    one = model_identity(_Unloaded(gguf))
    assert one is not None and one["backend"] == "llama_cpp" and one["n_ctx"] == 2048
    gguf.write_bytes(b"GGUF" + b"\1" * 64)
    two = model_identity(_Unloaded(gguf))
    assert two is not None and two["model_sha256"] != one["model_sha256"]


def test_memory_cache_evicts_the_least_recently_used():
    cache = MemoryCompletionCache(max_entries=2)
    for key in ("a", "b"):
        cache.put(key, CacheEntry(text=key))
    assert cache.get("a") is not None          # a is now more recent than b
    cache.put("c", CacheEntry(text="c"))
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("c") is not None


def test_sql_cache_round_trip_stats_eviction_and_clear(tmp_path):
    cache = SqlCompletionCache(f"sqlite:///{tmp_path / 'c.db'}", max_entries=3)
    entry = CacheEntry(text="Tessel", prompt="P", prompt_tokens=5, completion_tokens=2, ms=120.0,
                       logprobs=[("Tes", -0.5)], origin=Origin("run1", "gen", 2))
    cache.put("k0", entry)
    cache.put("k0", replace(entry, text="other"))          # a second put of a key keeps the first
    for i in range(1, 6):
        cache.put(f"k{i}", CacheEntry(text=str(i)))
    got = cache.get("k0")                       # k0 is now the most recently used
    assert got == entry
    assert cache.evict() == 3
    st = cache.stats()
    assert st.entries == 3 and st.hits == 1 and st.saved_ms == pytest.approx(120.0)
    assert [cache.get(k) is not None for k in ("k0", "k1", "k2", "k3", "k4", "k5")] == \
        [True, False, False, False, True, True]
    assert cache.clear() == 3 and cache.stats().entries == 0


#: templates with sampled calls: multi-query samples two paraphrases (temperature 0.8)
SAMPLING = {"agent_unirag_no_planning", "pre_retrieval_branching"}


@pytest.mark.parametrize("name", templates.names())
def test_every_template_gives_the_same_run_from_the_cache(name, tmp_path):
    cache = SqlCompletionCache(f"sqlite:///{tmp_path / 'c.db'}")
    spec = templates.load_template(name)
    ends, sequences, calls = [], [], []
    for _ in range(2):
        sink = ListSink()
        llm = template_script()
        res = fake_resources(llm, embedder=HashEmbedder())
        res.data_dir = tmp_path
        # the early-stop chain's weights were trained with the real embedder; give it fake ones
        save_classifier(tmp_path / "judges" / "sufficiency.json", [0.0] * HashEmbedder.dim, -3.0)
        ends.append(run_flow(compile_flow(spec), res, RunRequest(Q, kb="test"),
                             RunHooks(sink=sink, cache=cache)))
        sequences.append(sink.sequence())
        calls.append(len(llm.prompts))
    first, second = ends
    assert first.status in ("ok", "budget_exceeded"), first.error
    assert (second.answer, second.status, second.cost.calls, second.cost.tokens) == \
        (first.answer, first.status, first.cost.calls, first.cost.tokens)
    assert sequences[0] == sequences[1]
    # sampled calls (multi-query paraphrases at temperature > 0) compute again; no other does
    assert second.cost.cached + calls[1] == first.cost.calls
    assert calls[1] == (2 if name in SAMPLING else 0)


def test_max_tokens_misses_only_when_it_could_change_the_completion():
    from flowkit.context import RunContext
    cache = MemoryCompletionCache()
    llm = FakeLLM(default="one two three")          # stops by itself after 3 tokens
    ctx = RunContext(fake_resources(llm), "test", "gen", 1, cache=cache, run_id="r1")
    first = ctx.llm.complete("Q?", max_tokens=32)
    assert first.finish_reason == "stop" and first.completion_tokens == 3
    # any max_tokens that leaves room for the 3 tokens gives the same greedy completion
    for n in (3, 16, 64):
        assert ctx.llm.complete("Q?", max_tokens=n).text == "one two three"
    assert len(llm.prompts) == 1
    ctx.llm.complete("Q?", max_tokens=2)             # could be cut: computed
    assert len(llm.prompts) == 2
    cut = FakeLLM(default="one two three")

    def as_length(prompt, *, max_tokens=256, **kw):
        out = FakeLLM.complete(cut, prompt, max_tokens=max_tokens, **kw)
        out.finish_reason = "length"
        return out
    cut.complete = as_length
    ctx2 = RunContext(fake_resources(cut), "test", "gen", 1, cache=MemoryCompletionCache(),
                      run_id="r2")
    ctx2.llm.complete("Q?", max_tokens=32)
    ctx2.llm.complete("Q?", max_tokens=32)           # the same max_tokens: served
    ctx2.llm.complete("Q?", max_tokens=64)           # a completion cut at 32 says nothing of 64
    assert len(cut.prompts) == 2
