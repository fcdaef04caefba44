"""`flowkit search --objective JUDGE` on the scripted world (issue 37): the race drops on the
judge's score where F1 ranks the other way, a judge that needs reference answers is refused on a
set without them before anything is written, a resumed search keeps its objective and refuses
another, and the judge's calls never count in a candidate's cost."""
from __future__ import annotations

import json
import re

import pytest

from flowkit.errors import FlowkitError
from flowkit.search.objective import Objective, check_name
from flowkit.search.state import SearchState
from flowkit.testing import FakeLLM
from service import search
from service.evaluations import eval_repo
from service.grading import grade_repo

from .conftest import PLAIN, QUESTIONS, VAGUE, answer_for, make_workspace
from .test_race import prompt_of, request

ABSTAIN = "I do not know"


def judge(prompt: str) -> str:
    """A groundedness judge that takes only an abstention as stated: it prefers the flow that
    answers nothing, which F1 ranks last."""
    answer = re.findall(r"Answer: (.*?)\nStated:", prompt, flags=re.S)[-1].strip()
    return "yes" if answer == ABSTAIN else "no"


def judging_llm() -> FakeLLM:
    """The world's reader (answers from the passages under the plain prompt, abstains under the
    vague one) with the judge's rule first (its prompt also holds 'Question: ... Answer:')."""
    return FakeLLM([(r"Stated:\s*$", judge), (r"Question: .*\nAnswer:", answer_for)],
                   default=ABSTAIN)


def judged(world, **over):
    world.ws.resources.set_llm(judging_llm())
    return request(world, objective="groundedness", **over)


def test_the_race_drops_on_the_judge_score_where_f1_ranks_the_other_way(world):
    # F1, in a workspace of its own: the vague prompt (which abstains) is dropped
    home = make_workspace(world.root / "f1-home")
    home.resources.set_llm(judging_llm())
    by_f1 = search.run(home, search.prepare(home, request(world)))
    assert {prompt_of(e) for e in by_f1.entries if e.status == "dropped"} == {VAGUE}
    # the judge prefers the abstention: the race on its score drops the plain prompt instead
    st = search.run(world.ws, search.prepare(world.ws, judged(world)))
    assert (st.phase, st.objective) == ("done", "groundedness")
    assert st.judge_label.startswith("default:")
    dropped = [e for e in st.entries if e.status == "dropped"]
    kept = [e for e in st.entries if e.status == "kept"]
    assert {prompt_of(e) for e in dropped} == {PLAIN} and len(dropped) == 2
    assert {prompt_of(e) for e in kept} == {VAGUE} and kept
    for e in dropped:
        assert "after 3 questions: groundedness -100.0 [-100.0, -100.0]" in e.reason, e.reason
    assert all(e.score == 1.0 for e in kept)           # the judge's mean, not F1 (which is 0)
    # the verdicts are stored with each candidate's evaluation, named by the judge model
    grades = grade_repo(world.ws).grades(kept[0].search_runs.eval_id, grader="groundedness")
    assert len(grades) == 6 and {g.score for g in grades} == {1.0}
    # confirmed on the judge too: the best hand-written flow (plain, the reference) scores 0
    assert st.confirm["c00"].vs == "c00" and st.confirm["c00"].score == 0.0
    assert all(st.confirm[e.cid].score == 1.0 for e in kept if e.cid in st.confirm)


def test_correctness_on_a_set_without_answers_is_refused_and_nothing_is_written(world):
    bare = world.root / "files" / "bare"
    bare.mkdir()
    (bare / "questions.jsonl").write_text("".join(
        json.dumps({k: v for k, v in q.items() if k != "answers"}) + "\n" for q in QUESTIONS))
    (bare / "corpus.jsonl").write_text((world.dataset / "corpus.jsonl").read_text())
    req = search.SearchRequest(str(world.space), str(bare), "test", "4-9", "1-3", 1000,
                               first_batch=3, objective="correctness")
    with pytest.raises(FlowkitError) as got:
        search.prepare(world.ws, req)
    msg = str(got.value)
    assert "--objective correctness" in msg and "'bare'" in msg and "9 of the 9" in msg, msg
    assert not list(world.space.parent.glob("space.search-*.json"))
    assert eval_repo(world.ws).list_evals() == []
    # a judge that needs no reference is taken on the same set
    req.objective = "groundedness"
    assert search.prepare(world.ws, req).state.objective == "groundedness"


def test_an_unknown_objective_is_refused_naming_the_choices(world):
    with pytest.raises(FlowkitError, match=r"--objective: unknown objective 'bleu'; use one of "
                                           r"f1, em, acc, correctness, groundedness"):
        search.prepare(world.ws, request(world, objective="bleu"))
    with pytest.raises(FlowkitError, match="unknown objective"):
        check_name("F1")


def test_a_resumed_search_keeps_its_objective_and_refuses_another(world):
    plan = search.prepare(world.ws, judged(world))
    search.run(world.ws, plan)
    again = search.prepare(world.ws, judged(world))
    assert again.resumed and again.state.objective == "groundedness"
    assert "objective groundedness (judge: default:" in search.estimate(again).describe()
    stored = json.loads(plan.state_file.read_text())
    assert stored["objective"] == "groundedness" and stored["judge_label"].startswith("default:")
    for other in ("f1", "answer_relevance"):
        with pytest.raises(FlowkitError) as got:
            search.prepare(world.ws, request(world, objective=other))
        msg = str(got.value)
        assert (f"was started with --objective groundedness and cannot resume with --objective "
                f"{other}") in msg and str(plan.state_file) in msg, msg
    # a state written before objectives existed resumes as F1
    assert SearchState.from_dict({"search_id": "x"}).quality() == Objective("f1")


