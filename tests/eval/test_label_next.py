"""Labels where they count (flowkit/eval/label_next.py, the paired PPI++ with questions answered
alike, `flowkit label --next`): the questions two flows answered alike need no label, the rest come
in a fixed random order, and by simulation the chosen labels give a narrower interval than random
ones while it still holds."""
from __future__ import annotations

import json

import numpy as np
import pytest

from flowkit.eval.judge_scores import judge_scores
from flowkit.eval.label_next import next_labels, same_answers
from flowkit.eval.ppi_pp import DIFFERENCE, ppi_pp_mean, ppi_pp_paired


def test_answers_alike_once_normalised() -> None:
    a = {"q1": "The Tessel.", "q2": "1884", "q3": "Mara Velt", "q4": ""}
    b = {"q1": "tessel", "q2": "1885", "q3": "Mara  Velt!", "q4": "", "q5": "x"}
    assert same_answers(a, b) == {"q1", "q3", "q4"}


def test_the_order_skips_what_needs_no_label_and_stays_put_as_labels_come() -> None:
    qs = [f"q{i}" for i in range(20)]
    first = next_labels(qs, labelled=(), known={"q0", "q1"}, n=20)
    assert set(first) == set(qs) - {"q0", "q1"} and first != sorted(first)   # random, not rows
    after = next_labels(qs, labelled=first[:3], known={"q0", "q1"}, n=5)
    assert after == first[3:8]                                # the same order, less what is done
    assert next_labels(qs, labelled=(), n=5, seed=1) != next_labels(qs, labelled=(), n=5)
    assert next_labels(qs, labelled=qs, n=5) == []


def test_questions_answered_alike_count_as_a_known_difference_of_0() -> None:
    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(40)]
    t_a, t_b = rng.random(40) < 0.5, rng.random(40) < 0.3
    v_a = {q: float(x) for q, x in zip(qids, rng.random(40) < 0.7)}
    v_b = {q: float(x) for q, x in zip(qids, rng.random(40) < 0.6)}
    same = set(qids[:10])
    lab = qids[5:25]
    labels_a = {q: float(t_a[int(q[1:])]) for q in lab}
    labels_b = {q: float(t_b[int(q[1:])]) for q in lab}
    d = ppi_pp_paired(v_a, v_b, labels_a, labels_b, same_truth=same)
    rest = [q for q in qids if q not in same]
    inner = ppi_pp_mean([v_a[q] - v_b[q] for q in rest if q not in labels_a],
                        [(v_a[q] - v_b[q], labels_a[q] - labels_b[q]) for q in rest
                         if q in labels_a], truth_range=DIFFERENCE)
    share = len(rest) / len(qids)                              # 30 of 40 differ
    assert d.n == 15 and (d.mean, d.low, d.high) == pytest.approx(
        (share * inner.mean, share * inner.low, share * inner.high))
    alike = ppi_pp_paired(v_a, v_b, {}, {}, same_truth=qids)
    assert (alike.mean, alike.low, alike.high) == (0.0, 0.0, 0.0)


def test_judge_scores_use_the_questions_answered_alike() -> None:
    scores = {"base": {f"q{i}": float(i % 2) for i in range(10)},
              "other": {f"q{i}": float(i % 3 == 0) for i in range(10)}}
    labels = {"base": {"q0": 1.0, "q1": 0.0, "q2": 1.0}, "other": {"q0": 1.0, "q1": 1.0,
                                                                   "q2": 0.0}}
    same = {"other": {"q0", "q5", "q6"}}
    _, other = judge_scores(["base", "other"], scores, labels, grader="correctness", model="m",
                            same_answers=same)
    assert other.vs_corrected and other.vs_baseline == ppi_pp_paired(
        scores["other"], scores["base"], labels["other"], labels["base"], metric="correctness",
        flow="other", baseline="base", same_truth=same["other"])
    # labels only where the answers are alike: nothing to correct the rest with
    _, other = judge_scores(["base", "other"], scores, {"base": {"q0": 1.0}, "other": {"q0": 1.0}},
                            grader="correctness", model="m", same_answers=same)
    assert not other.vs_corrected


