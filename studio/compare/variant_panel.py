"""The Compare page's variant tools (draws): add a variant of a column as a new column of the same
evaluation, and see where two columns' runs part.

A variant is a column's flow with one node's params changed (a form built from the operator's
typed params), or a saved flow or template. It is added to the open evaluation (same questions,
same knowledge base) and run in the background: the other columns' runs are kept, and with the
completion cache every model call before the changed node is served from the cache. Session keys
are prefixed "compare_variant_" and "compare_part_".
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

import streamlit as st

from flowkit import registry, templates
from flowkit.errors import FlowkitError
from flowkit.eval.runner import EvalPlan, FlowEntry
from flowkit.spec import FlowSpec
from flowkit.validate import ensure_valid
from service.evaluations import (
    PartingReport,
    add_variant_columns,
    recorded_parent,
    where_flows_part,
)
from service.flows import get_flow
from service.workspace import Workspace
from studio.common import inert
from studio.common.forms_panel import render_params
from studio.common.jobs import JobManager
from studio.common.state import CompareKeys as K
from studio.compare import compare_data as cd
from studio.compare import tasks


def variant_spec(spec: FlowSpec, node_id: str, params: dict[str, Any]) -> FlowSpec:
    """`spec` with node `node_id`'s params replaced by `params` (validated)."""
    nodes = [n.model_copy(update={"params": dict(params)}) if n.id == node_id else n
             for n in spec.nodes]
    out = spec.model_copy(update={"nodes": nodes})
    ensure_valid(out)
    return out


def variant_ref(label: str, node_id: str, params: dict[str, Any]) -> str:
    """A short, stable ref for a node-params variant: 'iter_retgen~answer.3f2a'."""
    digest = hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:4]
    return f"{label}~{node_id}.{digest}"


def add_variant_panel(ws: Workspace, jobs: JobManager, plan: EvalPlan, active: bool) -> None:
    """Pick a column and a node, change its params (or pick another flow), add it as a column."""
    with st.expander("Add a variant as a new column", expanded=False):
        if active:
            st.caption("The evaluation is running; add a variant when it has finished or been "
                       "cancelled.")
            return
        st.caption("Same questions and knowledge base; the other columns' answers are kept, and "
                   "every model call the variant shares with them comes from the completion cache.")
        labels = [f.label for f in plan.flows]
        col = st.selectbox("Variant of", labels, key=K.VARIANT_FROM)
        base = next(f for f in plan.flows if f.label == col)
        node_ids = [n.id for n in base.spec.nodes]
        node_id = st.selectbox("Change the params of node", node_ids, key=K.VARIANT_NODE)
        node = next(n for n in base.spec.nodes if n.id == node_id)
        cls = registry.get(node.operator)
        store = K.VARIANT_PARAMS.get() or {}
        K.VARIANT_PARAMS.set(store)
        slot = f"{plan.eval_id}:{col}:{node_id}"
        params = store.setdefault(slot, dict(node.params))

        def on_value(name: str, value: Any) -> None:
            if value is None:
                params.pop(name, None)
            else:
                params[name] = value

        if cls is not None:
            render_params(cls.Params.model_json_schema(), params,
                          K.VARIANT_PARAM.item(plan.eval_id, col, node_id, ""), on_value)
        others = st.multiselect("Or add saved flows / templates", cd.flow_choices(ws),
                                format_func=cd.flow_label, key=K.VARIANT_OTHERS)
        if st.button("Add and run", type="primary", key=K.VARIANT_ADD):
            try:
                entries = _entries(ws, base, node_id, params, others)
                new_plan = add_variant_columns(ws, plan.eval_id, entries)
                tasks.submit_eval(jobs, ws, new_plan)
            except FlowkitError as err:
                st.error(inert.escape(err))
            else:
                store.pop(slot, None)
                st.toast(f"Added {', '.join(e.label for e in entries)}")
                st.rerun()


