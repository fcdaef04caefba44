"""The pairwise judge: replies parsed, both orders asked, a side only when they agree, position
flips counted, a win-rate interval that holds with a judge right 80% of the time (a seeded
simulation), and `flowkit judge EVAL --pairwise A,B` with pairwise labels on the fake world."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from flowkit.eval.graders import Item
from flowkit.eval.pairwise import (
    A_BETTER,
    B_BETTER,
    NO_REPLY,
    TIE,
    PairVerdict,
    is_pairwise,
    pair_grader,
    pairwise,
    parse_choice,
    win_lines,
    win_rate,
)
from flowkit.testing import FakeLLM
from service.pairwise import card, graded_pairs, parse_pair, win
from studio.compare import judges_data

_SHOWN = re.compile(r"Answer 1: (.*)\nAnswer 2: (.*)\nBetter:$")


@pytest.mark.parametrize("reply,want", [
    ("1", 1), (" 2\nmore", 2), ("same", 0), ("Equal.", 0), ("Answer 1", 1), ("answer 2 is", 2),
    ("first", 1), ("tie", 0), ("", None), ("\n\n", None), ("Mara Velt", None), ("3", None),
    ("12", None), ("The first", None)])
def test_a_reply_is_read_as_the_first_answer_the_second_or_the_same(reply, want):
    assert parse_choice(reply) == want


def _item(answer: str) -> Item:
    return Item("Who designed the Corren Lighthouse?", answer, ("Mara Velt",))


def test_both_orders_are_asked_and_a_side_counts_only_when_they_agree():
    asked: list[str] = []

    def first_always(prompt: str) -> str:       # picks whatever it reads first
        asked.append(prompt)
        return "1"

    v = pairwise(_item("Mara Velt"), _item("Jorun Abbe"), first_always)
    assert len(asked) == 2 and "Reference: Mara Velt" in asked[0]
    assert _SHOWN.search(asked[0]).groups() == ("Mara Velt", "Jorun Abbe")
    assert _SHOWN.search(asked[1]).groups() == ("Jorun Abbe", "Mara Velt")
    assert v.orders == (A_BETTER, B_BETTER) and v.score == TIE
    assert v.flipped and v.same_place and v.parsed

    def right(prompt: str) -> str:              # names Mara Velt's place, whichever it is
        one, _ = _SHOWN.search(prompt).groups()
        return "1" if one == "Mara Velt" else "2"

    v = pairwise(_item("Mara Velt"), _item("Jorun Abbe"), right)
    assert v.score == A_BETTER and v.orders == (A_BETTER, A_BETTER) and not v.flipped
    v = pairwise(_item("Jorun Abbe"), _item("Mara Velt"), right)
    assert v.score == B_BETTER and not v.flipped
    # one order a tie: a tie, and it changed with the order (a flip, not the same place)
    replies = iter(["1", "same"])
    v = pairwise(_item("Mara Velt"), _item("Jorun Abbe"), lambda p: next(replies))
    assert v.score == TIE and v.flipped and not v.same_place
    # a reply that names neither: a tie, unparsed, not counted as a flip
    replies = iter(["1", "Mara Velt"])
    v = pairwise(_item("Mara Velt"), _item("Jorun Abbe"), lambda p: next(replies))
    assert v.score == TIE and v.orders == (A_BETTER, NO_REPLY) and not v.parsed
    assert not v.flipped
    # the same answer once normalised: a tie without a call
    asked.clear()
    v = pairwise(_item("Mara Velt."), _item("mara velt"), first_always)
    assert v.score == TIE and not asked and not v.asked
    # an answer is data: placeholders in it stay as written
    asked.clear()
    pairwise(_item("{second} {reference}"), _item("Jorun Abbe"), first_always)
    assert _SHOWN.search(asked[0]).groups() == ("{second} {reference}", "Jorun Abbe")
    # no reference answer: the prompt has none
    pairwise(Item("Q?", "x"), Item("Q?", "y"), first_always)
    assert "Reference:" not in asked[-1].rsplit("\n\n", 1)[1]


def test_flips_and_counts_in_the_win_rate():
    vs = {"q1": PairVerdict(A_BETTER, (A_BETTER, A_BETTER)),
          "q2": PairVerdict(TIE, (A_BETTER, B_BETTER)),
          "q3": PairVerdict(TIE, (B_BETTER, A_BETTER)),
          "q4": PairVerdict(TIE, (TIE, B_BETTER)),
          "q5": PairVerdict(TIE, (NO_REPLY, A_BETTER)),
          "q6": PairVerdict(TIE, ()),
          "q7": PairVerdict(B_BETTER, (B_BETTER, B_BETTER))}
    w = win_rate(vs, {}, a="good", b="vague", model="m")
    assert (w.wins, w.ties, w.losses) == (1, 5, 1)
    assert (w.asked, w.flips, w.same_place, w.unparsed) == (5, 3, 2, 1)
    assert w.flip_share == pytest.approx(0.6)
    assert not w.corrected and w.estimate.mean == pytest.approx(0.5)
    lines = win_lines(w)
    assert "uncorrected" in lines[0] and "win rate of good over vague" in lines[0]
    assert "3 of 5 (60%) verdicts asked in both orders changed" in lines[2]
    assert lines[3] == "1 question answered alike: a tie without a call"
    # labels on three questions: PPI++, the labels counted
    w = win_rate(vs, {"q1": 1.0, "q2": 0.0, "q7": 0.0}, a="good", b="vague", model="m")
    assert w.corrected and w.labels == 3 and w.weight is not None
    assert "PPI++ with 3 pairwise labels" in win_lines(w)[0]


def _judge_80(rng: np.random.Generator, truth: dict[str, float]):
    """A scripted pairwise judge right 80% of the time in each order: the answers are
    '<question> a' and '<question> b', and `truth` says which is better per question."""
    def ask(prompt: str) -> str:
        one, _ = _SHOWN.search(prompt).groups()
        qid, side = one.rsplit(" ", 1)
        t = truth[qid]
        right = "same" if t == TIE else "1" if (t == A_BETTER) == (side == "a") else "2"
        if rng.random() < 0.8:
            return right
        return str(rng.choice([r for r in ("1", "2", "same") if r != right]))
    return ask


def test_the_win_rate_interval_holds_with_a_judge_right_80_percent_of_the_time():
    """300 seeded draws of 150 questions (60% A better, 10% the same, 30% B better), 30 of them
    labelled at random: the PPI++ interval holds the true win rate in >= 93% of draws (measured:
    98%), where the judge's own interval, pulled toward a tie by its mistakes, holds it in 60%."""
    rng = np.random.default_rng(51)
    held, held_raw, widths, alone = 0, 0, [], []
    draws, n_q, k = 300, 150, 30
    for _ in range(draws):
        qids = [f"q{i}" for i in range(n_q)]
        truth = dict(zip(qids, rng.choice([A_BETTER, TIE, B_BETTER], size=n_q,
                                          p=[0.6, 0.1, 0.3]).tolist()))
        ask = _judge_80(rng, truth)
        vs = {q: pairwise(Item(q, f"{q} a"), Item(q, f"{q} b"), ask) for q in qids}
        labels = {q: truth[q] for q in rng.choice(qids, size=k, replace=False).tolist()}
        w = win_rate(vs, labels, a="a", b="b", model="scripted")
        true_rate = float(np.mean(list(truth.values())))
        held += w.estimate.low <= true_rate <= w.estimate.high
        raw = win_rate(vs, {}, a="a", b="b", model="scripted").estimate
        held_raw += raw.low <= true_rate <= raw.high
        widths.append(w.estimate.high - w.estimate.low)
        alone.append(w.labels_only_width)
    coverage = held / draws
    assert coverage >= 0.93, coverage
    assert held_raw / draws < 0.8, held_raw / draws
    # a judge with signal narrows the interval below the labels' own
    assert np.mean(widths) < 0.95 * np.mean(alone), (np.mean(widths), np.mean(alone))


