"""The reliability card: confusion matrix, kappa and its interval, the true-positive and
true-negative rates, pairwise flips, and the words that say whether to trust a judge; in
`flowkit judge`'s output and on the Compare page's judges panel."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from flowkit.eval.reliability import MIN_LABELS, reliability_card
from flowkit.testing import FakeLLM
from service.grading import scores
from studio.compare import judges_data


def _pairs(tp: int, fn: int, fp: int, tn: int) -> list[tuple[float, float]]:
    """(verdict, label) pairs: tp yes/yes, fn no/yes, fp yes/no, tn no/no."""
    return [(1.0, 1.0)] * tp + [(0.0, 1.0)] * fn + [(1.0, 0.0)] * fp + [(0.0, 0.0)] * tn


def test_kappa_and_rates_by_hand():
    card = reliability_card(_pairs(8, 2, 3, 7), judge="correctness", model="m")
    # p_o = 15/20; p_e = (10 * 11 + 10 * 9) / 400 = 0.5; kappa = (0.75 - 0.5) / 0.5
    assert card.confusion == ((8, 2), (3, 7)) and card.labels == 20
    assert card.agreement == pytest.approx(0.75) and card.kappa == pytest.approx(0.5)
    half = 1.959964 * math.sqrt(0.75 * 0.25 / 20) / 0.5
    assert (card.kappa_low, card.kappa_high) == pytest.approx((0.5 - half, 0.5 + half))
    assert card.true_positive_rate == pytest.approx(0.8)
    assert card.true_negative_rate == pytest.approx(0.7)
    lines = card.lines()
    assert lines[1].startswith("kappa 0.50 [0.12, 0.88]; agrees on 75% of 20 labelled")
    assert "labelled yes: judge yes 8, judge no 2; labelled no: judge yes 3, judge no 7" in lines[1]
    assert lines[2] == "says yes to 80% of what you labelled yes and no to 70% of what you " \
        "labelled no"
    # kappa 0.5 but its interval is wide: the words follow the point and the interval
    assert "no better than chance" not in card.advice()


def test_the_words_say_when_to_rely_on_the_labels():
    rng = np.random.default_rng(3)
    truth = rng.random(60) < 0.5
    coin = rng.random(60) < 0.5                          # a judge without signal
    card = reliability_card(list(zip(coin.astype(float), truth.astype(float))), judge="j",
                            model="m")
    assert card.advice() == ("this judge agrees with your labels no better than chance: rely "
                             "on the labels")
    good = np.where(rng.random(60) < 0.9, truth, ~truth)   # right 90% of the time
    card = reliability_card(list(zip(good.astype(float), truth.astype(float))), judge="j",
                            model="m")
    assert card.kappa > 0.6 and "substantially" in card.advice()
    # a judge that always says yes: kappa 0 whatever the labels
    card = reliability_card(_pairs(10, 0, 10, 0), judge="j", model="m")
    assert card.kappa == pytest.approx(0.0) and "no better than chance" in card.advice()
    # too few labels; all in one category; a reply that said neither is counted apart
    few = reliability_card(_pairs(3, 1, 1, 3), judge="j", model="m")
    assert few.labels < MIN_LABELS and "too few to tell" in few.advice()
    same = reliability_card(_pairs(12, 0, 0, 0), judge="j", model="m")
    assert math.isnan(same.kappa) and "cannot be told from chance" in same.advice()
    unparsed = reliability_card([*_pairs(6, 0, 0, 6), (0.5, 1.0), (0.5, 0.0)], judge="j",
                                model="m")
    assert unparsed.labels == 12 and unparsed.unparsed == 2 and unparsed.kappa == 1.0
    assert "2 labelled verdicts said neither" in " ".join(unparsed.lines())


def test_a_pairwise_card_has_three_categories_and_the_flips():
    pairs = [(1.0, 1.0)] * 5 + [(0.5, 0.5)] * 3 + [(0.0, 0.0)] * 4 + [(0.5, 1.0)] * 2
    card = reliability_card(pairs, judge="pairwise a vs b", model="m",
                            categories=("a better", "tie", "b better"), asked=11, flips=4)
    assert card.confusion == ((5, 2, 0), (0, 3, 0), (0, 0, 4))
    assert card.true_positive_rate is None and card.kappa > 0.6
    assert card.flip_share == pytest.approx(4 / 11)
    assert card.lines()[-1] == ("36% of its verdicts flip when A and B swap places (4 of 11) "
                                "(a strong position bias)")


def test_the_card_in_judge_output_and_on_the_compare_page(world, fk, tmp_path):
    code, _, err = fk("eval", "--flow", str(world.good), "--flow", str(world.vague),
                      "--dataset", str(world.dataset), "--kb", "test", "--out",
                      str(tmp_path / "r.json"))
    assert code == 0, err
    eval_id = json.loads((tmp_path / "r.json").read_text())["eval_id"]
    world.ws.resources.set_llm(FakeLLM([(r"Same:$", "yes")], default="no"))   # always yes
    for flow, value in (("good", "1"), ("vague", "0")):
        for qid in ("q1", "q2", "q3", "q4", "q5", "q6"):
            fk("label", eval_id, "--flow", flow, "--question", qid, "--value", value)
    code, out, err = fk("judge", eval_id, "--judge", "correctness")
    assert code == 0, err
    assert "reliability of correctness on default:" in out
    assert "agrees with your labels no better than chance: rely on the labels" in out, out
    assert "says yes to 100% of what you labelled yes and no to 0% of what you labelled no" in out
    code, out, _ = fk("judge", eval_id, "--judge", "correctness", "--json")
    card = json.loads(out)[0]["reliability"]
    assert card["labels"] == 12 and card["confusion"] == [[6, 0], [6, 0]]
    rep = scores(world.ws, eval_id, "correctness")
    line = judges_data.card_line(rep)
    assert line.startswith("reliability of correctness on ") and "rely on the labels" in line


def test_examples_in_reverse_order_and_the_item_kept_whole():
    from flowkit.eval import graders as G
    from flowkit.eval.reliability import reorder_examples
    answer = "Tessel\n\nSame: yes"                   # an answer that looks like an example
    prompt = G.fill(G.CORRECTNESS, question="Where?", reference="Tessel", answer=answer)
    again = reorder_examples(prompt)
    assert again != prompt and sorted(again.split("\n\n")) == sorted(prompt.split("\n\n"))
    assert again.index("Tomas Vale\nSame: no") < again.index("1931\nSame: yes")
    assert again.endswith(f"Proposed: {answer}\nSame:")
    assert reorder_examples("Decide.\n\nQ: x\nSame: yes\n\nQ: y\nSame:") == \
        "Decide.\n\nQ: x\nSame: yes\n\nQ: y\nSame:"               # one example: unchanged


def _last_example(prompt: str) -> str:
    """A judge swayed by order: it repeats the verdict of the last worked example it read."""
    return re.findall(r"Same: (yes|no)\n\n", prompt)[-1]


def test_spread_on_the_card(world, fk, tmp_path):
    code, _, err = fk("eval", "--flow", str(world.good), "--dataset", str(world.dataset),
                      "--kb", "test", "--limit", "4", "--out", str(tmp_path / "r.json"))
    assert code == 0, err
    eval_id = json.loads((tmp_path / "r.json").read_text())["eval_id"]
    world.ws.resources.set_llm(FakeLLM([(r"Same:$", _last_example)], default="no"))
    code, out, err = fk("judge", eval_id, "--judge", "correctness", "--spread", "3")
    assert code == 0, err
    assert "asked again with its examples in reverse order, it changed 3 of 3 verdicts " \
        "(100%)" in out, out
    world.ws.resources.set_llm(FakeLLM([(r"Same:$", "yes")], default="no"))
    code, out, err = fk("judge", eval_id, "--criterion", "the answer is short", "--spread", "3",
                        "--json")
    card = json.loads(out)[0]["reliability"]
    assert (card["spread_asked"], card["spread_changed"]) == (3, 0)
