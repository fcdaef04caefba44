"""Knowledge-base changes are all-or-nothing and one writer at a time, across processes.

Real Chroma + BM25 with the HashEmbedder (no model loads), ingests in child processes
(tests/kb_child.py): 10 ingests killed with SIGKILL at random moments, each followed by a re-ingest
that must complete with Chroma, BM25 and meta.json agreeing; two concurrent ingests into one
knowledge base; a writer refused after ~2 s while another holds the lock; an incomplete knowledge
base refuses queries.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flowkit.errors import ResourceError
from flowkit.ingest import ingest
from flowkit.runtime.kb import INCOMPLETE
from flowkit.runtime.kblock import kb_write_lock
from flowkit.runtime.resources import Resources
from flowkit.testing import HashEmbedder

ROOT = Path(__file__).resolve().parents[1]
CHILD = ROOT / "tests" / "kb_child.py"
WORDS = ["lighthouse", "keeper", "island", "ferry", "harbour", "storm", "tide", "beacon", "lamp", "rock", "coast"]
KILLS = 10


def _corpus(folder: Path, tag: str, files: int = 8, paras: int = 6) -> Path:
    rnd = random.Random(tag)
    folder.mkdir(parents=True)
    for i in range(files):
        (folder / f"{tag}_{i:02d}.txt").write_text("\n\n".join(
            " ".join(rnd.choice(WORDS) for _ in range(110)) for _ in range(paras)))
    return folder


def _spawn(*args: Path | str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "ANONYMIZED_TELEMETRY": "False"}
    return subprocess.Popen([sys.executable, str(CHILD), *map(str, args)], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _line(proc: subprocess.Popen[str], key: str) -> Any:
    assert proc.stdout is not None
    for raw in proc.stdout:
        data = json.loads(raw)
        if key in data:
            return data[key]
    raise AssertionError(f"child ended without '{key}': rc={proc.wait()} {proc.stderr.read()}")


def _agree(c: dict[str, Any]) -> bool:
    return c["meta_chunks"] == c["chroma"] == c["bm25"]


def test_kill_9_at_random_moments_then_reingest_completes(tmp_path: Path) -> None:
    data, kb = tmp_path / "data", "crash"
    corpora = [_corpus(tmp_path / f"c{i}", f"c{i}") for i in range(KILLS + 1)]
    rnd = random.Random(9)
    t0 = time.monotonic()
    first = _spawn(data, kb, corpora[0])
    found = _line(first, "found")
    start = time.monotonic()
    assert not found["exists"]
    done = _line(first, "done")
    one_ingest_s = time.monotonic() - start
    assert first.wait(30) == 0 and done["state"] == "complete" and _agree(done)
    per_corpus = done["chroma"]
    expected, outcomes = per_corpus, []
    for i in range(KILLS):
        # repairs corpus i (already ingested, or cut short by the last kill), then is killed
        # at a random moment while ingesting corpus i + 1
        proc = _spawn(data, kb, corpora[i], corpora[i + 1])
        found = _line(proc, "found")
        if i > 0:                          # the state the previous SIGKILL left
            assert found["state"] == INCOMPLETE or (found["state"] == "complete"
                                                    and _agree(found)), found
            outcomes.append(found["state"])
        done = _line(proc, "done")
        assert done["state"] == "complete" and _agree(done), done
        assert done["chroma"] == expected, (i, done, expected)
        _line(proc, "victim")
        time.sleep(rnd.uniform(0.0, one_ingest_s * 0.8))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
        expected += per_corpus
    last = _spawn(data, kb, corpora[KILLS])
    found = _line(last, "found")
    assert found["state"] == INCOMPLETE or _agree(found)
    outcomes.append(found["state"])
    done = _line(last, "done")
    assert last.wait(30) == 0
    assert done["state"] == "complete" and _agree(done) and done["chroma"] == expected
    assert INCOMPLETE in outcomes, outcomes      # the kills did land inside changes
    print(f"{KILLS} kills survived; states after them: {outcomes}; "
          f"{time.monotonic() - t0:.1f} s")


def test_two_concurrent_ingests_one_waits_or_is_refused_and_the_kb_agrees(tmp_path: Path) -> None:
    data, kb = tmp_path / "data", "shared"
    a, b = _corpus(tmp_path / "a", "a", files=12), _corpus(tmp_path / "b", "b", files=12)
    procs = [_spawn(data, kb, a), _spawn(data, kb, b)]
    outs = [p.communicate(timeout=120) for p in procs]
    rcs = sorted(p.returncode for p in procs)
    assert rcs in ([0, 0], [0, 3]), (rcs, [o[1][-2000:] for o in outs])
    if rcs == [0, 3]:
        refused = next(o[0] for o, p in zip(outs, procs) if p.returncode == 3)
        assert "is being changed by another process (pid " in refused
    res = Resources(data)
    res.set_embedder(HashEmbedder())
    base = res.kb(kb)
    meta = base.meta()
    assert meta["state"] == "complete"
    assert meta["chunks"] == base.count() == base.bm25.count() > 0


def test_a_second_writer_is_refused_after_about_two_seconds(tmp_path: Path) -> None:
    res = Resources(tmp_path / "data")
    res.set_embedder(HashEmbedder())
    doc = tmp_path / "d.txt"
    doc.write_text("The Corren lighthouse keeper kept a log.")
    ingest(res, "held", [doc])
    base = res.kb("held")
    with kb_write_lock(base.dir, "held", wait_s=0):    # another holder (its own open file)
        t = time.monotonic()
        with pytest.raises(ResourceError) as err:
            ingest(res, "held", [doc])
        waited = time.monotonic() - t
    assert 1.8 <= waited <= 4.0
    assert str(err.value) == (f"knowledge base 'held' is being changed by another process "
                              f"(pid {os.getpid()}); try again when it finishes")
    assert base.meta()["state"] == "complete"           # the refused writer changed nothing
    ingest(res, "held", [doc])                          # free again


def test_an_incomplete_kb_refuses_queries_until_reingested(tmp_path: Path) -> None:
    res = Resources(tmp_path / "data")
    res.set_embedder(HashEmbedder())
    doc = tmp_path / "d.txt"
    doc.write_text("The Corren lighthouse keeper kept a log.")
    ingest(res, "half", [doc])
    base = res.kb("half")
    base.update_meta(state=INCOMPLETE)                  # what a killed change leaves
    for call in (base.require_ready, lambda: base.dense("keeper", 3),
                 lambda: base.lexical("keeper", 3)):
        with pytest.raises(ResourceError, match="knowledge base 'half' is incomplete"):
            call()
    ingest(res, "half", [doc])
    base.require_ready()
    assert base.lexical("keeper", 3)[0]["text"].startswith("The Corren")


def test_creating_an_empty_kb_takes_the_write_lock(tmp_path: Path) -> None:
    """The studio's 'create knowledge base' writes meta.json under the lock: while another
    process changes a KB of that name, creating it is refused and nothing is written."""
    from service import knowledge as kbview
    res = Resources(tmp_path / "data")
    res.set_embedder(HashEmbedder())
    base = res.kb("pier")
    with kb_write_lock(base.dir, "pier", wait_s=0):     # an ingest into 'pier' under way
        with pytest.raises(ResourceError, match="being changed by another process"):
            kbview.create(res, "pier", "harbour notes")
    assert not base.exists and "pier" not in res.kb_names()
    kbview.create(res, "pier", "harbour notes")
    assert base.meta()["description"] == "harbour notes" and "pier" in res.kb_names()
    with pytest.raises(ResourceError, match="already exists"):
        kbview.create(res, "pier")