def test_a_pair_names_two_different_flows():
    assert pair_grader("vague") == "pairwise:vague"
    long = pair_grader("x" * 300)                 # kept within the stored name's 64 characters
    assert is_pairwise(long) and len(long) <= 64 and long != pair_grader("x" * 299)
    assert parse_pair("good, vague", ["good", "vague"]) == ("good", "vague")
    for bad, why in (("good", "name two different flows"), ("good,good", "two different"),
                     ("good,nope", "'nope' is not a flow of this evaluation (good, vague)")):
        with pytest.raises(Exception, match=re.escape(why)):
            parse_pair(bad, ["good", "vague"])


def _better(prompt: str) -> str:
    """The fake world's pairwise judge: the answer holding the reference is better; else 'same'."""
    ref = re.findall(r"Reference: (.*)\n", prompt)[-1]
    one, two = _SHOWN.search(prompt).groups()
    hit1, hit2 = ref.lower() in one.lower(), ref.lower() in two.lower()
    return "same" if hit1 == hit2 else "1" if hit1 else "2"


def test_judge_pairwise_on_a_stored_evaluation(world, fk, tmp_path):
    code, _, err = fk("eval", "--flow", str(world.good), "--flow", str(world.vague),
                      "--dataset", str(world.dataset), "--kb", "test", "--limit", "4",
                      "--out", str(tmp_path / "r.json"))
    assert code == 0, err
    eval_id = json.loads((tmp_path / "r.json").read_text())["eval_id"]
    world.ws.resources.set_llm(FakeLLM([(r"Better:$", _better)], default="no"))
    code, out, err = fk("judge", eval_id, "--pairwise", "good,vague")
    assert code == 0, err
    assert "graded 4 answers (0 already graded)" in err and "8 grader calls (0 from" in err
    assert "win rate of good over vague (ties count half)" in out and "uncorrected" in out
    assert "0 of 4 (0%) verdicts asked in both orders changed" in out, out
    code, out, err = fk("judge", eval_id, "--pairwise", "good,vague", "--json")
    assert code == 0 and "graded 0 answers (4 already graded)" in err
    first = json.loads(out)
    assert first["corrected"] is False and first["wins"] + first["ties"] + first["losses"] == 4
    assert first["flips"] == 0 and first["asked"] == 4
    # B,A: the same prompts, so every call comes from the cache; the win rate the other way round
    code, out, err = fk("judge", eval_id, "--pairwise", "vague,good", "--json")
    assert code == 0 and "8 grader calls (8 from the cache)" in err, err
    assert json.loads(out)["wins"] == first["losses"]
    # pairwise labels, one given the other way round, correct the win rate
    for pair, qid, value in (("good,vague", "q1", "a"), ("good,vague", "q2", "tie"),
                             ("vague,good", "q3", "b")):
        code, out, err = fk("label", eval_id, "--pairwise", pair, "--question", qid,
                            "--value", value)
        assert code == 0, err
    code, out, err = fk("judge", eval_id, "--pairwise", "good,vague", "--json")
    rate = json.loads(out)
    assert rate["corrected"] is True and rate["labels"] == 3, rate
    code, out, _ = fk("judge", eval_id, "--pairwise", "good,vague")
    assert "PPI++ with 3 pairwise labels" in out
    # refusals, and the single-answer judges' tables do not list the pairwise verdicts
    code, _, err = fk("label", eval_id, "--pairwise", "good,vague", "--question", "q1",
                      "--value", "1")
    assert code == 2 and "use a (A's answer is better), b, tie or clear" in err
    code, _, err = fk("judge", eval_id, "--pairwise", "good,nope")
    assert code == 2 and "'nope' is not a flow of this evaluation" in err
    code, _, err = fk("judge", eval_id)
    assert code == 2 and "--judge: name the judges" in err
    from service.grading import graded
    assert graded(world.ws, eval_id) == []
    # the Compare page's judges panel lists each graded pair in words
    pairs = graded_pairs(world.ws, eval_id)
    assert [(a, b) for a, b, _ in pairs] == [("good", "vague"), ("vague", "good")]
    a, b, model = pairs[0]
    line = judges_data.pairwise_line(win(world.ws, eval_id, a, b, model_label=model),
                                     card(world.ws, eval_id, a, b, model_label=model))
    assert line.startswith(f"pairwise judge on {model} · win rate of good over vague"), line
    assert "3 labelled verdicts: too few to tell" in line and "kappa" in line