def labelled_interval(world, lab: list[str], known: set[str]):
    """The paired PPI++ interval with the questions `lab` labelled for both flows."""
    s_a, s_b, t_a, t_b = world
    return ppi_pp_paired(s_a, s_b, {q: float(t_a[q]) for q in lab},
                         {q: float(t_b[q]) for q in lab}, same_truth=known)


def test_chosen_labels_narrow_the_interval_and_it_still_holds() -> None:
    """Half the questions answered alike, a judge right 80% of the time, 30 questions labelled
    for both flows: chosen (`next_labels`) against random (read as before, and read with the
    questions answered alike known), 200 draws."""
    rng = np.random.default_rng(11)
    qids = [f"q{i:03d}" for i in range(100)]
    hits, chosen_w, random_w, random_known_w = 0, [], [], []
    for draw in range(200):
        alike = rng.random(100) < 0.5
        t_b = (rng.random(100) < 0.25).astype(float)
        t_a = np.where(alike, t_b, (rng.random(100) < 0.35).astype(float))
        v_b = np.where(rng.random(100) < 0.8, t_b, 1 - t_b)
        v_a = np.where(alike, v_b, np.where(rng.random(100) < 0.8, t_a, 1 - t_a))
        same = {q for q, a in zip(qids, alike) if a}
        world = (dict(zip(qids, v_a)), dict(zip(qids, v_b)), dict(zip(qids, t_a)),
                 dict(zip(qids, t_b)))
        chosen = labelled_interval(world, next_labels(qids, labelled=(), known=same, n=30,
                                                      seed=draw), same)
        picked = [qids[i] for i in rng.permutation(100)[:30]]
        rand = labelled_interval(world, picked, set())
        rand_known = labelled_interval(world, picked, same)   # the same estimator, random labels
        hits += chosen.low <= float((t_a - t_b).mean()) <= chosen.high
        chosen_w.append(chosen.high - chosen.low)
        random_w.append(rand.high - rand.low)
        random_known_w.append(rand_known.high - rand_known.low)
    assert hits / 200 >= 0.93
    assert np.mean(chosen_w) <= 0.85 * np.mean(random_w)
    assert np.mean(chosen_w) <= 0.85 * np.mean(random_known_w)    # the choice itself narrows it


def test_label_next_on_the_command_line(world, fk, tmp_path):
    twin = tmp_path / "twin.json"                   # the good flow again: every answer alike
    twin.write_text(json.dumps({**json.loads(world.good.read_text()), "name": "twin"}))
    code, out, err = fk("eval", "--flow", str(world.good), "--flow", str(world.vague), "--flow",
                        str(twin), "--dataset", str(world.dataset), "--kb", "test", "--limit", "4",
                        "--out", str(tmp_path / "r.json"))
    assert code == 0, err
    eval_id = json.loads((tmp_path / "r.json").read_text())["eval_id"]
    code, out, err = fk("label", eval_id, "--next", "--count", "2")
    assert code == 0, err
    assert "vague against good on correctness: 0 of 4 questions answered alike" in out, out
    assert out.count("--value 1|0") == 4                # 2 questions x both flows
    listed = [q for q in ("q1", "q2", "q3", "q4") if f"--question {q} " in out]
    assert len(listed) == 2
    for q in listed:                                    # labelled for both: not listed again
        for flow in ("good", "vague"):
            assert fk("label", eval_id, "--flow", flow, "--question", q, "--value", "1")[0] == 0
    code, out, _ = fk("label", eval_id, "--next")
    assert "2 of the other 4 labelled for both flows" in out
    assert not any(f"--question {q} " in out for q in listed) and out.count("--value 1|0") == 4
    code, out, _ = fk("label", eval_id, "--next", "--flow", "twin")
    assert "4 of 4 questions answered alike" in out and "nothing left to label" in out
    code, out, _ = fk("label", eval_id, "--next", "--flow", "good")
    assert "random order" in out and "2 of 4 answers labelled" in out
    code, _, err = fk("label", eval_id, "--next", "--flow", "nope")
    assert code == 2 and "--flow: 'nope' is not a flow" in err
    code, _, err = fk("label", eval_id, "--flow", "good")
    assert code == 2 and "--question: needed to label an answer" in err
