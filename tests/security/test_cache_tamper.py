"""The completion cache cannot be edited into a wrong answer unnoticed (issue 39 item 7).

Before this round an edited row was served: the next run answered "Poisoned Answer" with forged
token counts and a run id that never existed. Entries are now sealed (flowkit.runtime.cache_seal:
an HMAC under a key file outside the database), on SQLite and on a real PostgreSQL.
"""
from __future__ import annotations

import json
import logging
import stat
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from flowkit import ListSink, compile_flow, run_flow
from flowkit.run_request import RunHooks, RunRequest
from flowkit.runtime.cache_seal import EntrySeal, key_path, load_secret
from flowkit.runtime.completion_cache import CacheEntry, Origin
from flowkit.testing import FakeLLM, fake_resources, flow
from storage.cache import SqlCompletionCache
from storage.models import CompletionCacheRow

Q = "Where was Mara Velt born?"
SPEC = flow("linear", [("ret", "retrieval.bm25", {"top_k": 2}), ("gen", "generation.answer")],
            ["ret>gen"])
ENTRY = CacheEntry(text="Tessel", prompt="P", prompt_tokens=740, completion_tokens=3, ms=120.0,
                   logprobs=[("Tes", -0.5)], origin=Origin("run1", "gen", 1))


@pytest.fixture()
def seal(tmp_path: Path) -> EntrySeal:
    return EntrySeal(load_secret(tmp_path / "keys" / "cache.key"))


def _run(cache: SqlCompletionCache) -> tuple[Any, ListSink, FakeLLM]:
    sink = ListSink()
    llm = FakeLLM([(r"Question:", "Tessel [1]")], ms=250.0)
    end = run_flow(compile_flow(SPEC), fake_resources(llm), RunRequest(Q, kb="test"),
                   RunHooks(sink=sink, cache=cache))
    return end, sink, llm


def _rows(cache: SqlCompletionCache) -> dict[str, dict[str, Any]]:
    with Session(cache.engine) as s:
        return {r.key: dict(r.entry) for r in s.scalars(select(CompletionCacheRow))}


def _write(cache: SqlCompletionCache, key: str, entry: dict[str, Any]) -> None:
    with Session(cache.engine) as s, s.begin():
        s.execute(update(CompletionCacheRow).where(CompletionCacheRow.key == key)
                  .values(entry=entry))


