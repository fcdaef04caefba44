"""Metrics computed by hand: SQuAD normalisation edge cases, EM/F1/Acc, recall@k, bootstrap."""
from __future__ import annotations

import math

import numpy as np
import pytest

from flowkit.eval.metrics import (
    QuestionResult,
    accuracy,
    bootstrap_ci,
    by_type,
    disagreements,
    doc_id_of,
    exact_match,
    normalize_answer,
    paired_bootstrap,
    recall_at_k,
    retrieved_doc_ids,
    score,
    summarize,
    token_f1,
)


@pytest.mark.parametrize("raw, norm", [
    ("The Cat", "cat"),
    ("A  cat,   an apple!", "cat apple"),
    ("the", ""),
    ("Theatre of the Absurd", "theatre of absurd"),       # 'the' only as a whole word
    ("“Tessel”", "tessel"),                                # unicode quotes are punctuation
    ("Paris—France", "parisfrance"),                       # em dash removed like '-' (SQuAD)
    ("ZÜRICH", "zürich"),                                  # accents kept, lowercased
    ("1,884", "1884"),
    ("3.5 km", "35 km"),
    ("  \t\n ", ""),
    (None, ""),
    ("Cafe\u0301", "café"),                                # NFC: combining accent composed
])
def test_normalize_answer(raw, norm):
    assert normalize_answer(raw) == norm


def test_exact_match():
    assert exact_match("the Mara Velt.", ["Mara Velt"]) == 1.0
    assert exact_match("Mara", ["Mara Velt"]) == 0.0
    assert exact_match("Tessel", ["the island of Tessel", "Tessel"]) == 1.0   # max over aliases
    assert exact_match("", ["Tessel"]) == 0.0
    assert exact_match("1,884", "1884") == 1.0                                  # a single gold
    assert exact_match("anything", []) == 0.0


def test_token_f1_by_hand():
    # pred 4 tokens, gold 2, overlap 2: P = 1/2, R = 1, F1 = 2/3
    assert token_f1("Mara Velt was born", ["Mara Velt"]) == pytest.approx(2 / 3)
    # repeated tokens count once per gold occurrence: overlap 1, P = 1/2, R = 1
    assert token_f1("tessel tessel", ["Tessel"]) == pytest.approx(2 / 3)
    # articles and punctuation do not count: "island of tessel" vs gold "Tessel" -> P 1/3, R 1 = 0.5
    assert token_f1("the island of Tessel!", ["Tessel"]) == pytest.approx(0.5)
    # the best alias wins
    assert token_f1("the island of Tessel!", ["Tessel", "island of Tessel"]) == 1.0
    # P = 1/2, R = 1/3 -> 2 * (1/6) / (5/6) = 0.4
    assert token_f1("11 arches", ["eleven 11 spans"]) == pytest.approx(0.4)
    assert token_f1("twelve", ["11"]) == 0.0


def test_empty_predictions_and_golds():
    assert token_f1("", ["Tessel"]) == 0.0
    assert token_f1("the", ["Tessel"]) == 0.0           # normalises to nothing
    assert token_f1("", [""]) == 1.0                     # SQuAD 2.0: empty matches empty
    assert exact_match("", [""]) == 1.0
    assert token_f1("Tessel", []) == 0.0
    assert accuracy("", [""]) == 0.0                     # an empty gold is never "contained"


def test_accuracy_whole_words():
    assert accuracy("It was first lit in 1884.", ["1884"]) == 1.0
    assert accuracy("in 18845", ["1884"]) == 0.0
    assert accuracy("not known", ["no"]) == 0.0
    assert accuracy("No, it is not.", ["no"]) == 1.0
    assert accuracy("The island of Tessel", ["Mara", "island of Tessel"]) == 1.0
    assert accuracy("Greenwich Village in New York City", ["Greenwich Village, New York City"]) == 0.0


def test_recall_at_k_maps_chunks_to_documents():
    assert doc_id_of("hotpot-ircot-000001#3") == "hotpot-ircot-000001"
    assert doc_id_of("plain") == "plain"
    rets = [["d1#0", "d2#3", "d1#1"], ["d3#0", "d1#2"]]
    assert retrieved_doc_ids(rets) == ["d1", "d2", "d3"]
    assert retrieved_doc_ids(rets, k=1) == ["d1", "d3"]
    assert recall_at_k(rets, ["d1", "d3"], k=1) == 1.0        # top 1 of either search
    assert recall_at_k(rets, ["d2"], k=1) == 0.0
    assert recall_at_k(rets, ["d2", "d9"], k=2) == 0.5
    assert recall_at_k(rets, ["d2", "d9"]) == 0.5
    assert recall_at_k(rets, []) is None                      # no gold: not counted
    assert recall_at_k([], ["d1"]) == 0.0


