"""Question sets generated from a knowledge base: the one door the CLI and the studio both use.

`plan` checks a request against the workspace (the knowledge base exists and is ready, the name is
free, the model is known) before anything runs, and says what it will cost; `generate` runs it and
`save` stores the reviewed questions as a dataset like an imported one (listed by `flowkit dataset
list`, usable by `flowkit eval`, Compare and `flowkit search`). Model calls go through the
workspace's completion cache always, so a seed gives the same set and a killed generation resumes.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flowkit.errors import FlowkitError
from flowkit.eval.questiongen.generate import (
    Estimate,
    Generated,
    Progress,
    Request,
    check_kb,
    estimate,
    generate,
    read_passages,
)
from flowkit.names import name_problem
from storage.evals import DatasetInfo

from .evaluations import eval_repo
from .modelchoice import DEFAULT, ModelWorkspaces, model_problem
from .workspace import Workspace


@dataclass(frozen=True)
class Plan:
    """A checked request: where from, under which name, on which model, at what cost."""

    kb: str
    name: str
    request: Request
    model: str
    estimate: Estimate


def default_name(kb: str, seed: int) -> str:
    return f"{kb}-generated-s{seed}"


def plan(ws: Workspace, kb: str, request: Request, *, name: str = "", model: str = "",
         replace: bool = False) -> Plan:
    """Check everything a generation needs, all problems at once, each naming its field; nothing
    is written and no model is loaded."""
    problems = list(request.problems())
    name = name or default_name(kb or "kb", request.seed)
    why = name_problem(name)
    if why:
        problems.append(f"name: the question set name '{name if name.isprintable() else ascii(name)[1:-1]}' "
                        f"is not allowed: {why}")
    if model and model != DEFAULT:
        bad = model_problem(model)
        if bad:
            problems.append(f"model: {bad}")
    if not replace and eval_repo(ws).find_dataset(name) is not None:
        problems.append(f"name: a dataset named '{name}' exists; choose another name or replace "
                        "it")
    passages = []
    if not kb:
        problems.append("kb: name the knowledge base to generate questions from")
    elif kb not in ws.resources.kb_names():
        problems.append(f"kb: no knowledge base named '{kb}' (the Knowledge page or `flowkit kb` "
                        "lists them)")
    else:
        base = ws.resources.kb(kb)
        if not base.ready:
            problems.append(f"kb: knowledge base '{kb}' is not ready ({base.state}); ingest "
                            "documents into it first")
        else:
            passages = read_passages(base)
            if not request.problems():
                try:
                    check_kb(passages, request, kb)
                except FlowkitError as e:
                    problems.append(str(e))
    if problems:
        raise FlowkitError("; ".join(problems))
    return Plan(kb, name, request, model if model != DEFAULT else "",
                estimate(request, len(passages)))


def run(ws: Workspace, p: Plan, *, on_progress: Callable[[Progress], None] | None = None,
        should_stop: Callable[[], bool] | None = None) -> Generated:
    """Generate the planned set (nothing is stored: see `save`)."""
    models = ModelWorkspaces(ws)
    try:
        mws = models.get(p.model)
        label = p.model or "default:" + _model_label(mws)
        return generate(mws.resources, p.kb, p.request, cache=ws.cache_store, model_label=label,
                        on_progress=on_progress, should_stop=should_stop)
    finally:
        models.close()


def _model_label(ws: Workspace) -> str:
    path = getattr(ws.resources.settings.llm, "model_path", "") or ""
    return str(path).rsplit("/", 1)[-1] or "packaged"


def save(ws: Workspace, p: Plan, questions: list[dict[str, Any]], meta: dict[str, Any],
         *, replace: bool = False) -> DatasetInfo:
    """Store reviewed questions as dataset `p.name` (refused when empty, or when the name was
    taken meanwhile and `replace` is off)."""
    if not questions:
        raise FlowkitError("no questions to save: every candidate was dropped by the checks "
                           "(see the reasons) or all were deleted")
    repo = eval_repo(ws)
    if not replace and repo.find_dataset(p.name) is not None:
        raise FlowkitError(f"name: a dataset named '{p.name}' exists; choose another name")
    source = (f"generated from knowledge base '{p.kb}' (seed {meta.get('seed')}, model "
              f"{meta.get('model')}, prompts {meta.get('prompt_version')})")
    return repo.save_dataset(p.name, source, questions, kb=p.kb)
