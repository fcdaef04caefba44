"""Replay page logic: which step is shown, the per-step chart data, and the fork form's checks.

A replay never calls the model: everything comes from the stored steps. The shown step lives in
session state under ReplayKeys.STEP (the slider's key; the buttons change it in callbacks, before
the slider is drawn, so slider and buttons always agree) and in the address as ?step=N.
"""
from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import pandas as pd
from pydantic import ValidationError as PydanticValidationError

from flowkit import registry
from flowkit.errors import SpecError
from flowkit.memory import OPERATOR_KEYS
from flowkit.memory_edit import parse_edit
from flowkit.nodes import FINISH
from flowkit.spec import read_document
from flowkit.trace import StepEvent
from service.debug import EditError, check_value
from studio.common.state import ReplayKeys

K = ReplayKeys
STEP_KEY = K.STEP       # the slider's key


def clamp(value: int, n_steps: int) -> int:
    return max(0, min(int(value), max(n_steps - 1, 0)))


def sync(run_id: str, n_steps: int, requested: str | None,
         state: MutableMapping[str, Any] | None = None) -> int:
    """The step to show: `requested` (?step=) when the run changed, else the current one, kept in
    range as the run grows. Call before the step widgets are drawn."""
    if K.RUN.get(state=state) != run_id:
        K.RUN.set(run_id, state)
        try:
            K.STEP.set(clamp(int(requested or 0), n_steps), state)
        except ValueError:
            K.STEP.set(0, state)
    else:
        K.STEP.set(clamp(K.STEP.get(0, state) or 0, n_steps), state)
    return int(K.STEP.get(0, state) or 0)


def open_run(query: MutableMapping[str, Any], run_id: str, step: int | None = 0,
             state: MutableMapping[str, Any] | None = None) -> None:
    """Show another run (a parent or a fork) on this page: in the address and in the picker.

    Used instead of st.page_link, which, pointing at the page it is on, shows the new run
    without updating the browser's address (a refresh would go back)."""
    query["run"] = run_id
    query["step"] = str(step or 0)
    if "fork" in query:
        del query["fork"]
    K.PICK.set(run_id, state)
    K.RUN.pop(state)      # sync() then starts the new run at ?step=


def go(target: str, n_steps: int, state: MutableMapping[str, Any] | None = None) -> None:
    """Button callback: target is first | prev | next | last."""
    cur = int(K.STEP.get(0, state) or 0)
    new = {"first": 0, "prev": cur - 1, "next": cur + 1, "last": n_steps - 1}[target]
    K.STEP.set(clamp(new, n_steps), state)


def chart_data(steps: list[StepEvent], current: int,
               offset: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two frames (tokens, ms) indexed by step label, the current step in its own column.
    `offset`: where a fork's numbering starts (its parent's step it forked from)."""
    width = len(str(max(len(steps) - 1 + offset, 0)))
    labels = [f"{s.index + offset:0{width}d} {s.node_id}" for s in steps]

    def frame(values: list[float], unit: str) -> pd.DataFrame:
        return pd.DataFrame({
            "step": labels,
            f"{unit} (this step)": [v if i == current else 0 for i, v in enumerate(values)],
            f"{unit} (other steps)": [0 if i == current else v for i, v in enumerate(values)],
        })
    return frame([s.tokens for s in steps], "tokens"), frame([round(s.ms) for s in steps], "ms")


def forkable(step: StepEvent, spec: dict[str, Any]) -> str | None:
    """None when a run can be forked from this step, else why not."""
    if step.node_id == FINISH:
        return "the finishing step is the engine's own; fork from a node of the flow"
    if step.branch:
        return ("this step ran inside a parallel branch; fork from the node before the fan-out "
                "or from the merge")
    if step.node_id not in {n["id"] for n in spec.get("nodes", [])}:
        return f"node '{step.node_id}' is not in the run's flow"
    return None


def node_params(spec: dict[str, Any], node_id: str) -> tuple[str, dict[str, Any]]:
    """(operator key, params) of a node of the run's resolved spec."""
    for n in spec.get("nodes", []):
        if n["id"] == node_id:
            return n["operator"], dict(n.get("params") or {})
    raise KeyError(node_id)