def _entries(ws: Workspace, base: FlowEntry, node_id: str, params: dict[str, Any],
             others: list[cd.FlowRef]) -> list[FlowEntry]:
    node = next(n for n in base.spec.nodes if n.id == node_id)
    out: list[FlowEntry] = []
    if params != node.params:
        out.append(FlowEntry(ref=variant_ref(base.label, node_id, params),
                             spec=variant_spec(base.spec, node_id, params), parent=base.label))
    for kind, name in others:
        if kind == "saved":
            spec, version = get_flow(ws, name)
            out.append(FlowEntry(ref=name, spec=spec, version=version))
        else:
            out.append(FlowEntry(ref=name, spec=templates.load_template(name)))
    if not out:
        raise FlowkitError("change a param of the node, or pick a flow to add")
    return out


def partings_panel(ws: Workspace, plan: EvalPlan) -> None:
    """Where two columns part: per node, the questions whose runs first differ there."""
    if len(plan.flows) < 2:
        return
    st.subheader("Where two flows part")
    labels = [f.label for f in plan.flows]
    picked = K.PART_VARIANT.get()
    shown = picked if picked in labels else labels[-1]
    start = recorded_parent(plan, shown)

    def follow() -> None:           # another variant: its recorded parent becomes the parent
        made_from = recorded_parent(plan, K.PART_VARIANT.get() or "")
        if made_from:
            K.PART_PARENT.set(made_from)

    c1, c2 = st.columns(2)
    parent = c1.selectbox("Parent", labels, key=K.PART_PARENT,
                          index=labels.index(start) if start and K.PART_PARENT.get() is None
                          else 0,
                          help="The column the variant was made from, where one is recorded")
    variant = c2.selectbox("Variant", labels, index=len(labels) - 1, key=K.PART_VARIANT,
                           on_change=follow)
    if parent == variant:
        st.caption("Pick two different columns.")
        return
    try:
        rep = where_flows_part(ws, plan.eval_id, parent, variant)
    except FlowkitError as err:
        st.info(inert.escape(err), icon=":material/info:")
        return
    if not rep.partings:
        st.caption("No question has an answer from both yet.")
        return
    st.caption("Per question, the first step where the two runs ran another node or left "
               "another working memory; grouped by that node, with the paired F1 delta "
               "(variant minus parent) and its 95% interval. Click a question to see the traces.")
    st.dataframe(group_rows(rep), hide_index=True, width="stretch", key=K.PART_GROUPS)
    rows = question_rows(rep)
    st.dataframe(rows, hide_index=True, width="stretch", key=K.PART_DF,
                 on_select=lambda: _pick(rows), selection_mode="single-row",
                 column_config={"parent replay": st.column_config.LinkColumn(display_text="open"),
                                "variant replay": st.column_config.LinkColumn(display_text="open")})


def group_rows(rep: PartingReport) -> list[dict[str, Any]]:
    return [{"first differs at": g.node_id, "questions": g.n, "answer changed": g.changed,
             "better": g.better, "worse": g.worse, "same F1": g.same,
             "F1 delta [95% CI]": f"{100 * g.f1_delta:+.1f} [{100 * g.low:+.1f}, "
                                  f"{100 * g.high:+.1f}]"} for g in rep.groups]


def question_rows(rep: PartingReport) -> list[dict[str, Any]]:
    out = []
    for p in rep.partings:
        a, b = rep.runs[p.question_id]
        step = p.step_a if p.step_a is not None else 0
        out.append({"id": p.question_id, "node": p.node_id or "(never part)",
                    "step": "—" if p.step_a is None else str(p.step_a),
                    "differs in": ", ".join(p.keys) or "—",
                    "parent replay": f"/replay?run={a}&step={step}",
                    "variant replay": f"/replay?run={b}&step={step}"})
    return out


def _pick(rows: list[dict[str, Any]]) -> None:
    sel = K.PART_DF.get()
    picked = list(getattr(getattr(sel, "selection", None), "rows", None) or [])
    if picked and picked[0] < len(rows):
        K.QUESTION.set(rows[picked[0]]["id"])
        st.query_params["q"] = rows[picked[0]]["id"]
