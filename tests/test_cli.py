"""The CLI as a user runs it: ingest with progress, run, trace, flows, operators; errors exit non-zero."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def fk(data_dir: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "FLOWKIT_HOME": str(data_dir), "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "service.cli", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"flowkit {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_operators_and_templates_listing(tmp_path):
    ops = json.loads(fk(tmp_path, "operators", "--json").stdout)
    keys = {o["key"] for o in ops}
    assert {"retrieval.bm25", "retrieval.dense", "generation.answer", "orchestration.rrf"} <= keys
    for o in ops:
        assert o["summary"] and o["module"] in o["key"] and "properties" in o["params"] or \
            o["params"].get("type") == "object"
    assert "naive_rag" in fk(tmp_path, "templates").stdout


def test_bad_inputs_give_clear_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "nodes": [{"id": "a", "operator": "retrieval.nope"}]}')
    p = fk(tmp_path, "validate", str(bad), check=False)
    assert p.returncode == 1 and "unknown_operator" in p.stdout and "node 'a'" in p.stdout
    p = fk(tmp_path, "run", str(bad), "--kb", "x", "-q", "q", check=False)
    assert p.returncode == 2 and "unknown operator 'retrieval.nope'" in p.stderr
    p = fk(tmp_path, "run", "no_such_flow", "--kb", "x", "-q", "q", check=False)
    assert p.returncode == 2 and "not a flow file, a saved flow or a template" in p.stderr
    p = fk(tmp_path, "ingest", "--kb", "k", str(tmp_path / "missing.jsonl"), check=False)
    assert p.returncode == 2 and "file not found" in p.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "1", "text": "ok"}\n{not json}\n')
    p = fk(tmp_path, "ingest", "--kb", "k", str(broken), check=False)
    assert p.returncode == 2 and "broken.jsonl:2: not valid JSON" in p.stderr
    assert not (tmp_path / "kb" / "k").exists()                       # nothing half-written


@pytest.mark.real
@pytest.mark.loads_model
def test_ingest_run_trace_flows(tmp_path):
    corpus = ROOT / "flowkit" / "sample_kb" / "articles.jsonl"
    p = fk(tmp_path, "ingest", "--kb", "demo", str(corpus))
    # a new knowledge base: the structure-aware chunker (36 chunks of the 16 articles; the
    # sample knowledge base itself keeps chunk_fixed's 38)
    m = re.search(r"ingested (\d+) chunks into knowledge base 'demo'", " ".join(p.stdout.split()))
    assert m, p.stdout
    assert f"{m[1]}/{m[1]}" in p.stderr                              # the progress bar
    [meta] = tmp_path.glob("**/kb/demo/meta.json")
    assert json.loads(meta.read_text())["chunker"] == "indexing.chunk_structure"
    p = fk(tmp_path, "run", "naive_rag", "--kb", "demo", "-q", "Who designed the Corren Lighthouse?",
           "--json")
    data = json.loads(p.stdout)
    assert data["status"] == "ok" and data["answer"]
    assert [s["node"] for s in data["steps"]] == ["retrieve", "generate"]
    p = fk(tmp_path, "trace", data["run_id"])
    assert "step 1: generate" in p.stdout and "prompt" in p.stdout and "answer" in p.stdout
    trace = json.loads(fk(tmp_path, "trace", data["run_id"], "--json").stdout)
    assert trace["steps"][1]["llm_calls"][0]["completion_tokens"] > 0
    assert trace["run"]["llm_calls"] == 1 and trace["run"]["tokens"] > 0   # the run's cost, flat
    tpl = ROOT / "flowkit" / "templates" / "naive_rag.json"
    assert "version 1" in fk(tmp_path, "flows", "import", str(tpl), "--name", "mine").stdout
    assert "mine" in fk(tmp_path, "flows", "list").stdout
    exported = json.loads(fk(tmp_path, "flows", "export", "mine").stdout)
    assert exported["name"] == "mine" and len(exported["nodes"]) == 2
    p = fk(tmp_path, "run", "mine", "--kb", "demo", "-q", "When was the Corren Lighthouse first lit?")
    assert "answer:" in p.stdout and "totals:" in p.stdout


def test_hostile_files_give_one_line_errors_and_write_nothing(tmp_path):
    tpl = json.loads((ROOT / "flowkit" / "templates" / "naive_rag.json").read_text())
    files = {"utf.json": b"\xff\xfe{}", "deep.json": b"[" * 995 + b"]" * 995,
             "sur.json": json.dumps({**tpl, "description": "\ud800"}).encode(),
             "inf.json": json.dumps({**tpl, "layout": {"retrieve": {"x": float("inf"), "y": 0}}})
             .encode(),
             "v0.json": json.dumps({**tpl, "schema_version": 0}).encode(),
             "vt.json": json.dumps({**tpl, "schema_version": True}).encode()}
    codes = ["not_utf8", "too_deep", "bad_text", "non_finite_number", "bad_schema_version",
             "bad_schema_version"]
    for (name, raw), code in zip(files.items(), codes):
        (tmp_path / name).write_bytes(raw)
        p = fk(tmp_path, "validate", str(tmp_path / name), check=False)
        assert p.returncode == 1 and f"[{code}]" in p.stdout and "Traceback" not in p.stderr
        p = fk(tmp_path, "flows", "import", str(tmp_path / name), check=False)
        assert p.returncode == 2 and f"[{code}]" in p.stderr and "Traceback" not in p.stderr
    assert "naive_rag" not in fk(tmp_path, "flows", "list").stdout
    p = fk(tmp_path, "ingest", "--kb", "k", "--params", "[1", str(tmp_path / "x.jsonl"), check=False)
    assert p.returncode == 2 and "[bad_json] field '--params'" in p.stderr
    for name, raw, message in [("u.jsonl", b"\xff\n", "u.jsonl:1: not UTF-8"),
                               ("d.jsonl", b"[" * 995 + b"]" * 995, "d.jsonl:1: JSON nested"),
                               ("dup.jsonl", b'{"id": 1, "text": "a"}\n{"id": 1, "text": "b"}',
                                "dup.jsonl:2: duplicate id '1'")]:
        (tmp_path / name).write_bytes(raw)
        p = fk(tmp_path, "ingest", "--kb", "k", str(tmp_path / name), check=False)
        assert p.returncode == 2 and message in p.stderr.replace("\n", ""), p.stderr
        assert "Traceback" not in p.stderr
    assert "k" not in fk(tmp_path, "kb").stdout.split()


def test_the_sample_kb_ships_inside_the_package() -> None:
    """`flowkit setup` works from an installed wheel too: the sample is package data."""
    import tomllib
    from fnmatch import fnmatch

    from flowkit import sample_kb
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["flowkit"]
    files = [p.relative_to(ROOT / "flowkit").as_posix() for p in sample_kb.DIR.iterdir()
             if p.suffix in (".jsonl", ".md")]
    assert len(files) == 3 and sample_kb.ARTICLES.is_file() and sample_kb.QUESTIONS.is_file()
    assert all(any(fnmatch(f, g) for g in globs) for f in files), (files, globs)


def test_kb_lists_an_empty_knowledge_base_as_empty(tmp_path):
    """Issue 48, item 9: a knowledge base with nothing ingested read 'complete'."""
    from service import knowledge
    from service.workspace import Workspace
    ws = Workspace(tmp_path)
    try:
        knowledge.create(ws.resources, "notes48")
    finally:
        ws.close()
    row = next(line for line in fk(tmp_path, "kb").stdout.splitlines() if "notes48" in line)
    assert "empty" in row and "complete" not in row, row
