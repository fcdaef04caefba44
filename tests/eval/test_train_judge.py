"""Training the sufficiency classifier: labels from our own chains, grouped CV, saved safely,
chains reused on a second training, and the `flowkit train-judge` command. Scripted FakeLLM and a
hashing embedder; the real-model run is in test_train_judge_real.py."""
from __future__ import annotations

import json

import numpy as np
import pytest

from flowkit import compile_flow, run_flow
from flowkit.eval.metrics import accuracy
from flowkit.eval.train_judge import examples_path, pick_l2, train_judge
from flowkit.judges import load_classifier
from flowkit.run_request import RunHooks, RunRequest
from flowkit.templates import load_template
from flowkit.testing import HashEmbedder
from flowkit.trace import ListSink
from service import cli
from service.cli import common


def questions(world) -> list[dict]:
    return [json.loads(line) for line in
            (world.dataset / "questions.jsonl").read_text().splitlines()]


@pytest.fixture()
def ws(world):
    world.ws.resources.llm.rules.insert(0, (r"Next question:", "Who designed the Corren Lighthouse?"))
    world.ws.resources.set_embedder(HashEmbedder())
    return world.ws


def match(pred: str, golds: list[str]) -> bool:
    return bool(accuracy(pred, golds))


def test_pick_l2_prefers_what_generalises_across_questions():
    rng = np.random.default_rng(0)
    y = np.array([0, 1] * 20)
    x = rng.normal(size=(40, 8)) + y[:, None] * 2.0            # separable in every fold
    groups = [f"q{i // 2}" for i in range(40)]
    l2, scores = pick_l2(x, y, groups)
    assert set(scores) == {"0.001", "0.01", "0.1", "1.0", "10.0"}
    assert scores[str(l2)] == max(scores.values()) and scores[str(l2)] > 0.9
    assert pick_l2(x, np.zeros(40, dtype=int), groups)[1] == {}   # one class: nothing to pick


def test_train_judge_labels_prefixes_saves_json_and_examples(world, ws, tmp_path):
    QUESTIONS = questions(world)
    out = tmp_path / "judge.json"
    report = train_judge(ws, load_template("corag_fixed"), QUESTIONS, "test", str(out), match,
                         train_frac=0.5)
    rows = [json.loads(line) for line in examples_path(out).read_text().splitlines()]
    assert len(rows) == len(QUESTIONS) * 4                       # a chain of L=4 per question
    by_q = {q["id"]: q for q in QUESTIONS}
    for r in rows:    # the final answer is the scripted answer: right except q3 ("twelve")
        q = by_q[r["question_id"]]
        assert r["label"] == (0 if q["id"] == "q3" else 1)
        assert r["text"].startswith(q["question"] + " || ")
    assert {r["split"] for r in rows} == {"train", "test"}
    assert report["train_examples"] + report["test_examples"] == len(rows)
    assert 0.0 <= report["test_accuracy"] <= 1.0 and report["l2"] in (1e-3, 1e-2, 1e-1, 1.0, 10.0)
    clf = load_classifier(out)
    assert clf.w.shape == (HashEmbedder.dim,) and clf.meta["embedder"] == "hash-embedder"
    assert "pickle" not in out.read_text()


def test_second_training_reuses_the_stored_chains(world, ws, tmp_path):
    QUESTIONS = questions(world)
    train_judge(ws, load_template("corag_fixed"), QUESTIONS[:3], "test", str(tmp_path / "a.json"),
                match)
    runs_before = len(ws.store.list_runs(limit=1000, include_eval=True))
    calls_before = len(ws.resources.llm.prompts)
    train_judge(ws, load_template("corag_fixed"), QUESTIONS[:3], "test", str(tmp_path / "b.json"),
                match)
    assert len(ws.store.list_runs(limit=1000, include_eval=True)) == runs_before
    new_prompts = ws.resources.llm.prompts[calls_before:]
    assert len(new_prompts) == 3 * 4 and not any("Next question:" in p for p in new_prompts)
    assert examples_path(tmp_path / "a.json").read_text() == \
        examples_path(tmp_path / "b.json").read_text()


def test_cli_train_judge_then_the_judge_uses_the_weights(world, ws, monkeypatch, capsys):
    monkeypatch.setattr(common, "open_workspace", lambda args: ws)
    code = cli.main(["train-judge", "--dataset", str(world.dataset), "--kb", "test",
                     "--limit", "6", "--out", "judges/mine.json"])
    got = capsys.readouterr()
    assert code == 0, got.err
    assert "held-out accuracy" in got.out and "majority-class baseline" in got.out
    path = ws.data_dir / "judges" / "mine.json"
    assert path.is_file() and examples_path(path).is_file()
    spec = load_template("corag_early_stop")
    spec = spec.model_copy(update={"nodes": [
        n.model_copy(update={"params": {**n.params, "model_path": "judges/mine.json"}})
        if n.id == "sufficient" else n for n in spec.nodes]})
    sink = ListSink()
    result = run_flow(compile_flow(spec), ws.resources,
                      RunRequest(questions(world)[0]["question"], kb="test"), RunHooks(sink=sink))
    assert result.status == "ok", result.error
    judged = [s.memory_after["judgement"] for s in sink.steps if s.node_id == "sufficient"]
    assert judged and all("score" in j or j["reason"].startswith("chain length") for j in judged)