def test_an_edited_completion_is_recomputed_not_served(db_url: str, seal: EntrySeal,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    cache = SqlCompletionCache(db_url, seal=seal)
    first, _, llm1 = _run(cache)
    assert first.answer.startswith("Tessel") and len(llm1.prompts) == 1
    key, entry = next((k, e) for k, e in _rows(cache).items() if e["text"] == "Tessel [1]")
    # the attack of the issue: a wrong answer, 2 tokens instead of the real count, a run that
    # never existed; the seal is left as it was
    _write(cache, key, {**entry, "text": "Poisoned Answer", "prompt_tokens": 1,
                        "completion_tokens": 1, "origin": {"run_id": "nosuch", "node_id": "gen",
                                                           "visit": 1}})
    with caplog.at_level(logging.WARNING, logger="storage.cache"):
        second, sink, llm2 = _run(cache)
    assert "Poisoned" not in second.answer and second.answer == first.answer
    assert len(llm2.prompts) == 1                         # computed again
    call = sink.steps[1].llm_calls[0]
    assert call.cached_from is None and call.prompt_tokens > 1
    assert second.cost.tokens == first.cost.tokens
    assert cache.rejected == {"bad_mac": 1}
    assert sum("not served (bad_mac" in r.getMessage() for r in caplog.records) == 1
    # the row was replaced by the recomputed entry: the next run is served from it
    assert _rows(cache)[key]["text"] == "Tessel [1]"
    third, sink3, llm3 = _run(cache)
    assert llm3.prompts == [] and third.answer == first.answer
    assert sink3.steps[1].llm_calls[0].cached_from == {"run_id": second.run_id,
                                                       "node_id": "gen", "visit": 1}


def test_a_row_moved_to_another_key_is_a_miss(db_url: str, seal: EntrySeal) -> None:
    cache = SqlCompletionCache(db_url, seal=seal)
    cache.put("a" * 64, ENTRY)
    cache.put("b" * 64, CacheEntry(text="Corren", prompt="P2"))
    _write(cache, "b" * 64, _rows(cache)["a" * 64])      # a's answer (and seal) under b's key
    assert cache.get("b" * 64) is None
    assert cache.get("a" * 64) == ENTRY                   # the original still serves
    assert cache.rejected == {"bad_mac": 1}


@pytest.mark.parametrize("field, value", [
    ("text", "Poisoned Answer"), ("prompt", "another request"), ("prompt_tokens", 2),
    ("completion_tokens", 0), ("ms", 1.0), ("finish_reason", "length"),
    ("logprobs", [["Tes", -0.1]]), ("tokens", [1, 2]),
    ("origin", {"run_id": "nosuch", "node_id": "gen", "visit": 1}),
])
def test_every_field_is_under_the_seal(tmp_path: Path, seal: EntrySeal, field: str,
                                       value: Any) -> None:
    cache = SqlCompletionCache(f"sqlite:///{tmp_path / 'c.db'}", seal=seal)
    cache.put("k" * 64, ENTRY)
    _write(cache, "k" * 64, {**_rows(cache)["k" * 64], field: value})
    assert cache.get("k" * 64) is None and cache.rejected == {"bad_mac": 1}


def test_what_is_stored_is_every_field_of_the_entry(seal: EntrySeal) -> None:
    """The seal's shallow copy of an entry is its `to_dict` (so no field escapes the MAC)."""
    stored = seal.seal("k" * 64, ENTRY)
    assert json.loads(json.dumps({k: v for k, v in stored.items() if k != "seal"})) == \
        json.loads(json.dumps(ENTRY.to_dict()))
    assert seal.open("k" * 64, stored).entry == ENTRY


def test_rows_without_a_seal_are_misses_and_replaced(tmp_path: Path, seal: EntrySeal) -> None:
    """Entries stored before entries were sealed (or with the seal stripped) are not served."""
    cache = SqlCompletionCache(f"sqlite:///{tmp_path / 'c.db'}", seal=seal)
    cache.put("k" * 64, ENTRY)
    old = {k: v for k, v in _rows(cache)["k" * 64].items() if k != "seal"}
    _write(cache, "k" * 64, old)
    assert cache.get("k" * 64) is None and cache.rejected == {"unsealed": 1}
    assert _rows(cache) == {}                             # deleted: the recomputed entry goes in
    cache.put("k" * 64, ENTRY)
    assert cache.get("k" * 64) == ENTRY


def test_an_entry_sealed_with_another_key_is_a_miss_and_replaced(tmp_path: Path,
                                                                 seal: EntrySeal) -> None:
    """A lost or new key file (a container's home recreated) costs one recomputation an entry."""
    url = f"sqlite:///{tmp_path / 'c.db'}"
    other = SqlCompletionCache(url, seal=EntrySeal(load_secret(tmp_path / "other.key")))
    other.put("k" * 64, ENTRY)
    mine = SqlCompletionCache(url, seal=seal)
    assert mine.get("k" * 64) is None and mine.rejected == {"other_key": 1}
    mine.put("k" * 64, replace(ENTRY, text="recomputed"))
    assert mine.get("k" * 64) == replace(ENTRY, text="recomputed")
    assert other.get("k" * 64) is None and other.rejected == {"other_key": 1}


def test_the_key_file_is_private_and_outside_the_database(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cfg" / "cache.key"
    monkeypatch.setenv("FLOWKIT_CACHE_KEY_FILE", str(path))
    assert key_path() == path
    seal = EntrySeal.default()
    assert seal.persistent and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert EntrySeal(load_secret(path)).key_id == seal.key_id      # the same key read again
    cache = SqlCompletionCache(f"sqlite:///{tmp_path / 'c.db'}", seal=seal)
    cache.put("k" * 64, ENTRY)
    secret = path.read_text().strip()
    assert secret not in str(_rows(cache)) and seal.key_id in str(_rows(cache))


@pytest.mark.parametrize("make, why", [
    (lambda p: (p.write_text("ab" * 32), p.chmod(0o644)), "lets others read or write it"),
    (lambda p: (p.write_text("not hex"), p.chmod(0o600)), "not 64 hex digits"),
    (lambda p: (p.with_name("real").write_text("ab" * 32), p.symlink_to(p.with_name("real"))),
     "not a link"),
], ids=["readable by others", "not hex", "a symbolic link"])
def test_an_untrustworthy_key_file_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               caplog: pytest.LogCaptureFixture, make: Any,
                                               why: str) -> None:
    path = tmp_path / "cache.key"
    make(path)
    monkeypatch.setenv("FLOWKIT_CACHE_KEY_FILE", str(path))
    with caplog.at_level(logging.WARNING, logger="flowkit.runtime.cache_seal"):
        seal = EntrySeal.default()
    assert not seal.persistent                            # a key of this process alone
    assert any(why in r.getMessage() for r in caplog.records), caplog.records
    stranger = EntrySeal(bytes.fromhex("ab" * 32))
    assert seal.key_id != stranger.key_id                 # the untrusted key is not the one used


def test_makers_racing_to_create_the_key_agree_on_one(tmp_path: Path) -> None:
    """Several workers starting at once: each links its own new key into place or reads the
    first one; all end with the same key and no temporary file is left."""
    path = tmp_path / "k" / "cache.key"
    got: list[bytes] = []
    threads = [threading.Thread(target=lambda: got.append(load_secret(path))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(got) == 8 and len(set(got)) == 1 and len(got[0]) == 32
    assert [p.name for p in path.parent.iterdir()] == ["cache.key"]
