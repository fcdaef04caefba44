"""The debug commands as a user types them: `flowkit run --break`, `flowkit debug RUN ACTION`,
`flowkit resume`. In-process with the scripted model; one real-model test through the CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from debugkit import SHAPES, Q, make_workspace

from flowkit.spec import dump
from service import cli
from service.cli import common

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def fk(tmp_path: Path, monkeypatch, capsys):
    """Run `flowkit ARGS` in this process on one data dir; returns (exit code, stdout, stderr)."""
    monkeypatch.setattr(common, "open_workspace", lambda args: make_workspace(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    flow_file = tmp_path / "loop.json"
    dump(SHAPES["loop"], flow_file)

    def run(*args: str) -> tuple[int, str, str]:
        code = cli.main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err
    run.flow = str(flow_file)  # type: ignore[attr-defined]
    return run


def test_run_with_a_breakpoint_pauses_and_prints_memory_and_prompt(fk):
    code, out, err = fk("run", fk.flow, "--kb", "test", "-q", Q, "--break", "gen@2")
    assert code == 0
    assert "paused before 'gen' (visit 2): breakpoint gen@2" in out
    assert "documents: 2 passages" in out and "drafts" in out
    assert "next prompt (complete):" in out and "Question: " + Q in out
    assert "flowkit debug" in out and "continue" in out


def test_debug_show_set_step_continue_in_json(fk):
    code, out, _ = fk("run", fk.flow, "--kb", "test", "-q", Q, "--break-before", "gen:1", "--json")
    data = json.loads(out)
    run_id = data["run_id"]
    assert code == 0 and data["status"] == "paused"
    assert data["pause"]["node"] == "gen" and data["pause"]["visit"] == 1
    assert "Question: " + Q in data["pause"]["next_prompt"]["prompt"]
    code, out, _ = fk("debug", run_id, "set", "documents",
                      '[{"id": "x", "text": "Mara Velt was born on Corren."}]')
    assert code == 0 and "edit 1" in out
    code, out, _ = fk("debug", run_id, "step", "--json")
    data = json.loads(out)
    assert data["status"] == "paused" and data["pause"]["node"] == "judge" and data["edited"]
    code, out, _ = fk("debug", run_id, "over", "--json")
    data = json.loads(out)
    assert data["pause"]["node"] == "final" and data["pause"]["reason"] == "step over loop"
    code, out, _ = fk("debug", run_id, "continue", "--json")
    data = json.loads(out)
    assert code == 0 and data["status"] == "ok"
    assert [s["node"] for s in data["steps"]][:3] == ["ret", "_edit", "gen"]
    code, out, err = fk("debug", run_id, "continue")
    assert code == 2 and "is not paused (status ok)" in err


def test_resume_with_set_and_abort(fk):
    _, out, _ = fk("run", fk.flow, "--kb", "test", "-q", Q, "--break", "gen", "--json")
    run_id = json.loads(out)["run_id"]
    code, out, _ = fk("resume", run_id, "--set", 'documents=[{"id": "x", "text": "born on Corren"}]',
                      "--json")
    data = json.loads(out)
    assert data["status"] == "paused" and data["pause"]["visit"] == 2   # gen again, round 2
    code, out, _ = fk("debug", run_id, "abort")
    assert code == 0 and "aborted" in out
    code, out, _ = fk("debug", run_id, "show", "--json")
    assert json.loads(out)["status"] == "cancelled"


def test_bad_input_is_refused_with_a_clear_error(fk):
    code, _, err = fk("run", fk.flow, "--kb", "test", "-q", Q, "--break", "nope")
    assert code == 2 and "has no node 'nope'" in err
    code, _, err = fk("run", fk.flow, "--kb", "test", "-q", Q, "--break", "gen?len(drafts) >")
    assert code == 2 and "does not parse at column" in err
    _, out, _ = fk("run", fk.flow, "--kb", "test", "-q", Q, "--break", "gen", "--json")
    run_id = json.loads(out)["run_id"]
    code, _, err = fk("debug", run_id, "set", "answer", "not json")
    assert code == 2 and "answer" in err
    code, _, err = fk("debug", run_id, "set", "answer", "42")
    assert code == 2 and "answer must be text, got a number" in err
    code, _, err = fk("debug", run_id, "set", "steps", "3")
    assert code == 2 and "not a working-memory key" in err
    # read as the replay page's fork form reads it (before: 50,000 passages were accepted here; 5,000 is past its 1,000)
    many = json.dumps([{"id": str(i), "text": "x"} for i in range(5_000)])
    code, _, err = fk("debug", run_id, "set", "documents", many)
    assert code == 2 and "too_many_items" in err and "documents" in err, err
    code, _, err = fk("debug", run_id, "set", "answer", '"' + "x" * 60_000 + '"')
    assert code == 2 and "answer" in err and "\n" not in err.strip(), err
    code, _, err = fk("resume", run_id, "--set", "answer")
    assert code == 2 and "KEY=JSON" in err
    code, out, _ = fk("debug", run_id, "break", "final", "judge@2:after")
    assert code == 0 and "final, judge@2:after" in out
    code, out, _ = fk("debug", run_id, "prompt")
    assert code == 0 and "Question: " + Q in out


# ---- the real model through the real CLI ------------------------------------------------------
def flowkit(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "FLOWKIT_HOME": str(data_dir), "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "service.cli", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, f"flowkit {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.real
def test_naive_rag_paused_before_its_answer_then_continued_and_edited(tmp_path: Path):
    q = "Who designed the Corren Lighthouse?"
    flowkit(tmp_path, "ingest", "--kb", "demo", str(ROOT / "flowkit" / "sample_kb" / "articles.jsonl"))
    straight = json.loads(flowkit(tmp_path, "run", "naive_rag", "--kb", "demo", "-q", q,
                                  "--no-cache", "--json").stdout)
    paused = json.loads(flowkit(tmp_path, "run", "naive_rag", "--kb", "demo", "-q", q,
                                "--no-cache", "--break", "generate", "--json").stdout)
    run_id = paused["run_id"]
    assert paused["status"] == "paused" and [s["node"] for s in paused["steps"]] == ["retrieve"]
    pause = paused["pause"]
    assert pause["node"] == "generate" and pause["memory"]["documents"]
    prompt = pause["next_prompt"]["prompt"]
    assert q in prompt and pause["memory"]["documents"][0]["text"][:40] in prompt
    done = json.loads(flowkit(tmp_path, "debug", run_id, "continue", "--no-cache", "--json").stdout)
    assert done["status"] == "ok" and done["run_id"] == run_id
    assert [s["node"] for s in done["steps"]] == ["retrieve", "generate"]
    assert done["answer"] == straight["answer"]           # greedy decoding: the same answer
    trace = json.loads(flowkit(tmp_path, "trace", run_id, "--json").stdout)
    assert trace["steps"][1]["llm_calls"][0]["prompt"].endswith(
        json.loads(flowkit(tmp_path, "trace", straight["run_id"], "--json").stdout)
        ["steps"][1]["llm_calls"][0]["prompt"][-200:])

    # an edit changes what follows: new passages before generate, the answer follows them
    paused = json.loads(flowkit(tmp_path, "run", "naive_rag", "--kb", "demo", "-q", q,
                                "--break", "generate", "--json").stdout)
    new = [{"id": "z1", "title": "Corren Lighthouse",
            "text": "The Corren Lighthouse was designed by the engineer Ilse Brandt."}]
    flowkit(tmp_path, "debug", paused["run_id"], "set", "documents", json.dumps(new))
    done = json.loads(flowkit(tmp_path, "debug", paused["run_id"], "continue", "--json").stdout)
    assert done["status"] == "ok" and done["edited"]
    assert "Brandt" in done["answer"], done["answer"]
    assert [s["node"] for s in done["steps"]] == ["retrieve", "_edit", "generate"]
