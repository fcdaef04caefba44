"""The context-relevance judge before and after its prompt changed, on a fixed sample (not a test).

On a stored evaluation graded before with an older context-relevance prompt (graders-1), with the
real model: draw a fixed sample of finished answers (seeded), read their stored verdicts (before),
grade them again with the current grader (through the completion cache; stored like
`flowkit judge` stores them, so the studio shows them), and print for both: the share of answers
with at least one verdict the parser could not read, the share of passages unread, the judge's
agreement with "a gold passage" per passage and per answer (the share of shown passages that are
gold passages >= 0.5, as bench/judges.py counts it), and Cohen's kappa.

Usage: python bench/context_relevance.py --data-dir DIR --eval EVAL_ID [--sample 100]
       [--flows a,b,...] [--seed 0]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from judges import kappa

from flowkit.cost import Cost
from flowkit.eval.graders import grader_version
from flowkit.eval.grading import GradingSession, answering_step, item_for, read_passages
from flowkit.eval.metrics import doc_id_of
from service.evaluations import eval_repo, report, stored_plan
from service.grading import grade_repo, model_name
from service.modelchoice import ModelWorkspaces
from service.workspace import Workspace
from storage.grades import Grade

GRADER = "context_relevance"


def summary(name: str, rows: list[tuple[list[float], list[bool], bool]]) -> None:
    """rows: per answer (the judge's per-passage verdicts, whether each passage is gold, parsed)."""
    answers = len(rows)
    unread_answers = sum(1 for _, _, parsed in rows if not parsed)
    verdicts = [(v, g) for detail, gold, _ in rows for v, g in zip(detail, gold)]
    unread = sum(1 for v, _ in verdicts if v not in (0.0, 1.0))
    read = [(int(v), int(g)) for v, g in verdicts if v in (0.0, 1.0)]
    per_passage = sum(a == b for a, b in read) / len(read) if read else float("nan")
    judge = [int(sum(d) / len(d) >= 0.5) for d, _, _ in rows if d]
    gold = [int(sum(g) / len(g) >= 0.5) for d, g, _ in rows if d]
    agree = sum(a == b for a, b in zip(judge, gold)) / len(judge) if judge else float("nan")
    yes = sum(a for a, _ in read) / len(read) if read else float("nan")
    print(f"{name}: {unread_answers} of {answers} answers ({100 * unread_answers / answers:.1f}%) "
          f"with an unread verdict; {unread} of {len(verdicts)} passages unread; judge says yes "
          f"to {100 * yes:.0f}% of the read; per passage agreement with a gold passage "
          f"{100 * per_passage:.1f}% (kappa {kappa(*zip(*read)) if read else float('nan'):.3f}); "
          f"per answer agreement {100 * agree:.1f}% (kappa {kappa(judge, gold):.3f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--eval", required=True)
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--flows", default="", help="comma-separated; default: every flow")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ws = Workspace(a.data_dir)
    models = ModelWorkspaces(ws)
    try:
        plan = stored_plan(ws, a.eval)
        rep = report(eval_repo(ws), plan)
        want = {f for f in a.flows.split(",") if f} or set(rep.results)
        answers = sorted((f, r.question_id, r.run_id) for f, rs in rep.results.items() if f in want
                         for r in rs if r.status == "ok")
        random.Random(a.seed).shuffle(answers)
        sample = answers[: a.sample]
        questions = {str(q["id"]): q for q in plan.questions}
        gold_ids = {qid: set(q.get("supporting_doc_ids") or []) for qid, q in questions.items()}
        label = model_name(ws, "")
        repo = grade_repo(ws)
        stored = {(g.flow, g.question_id): g for g in repo.grades(a.eval, grader=GRADER,
                                                                  model=label)}
        before: list[tuple[list[float], list[bool], bool]] = []
        after: list[tuple[list[float], list[bool], bool]] = []
        session = GradingSession(models.get("").resources, ws.cache_store,
                                 run_id=f"grading-{a.eval}")
        spent = Cost()
        t0 = time.perf_counter()
        for flow, qid, run_id in sample:
            steps = ws.store.steps(run_id)
            gold = [doc_id_of(p["id"]) in gold_ids[qid] for p in read_passages(answering_step(steps))]
            old = stored.get((flow, qid))
            if old is not None and old.version != grader_version(GRADER):
                before.append((list(old.detail), gold, old.parsed))
            res = session.grade(GRADER, item_for(questions[qid], _answer(rep, flow, qid), steps))
            v = res.verdict
            repo.put_grade(Grade(a.eval, flow, qid, GRADER, label, v.score, v.reason, v.parsed,
                                 grader_version(GRADER), v.detail, res.cost))
            after.append((list(v.detail), gold, v.parsed))
            spent += res.cost
        wall = time.perf_counter() - t0
        print(f"sample: {len(sample)} of {len(answers)} answers (seed {a.seed}), flows "
              f"{', '.join(sorted(want))}; judge {label}; {spent.calls} judge calls ({spent.cached} "
              f"from the cache) in {wall:.0f} s wall")
        if before:
            summary(f"before ({len(before)} answers with an older verdict)", before)
        summary(f"after ({grader_version(GRADER)})", after)
    finally:
        models.close()
        ws.close()
    return 0


def _answer(rep: object, flow: str, qid: str) -> str:
    for r in rep.results[flow]:  # type: ignore[attr-defined]
        if r.question_id == qid:
            return str(r.prediction)
    return ""


if __name__ == "__main__":
    sys.exit(main())