def parse_memory_change(key: str, text: str) -> dict[str, Any]:
    """{key: value} from the form, read by the bounded reader (`flowkit.memory_edit.parse_edit`: size,
    list length, depth, finite numbers, valid text) and checked against the key's type
    (`service.debug.check_value`); raises ValueError with one line fit for the page, naming the
    code and the field."""
    if key not in OPERATOR_KEYS:
        raise ValueError(f"'{key}' is not a working-memory key ({', '.join(OPERATOR_KEYS)})")
    try:
        value = parse_edit(key, text)
    except SpecError as err:
        detail = err.detail
        if err.code == "bad_json":
            detail = (f"the new value is not JSON ({detail.removeprefix('not valid JSON ')}); "
                      "write strings in double quotes")
        raise ValueError(f"[{err.code}] {err.field}: {detail}") from None
    if key == "question" and (not isinstance(value, str) or not value.strip()):
        raise ValueError("the question must be a non-empty JSON string")
    try:
        check_value(key, value)
    except EditError as err:
        raise ValueError(f"[wrong_type] {err}") from None
    return {key: value}


def parse_param_changes(operator: str, current: dict[str, Any], text: str) -> dict[str, Any]:
    """The params that differ from `current`, read within a flow file's bounds (depth, finite
    numbers, valid text) and checked against the operator's Params."""
    try:
        data = read_document(text, "the params")
    except SpecError as err:
        where = f" {err.field}:" if err.field else ""
        raise ValueError(f"[{err.code}] the params are not usable JSON:{where} {err.detail}") from None
    if not isinstance(data, dict):
        raise ValueError("the params must be a JSON object")
    changes = {k: v for k, v in data.items() if current.get(k, object()) != v}
    cls = registry.get(operator)
    if cls is not None:
        try:
            cls.Params.model_validate({**current, **data})
        except PydanticValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(x) for x in first["loc"])
            raise ValueError(f"param {where}: {first['msg']}") from None
    return changes


def memory_text(value: Any) -> str:
    """A memory value as the JSON the fork form starts from."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def _node_reads(node: dict[str, Any]) -> tuple[str, ...]:
    """The memory keys a node of a resolved spec reads, as its operator says for its params
    (`Operator.active_reads`)."""
    cls = registry.get(str(node.get("operator")))
    if cls is None:
        return ()
    try:
        params = cls.Params.model_validate(node.get("params") or {})
    except ValueError:         # params the run could not have used: assume every read
        return tuple(dict.fromkeys((*cls.reads, *cls.optional_reads)))
    return cls.active_reads(params)


def reads_ahead(spec: dict[str, Any], node_id: str) -> dict[str, list[str]]:
    """For each working-memory key, the nodes a fork from `node_id` can still run (that node and
    every node reachable from it) which read the key. A key missing here is read by none of them:
    changing it before the fork changes nothing."""
    succ: dict[str, list[str]] = {}
    for e in spec.get("edges", []):
        succ.setdefault(str(e["source"]), []).append(str(e["target"]))
    seen, todo = [node_id], [node_id]
    while todo:
        for nxt in succ.get(todo.pop(), []):
            if nxt not in seen:
                seen.append(nxt)
                todo.append(nxt)
    nodes = {str(n["id"]): n for n in spec.get("nodes", [])}
    out: dict[str, list[str]] = {}
    for nid in seen:
        for key in _node_reads(nodes.get(nid, {})):
            out.setdefault(key, []).append(nid)
    return out


def short_value(value: Any, limit: int = 120) -> str:
    """A value on one line for a header: its JSON, cut to `limit` characters (… marks the cut)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def step_position(n_steps: int, offset: int = 0) -> str:
    """The run's step numbers in words, under the header 'Step i of n'. One numbering everywhere
    (header, slider, charts, fork banner): steps along the path the run took, from 0, as "from
    step k" numbers a fork point; a fork from step k starts at step k, after the parent's steps
    0..k-1 (only the address's ?step= counts a fork's own steps from 0)."""
    last = offset + n_steps - 1
    if not offset:
        return f"Steps 0–{last} along the path the run took."
    return (f"This fork's own steps are {offset}–{last}; steps 0–{offset - 1} are the parent's, "
            "before the fork point (blue on the graph).")


def step_label(idx: int, offset: int = 0) -> str:
    """The number the page shows for the run's stored step `idx` (a fork's start at `offset`)."""
    return str(offset + idx)