def _r(flow, qid, em, f1=None, tokens=10, recall=None, typ="t", pred=None):
    return QuestionResult(flow=flow, question_id=qid, question="?", answers=["x"],
                          prediction=pred if pred is not None else ("x" if em else "y"),
                          status="ok", type=typ, em=em, f1=em if f1 is None else f1, acc=em,
                          recall=recall, tokens=tokens, llm_calls=1, seconds=0.5)


def test_score_and_summaries():
    q = {"id": "q1", "question": "Who?", "answers": ["Mara Velt"], "type": "bridge",
         "supporting_doc_ids": ["d1", "d2"]}
    r = score("naive", q, "Mara Velt was born", tokens=120, llm_calls=2, seconds=1.5,
              retrievals=[["d1#0", "d5#0"]], k=5)
    assert (r.em, r.acc, r.recall, r.type) == (0.0, 1.0, 0.5, "bridge")
    assert r.f1 == pytest.approx(2 / 3)
    rs = [_r("a", "q1", 1, recall=1.0, tokens=100, typ="bridge"),
          _r("a", "q2", 0, recall=None, tokens=300, typ="comparison"),
          _r("a", "q3", 1, recall=0.5, tokens=200, typ="bridge")]
    s = summarize("a", rs)
    assert (s.n, s.em, s.tokens, s.llm_calls, s.seconds) == (3, pytest.approx(2 / 3), 200.0, 1.0, 0.5)
    assert s.recall == 0.75                                  # over the questions with gold only
    t = by_type("a", rs)
    assert list(t) == ["bridge", "comparison"] and t["bridge"].em == 1.0 and t["comparison"].n == 1


def test_bootstrap_by_hand():
    mean, lo, hi = bootstrap_ci([1.0, 1.0, 1.0])
    assert (mean, lo, hi) == (1.0, 1.0, 1.0)
    d = [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    mean, lo, hi = bootstrap_ci(d, n_resamples=1000, seed=0)
    rng = np.random.default_rng(0)                            # the same recipe by hand
    means = np.asarray(d)[rng.integers(0, len(d), size=(1000, len(d)))].mean(axis=1)
    assert mean == 0.375
    assert (lo, hi) == (pytest.approx(np.quantile(means, 0.025)),
                        pytest.approx(np.quantile(means, 0.975)))
    assert 0.0 <= lo < mean < hi <= 1.0
    assert bootstrap_ci(d) == bootstrap_ci(d)                 # fixed seed: reproducible
    assert all(math.isnan(v) for v in bootstrap_ci([]))


def test_paired_bootstrap_pairs_by_question():
    base = [_r("base", f"q{i}", 0) for i in range(10)]
    better = [_r("new", f"q{i}", 1) for i in range(10)] + [_r("new", "extra", 1)]
    d = paired_bootstrap(better, base, "em")
    assert (d.n, d.mean, d.low, d.high, d.significant) == (10, 1.0, 1.0, 1.0, True)
    same = paired_bootstrap(base, base, "em")
    assert same.mean == 0.0 and not same.significant
    mixed = [_r("new", f"q{i}", i % 2) for i in range(10)]
    m = paired_bootstrap(mixed, base, "em")
    assert m.mean == 0.5 and 0 < m.low < 0.5 < m.high < 1 and m.significant
    none = paired_bootstrap([_r("a", "q1", 1)], [_r("b", "q1", 1)], "recall")
    assert none.n == 0 and not none.significant


def test_disagreements():
    a = [_r("a", "q1", 1), _r("a", "q2", 0, pred="Paris"), _r("a", "q3", 0, pred="x y")]
    b = [_r("b", "q1", 1), _r("b", "q2", 0, pred="the Paris!"), _r("b", "q3", 0, pred="z")]
    c = [_r("c", "q1", 0), _r("c", "q2", 0, pred="paris"), _r("c", "q3", 0, pred="X, Y")]
    assert disagreements({"a": a, "b": b}) == ["q3"]          # same EM, different answers
    assert disagreements({"a": a, "b": b, "c": c}) == ["q1", "q3"]