def test_judge_calls_never_count_in_a_candidates_cost(world):
    home = make_workspace(world.root / "f1-home")
    home.resources.set_llm(judging_llm())
    by_f1 = search.run(home, search.prepare(home, request(world)))
    llm = judging_llm()
    world.ws.resources.set_llm(llm)
    st = search.run(world.ws, search.prepare(world.ws, request(world, objective="groundedness")))
    b = st.budget
    judge_prompts = sum(1 for p in llm.prompts if re.search(r"Stated:\s*$", p))
    flow_prompts = len(llm.prompts) - judge_prompts
    assert b.judge.calls > 0 and b.judge.calls - b.judge.cached == judge_prompts
    assert b.spent_calls + b.confirm_calls == flow_prompts          # the budget: the flows' own
    # one model call per question (the answer node), as without the judge
    assert all(e.calls_per_q == 1.0 for e in st.entries if e.reached)
    # the hand-written flow's confirmation costs the same tokens whatever the objective
    assert st.confirm["c00"].tokens == by_f1.confirm["c00"].tokens > 0
    assert by_f1.budget.judge.calls == 0


def test_the_objective_is_a_function_of_one_answer(world):
    from flowkit.eval.metrics import score
    q = QUESTIONS[0]
    r = [score("c00", q, "it was Mara Velt"), score("c00", QUESTIONS[1], "")]
    f1 = [x.f1 for x in r]
    assert list(map(Objective("f1").metric(), r)) == [r[0].f1, 0.0] and 0 < r[0].f1 < 1
    assert list(map(Objective("em").metric(), r)) == [0.0, 0.0]
    assert list(map(Objective("acc").metric(), r)) == [1.0, 0.0]
    judged = Objective("groundedness").metric({("c00", "q0"): 0.5})
    assert list(map(judged, r)) == [0.5, 0.0] and judged.name == "groundedness"
    assert [x.f1 for x in r] == f1                       # a result's f1 stays F1
    assert Objective("groundedness", "", "default:g").label() == "groundedness (judge: default:g)"
    assert Objective("f1").label() == "F1"


def test_search_command_names_the_judge_objective(world, fk):
    world.ws.resources.set_llm(judging_llm())
    args = ["search", str(world.space), "--dataset", str(world.dataset), "--kb", "test",
            "--search-questions", "4-9", "--confirm-questions", "1-3", "--budget-calls", "500",
            "--first-batch", "3", "--objective", "groundedness"]
    code, out, err = fk(*args, "--estimate")
    assert code == 0, err
    assert re.search(r"objective groundedness \(judge: default:[^)]+\), about 24 judge calls if "
                     r"none were dropped plus about \d+ to confirm", err), err
    code, out, err = fk(*args)
    assert code == 0, err
    assert re.search(r"^judge calls \(groundedness \(judge: default:.*\)\): [1-9]\d* ", err, re.M)
    assert "search groundedness" in out and "confirm groundedness" in out and "search F1" not in out
    assert re.search(r"^why c0\d \(dropped\): after 3 questions: groundedness -100\.0", out, re.M)
    assert re.search(r"front c0\d \(good · .*\): search groundedness \(judge: default:.*\) 100\.0 "
                     r"on 6, \d+ tokens/q; confirm groundedness \(judge: .*\) 100\.0 on 3", out), out
    code, _, err = fk(*args[:-1], "f1", "--estimate")
    assert code == 2 and "cannot resume with --objective f1" in err, err
    code, _, err = fk(*args[:-1], "bleu", "--estimate")
    assert code == 2 and "invalid choice: 'bleu'" in err, err


def test_a_judge_on_another_model_is_loaded_once_for_the_whole_search(world, monkeypatch):
    """A judge model other than the workspace's used to be loaded again for every batch's
    grading (grading.grade made and closed its own ModelWorkspaces); the search's own set of
    model workspaces now keeps it loaded until the search ends."""
    from service import grading, modelchoice
    made: list[str] = []
    closed: list[int] = []
    real_get = modelchoice.ModelWorkspaces.get

    def get(self, model):
        if model in ("", modelchoice.DEFAULT):
            return real_get(self, model)
        if model not in self._made:
            made.append(model)
            self._made[model] = self.ws        # the judge runs on the scripted workspace
        return self._made[model]

    monkeypatch.setattr(modelchoice.ModelWorkspaces, "get", get)
    monkeypatch.setattr(modelchoice.ModelWorkspaces, "close",
                        lambda self: (closed.append(len(self._made)), self._made.clear()))
    monkeypatch.setattr(grading, "check", lambda graders, model: None)
    monkeypatch.setattr(grading, "check_model", lambda model: None)   # grade() checks it alone
    world.ws.resources.set_llm(judging_llm())
    req = request(world, objective="groundedness", judge_model="other.gguf")
    st = search.run(world.ws, search.prepare(world.ws, req))
    assert st.phase == "done"
    assert made == ["other.gguf"]              # loaded once, over every batch and confirmation
    assert closed and closed[-1] == 1          # and closed with the search
