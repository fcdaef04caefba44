"""The pairwise judge with the real default model: the eval tests' small corpus in memory, its
two flows ('good' and 'vague', BM25 and different prompts) on three questions, then the judge. It
asks in both orders and counts what holds on any CPU (every question a win, a loss or a tie; flips
among the questions asked; two calls a question whose answers differ); grading again asks
nothing."""
from __future__ import annotations

import pytest
from conftest import CORPUS, write_world

from flowkit.eval.criteria import criterion
from flowkit.eval.datasets import from_path
from flowkit.eval.pairwise import win_lines
from flowkit.eval.runner import make_plan, resolve_flows, run_evaluation
from flowkit.testing import MemoryKB
from service.grading import grade, scores
from service.pairwise import grade_pairwise, win
from service.workspace import Workspace
from storage.evals import EvalRepo

pytestmark = pytest.mark.real


def test_pairwise_with_the_real_default_model(tmp_path):
    dataset, good, vague = write_world(tmp_path / "files")
    ws = Workspace(tmp_path / "home")
    try:
        ws.resources._kbs["test"] = MemoryKB("test", CORPUS)
        repo = EvalRepo(ws.store)
        ds = from_path(dataset)
        repo.save_dataset(ds.name, ds.source, ds.questions)
        plan = make_plan(resolve_flows(ws, [str(good), str(vague)]), ds.name, ds.questions,
                         "test", limit=3)
        assert run_evaluation(ws, repo, plan).statuses == {"ok": 6}
        first = grade_pairwise(ws, plan.eval_id, "good", "vague")
        again = grade_pairwise(ws, plan.eval_id, "good", "vague")
        rate = win(ws, plan.eval_id, "good", "vague")
        person = criterion("the answer names a person")
        own = grade(ws, plan.eval_id, [], criteria=[person])
        own_scores = scores(ws, plan.eval_id, person.name)
    finally:
        ws.close()
    assert (again.graded, again.reused, again.cost.calls) == (0, 3, 0)
    assert rate.wins + rate.ties + rate.losses == 3 and not rate.corrected
    alike = 3 - rate.asked - rate.unparsed
    assert alike >= 0 and 0 <= rate.flips <= rate.asked and rate.same_place <= rate.flips
    assert first.cost.calls == 2 * (3 - alike) and first.cost.cached == 0
    assert 0.0 <= rate.estimate.mean <= 1.0
    print(first.line(), *win_lines(rate), sep="\n")
    # a criterion of your own on the same answers: a verdict on each, at most one call each
    assert own.graded == 6 and own.cost.calls <= 6
    assert all(0.0 <= f.raw_mean <= 1.0 for f in own_scores.flows) and own_scores.card
    print(own.line(), *own_scores.card.lines(), sep="\n")