def test_cli_train_judge_errors(world, ws, monkeypatch, capsys):
    monkeypatch.setattr(common, "open_workspace", lambda args: ws)
    assert cli.main(["train-judge", "--dataset", str(world.dataset), "--kb", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert cli.main(["train-judge", "--dataset", str(world.dataset), "--kb", "test",
                     "--train-frac", "1.5"]) == 2
    assert "--train-frac must be between 0 and 1" in capsys.readouterr().err
    assert cli.main(["train-judge", "--dataset", str(world.dataset), "--kb", "test",
                     "--limit", "1"]) == 2


def test_refit_from_examples_runs_nothing(world, ws, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(common, "open_workspace", lambda args: ws)
    first = tmp_path / "first.json"
    train_judge(ws, load_template("corag_fixed"), questions(world), "test", str(first), match,
                train_frac=0.5)
    calls = len(ws.resources.llm.prompts)
    code = cli.main(["train-judge", "--examples", str(examples_path(first)),
                     "--out", str(tmp_path / "again.json")])
    got = capsys.readouterr()
    assert code == 0, got.err
    assert len(ws.resources.llm.prompts) == calls                     # no LLM call at all
    a, b = load_classifier(first), load_classifier(tmp_path / "again.json")
    assert np.allclose(a.w, b.w) and a.b == pytest.approx(b.b)        # same data, same split
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question_id": "q1"}\n')
    assert cli.main(["train-judge", "--examples", str(bad)]) == 2
    assert "line 1: not an example" in " ".join(capsys.readouterr().err.split())   # rich wraps


def _chain(qid: str, labels: list[int]) -> list:
    from flowkit.eval.train_judge import Example
    return [Example(qid, f"{qid} || {k}", lab, k) for k, lab in enumerate(labels, 1)]


def test_simulate_stops_at_the_first_confident_prefix():
    from flowkit.eval.train_judge import simulate
    ex = _chain("a", [0, 1, 1, 1]) + _chain("b", [1, 1, 1, 1])
    probs = [0.2, 0.7, 0.9, 0.9] + [0.6, 0.6, 0.6, 0.6]
    sim = simulate(ex, probs, 0.65)
    # a stops at prefix 2 (right), b never reaches 0.65 and runs all 4 (right)
    assert sim == {"accuracy": 1.0, "chain_length": 3.0, "full_accuracy": 1.0,
                   "full_chain_length": 4.0}
    assert simulate(ex, probs, 0.15)["accuracy"] == 0.5     # a stops at 1, wrong


def test_pick_threshold_is_the_cheapest_within_the_allowed_drop():
    from flowkit.eval.train_judge import pick_threshold
    ex = _chain("a", [0, 1, 1, 1]) + _chain("b", [1, 1, 1, 1]) + _chain("c", [0, 0, 0, 0])
    probs = [0.2, 0.7, 0.9, 0.9] + [0.6, 0.6, 0.6, 0.6] + [0.1, 0.1, 0.1, 0.1]
    t, sim = pick_threshold(ex, probs, max_drop=0.0)
    # 0.6 stops b at 1 and a at 2, both right; 0.2 would stop a at 1 (wrong); c always runs 4
    assert t == 0.6 and sim["accuracy"] == sim["full_accuracy"] == 2 / 3
    assert sim["chain_length"] == (2 + 1 + 4) / 3
    t_loose, sim_loose = pick_threshold(ex, probs, max_drop=0.5)
    assert t_loose <= 0.1 and sim_loose["chain_length"] == 1.0


def test_labels_come_from_the_flows_own_final_steps():
    """The prefixes are labelled by what the flow runs after 'done' (its hybrid search with the
    question, then its answer with history), not by a retrieval of the trainer's own."""
    from flowkit.errors import FlowkitError
    from flowkit.eval.train_judge import final_steps
    from flowkit.spec import EdgeSpec
    spec = load_template("corag_fixed")
    steps = final_steps(spec)
    assert [(s.id, s.operator) for s in steps] == [("final_retrieve", "retrieval.hybrid"),
                                                   ("final", "generation.answer")]
    assert steps[0].params["query_from"] == "question" and steps[1].params["use_history"]
    no_done = spec.model_copy(update={"edges": [e for e in spec.edges if e.label != "done"]})
    with pytest.raises(FlowkitError, match="exactly one judge 'done' edge"):
        final_steps(no_done)
    cut = spec.model_copy(update={"edges": [e for e in spec.edges if e.source != "final_retrieve"]})
    with pytest.raises(FlowkitError, match="does not write an answer"):
        final_steps(cut)
    forked = spec.model_copy(update={"edges": [*spec.edges, EdgeSpec(source="final_retrieve",
                                                                      target="subq")]})
    with pytest.raises(FlowkitError, match="branch at 'final_retrieve'"):
        final_steps(forked)


def test_labelling_runs_the_final_steps_on_each_prefix(world, ws):
    from flowkit.eval.train_judge import final_steps, label_prefixes
    q = questions(world)[0]
    chain = [{"sub_question": f"step {i}?", "sub_answer": f"answer {i}"} for i in range(3)]
    before = len(ws.resources.llm.prompts)
    rows = label_prefixes(ws, final_steps(load_template("corag_fixed")), chain, q, "test", match)
    assert [r.prefix for r in rows] == [1, 2, 3]
    prompts = ws.resources.llm.prompts[before:]
    assert len(prompts) == 3                                  # one final answer per prefix
    assert "step 2?" in prompts[2] and "step 2?" not in prompts[1]   # each sees its own prefix
