"""The Editor's side panel: the selected node's label, breakpoints and params (or the selected
edge's route label), the flow's problems, and the flow's own fields (description, entry, limits,
tidy)."""
from __future__ import annotations

from functools import partial

import streamlit as st

from flowkit import registry
from flowkit.errors import Problem
from flowkit.spec import FlowSpec, Limits
from service import drafts
from studio.common import forms_panel, inert
from studio.common.state import EditorKeys as K
from studio.editor import actions_panel as actions
from studio.editor import canvas
from studio.editor.editor import Editor


def _head(text: str) -> None:
    head, close = st.columns([3, 1], vertical_alignment="center")
    head.markdown(text)
    close.button("", icon=":material/close:", key=K.DESELECT, on_click=actions.deselect,
                 help="Close")


def _breakpoints(ed: Editor, sel: str, gen: int) -> None:
    """The node's breakpoints: pause before / after it, on which visit and under what condition."""
    sides = ed.breakpoint_sides(sel)
    for side, key, text in (("before", K.BP_BEFORE, "Pause before"),
                            ("after", K.BP_AFTER, "Pause after")):     # side by side: cut off
        st.checkbox(text, value=side in sides, key=key.item(gen, sel),
                    on_change=actions.toggle_breakpoint, args=(sel, side),
                    help=f"A breakpoint {side} this node (the red dot on the canvas): Run from "
                         "here pauses there. It belongs to this draft, never to the saved flow.")
    visit, condition = ed.breakpoint_visit_condition(sel)
    off = "" if sides else " Tick pause before or after first."
    v_key, c_key = K.BP_VISIT.item(gen, sel), K.BP_CONDITION.item(gen, sel)
    st.number_input("Visit", min_value=0, step=1, value=visit or 0, key=v_key,
                    disabled=not sides, on_change=actions.set_breakpoint_field,
                    args=(sel, "visit", v_key),
                    help="Pause only the n-th time the run reaches this node (3: the third "
                         "time a loop comes back to it); 0: every visit." + off)
    st.text_input("Condition", value=condition or "", key=c_key, disabled=not sides,
                  on_change=actions.set_breakpoint_field, args=(sel, "condition", c_key),
                  placeholder="len(documents) < 3", max_chars=drafts.CONDITION_MAX_CHARS,
                  help="Pause only when this holds over working memory: memory keys (question, "
                       "documents, answer, judgement, ...), the counters visit, steps, "
                       "llm_calls, tokens, comparisons, len(...), in, and/or/not. Empty: "
                       "always." + off)
    refused = K.BP_ERROR.get()
    if refused and refused[0] == sel:
        st.error(inert.escape(refused[1]))


def _connect(spec: FlowSpec, sel: str, gen: int) -> None:
    """Connect to: an edge out of the node without dragging on the canvas (the same edit as a
    drawn edge: Editor.connect), with the route label of a router's or judge's new edge."""
    targets = canvas.connect_targets(spec, sel)
    if not targets:
        st.caption("Connect to: every other node already has an edge from this one.")
        return
    target_key, label_key = K.CONNECT_TARGET.item(gen, sel), K.CONNECT_LABEL.item(gen, sel)
    # the button under the box, full width: beside it, in the side panel's width, it was cut
    # to "C." (issue 48, item 9)
    target = st.selectbox("Connect to", targets, index=None, key=target_key,
                          placeholder="Pick a node",
                          help="Add an edge from this node to the node picked (as dragging "
                               "from its output handle to that node does)")
    labels = canvas.route_labels(spec.node(sel))
    if labels:
        used = {e.label for e in spec.edges if e.source == sel}
        first = next((i for i, lb in enumerate(labels) if lb not in used), 0)
        st.selectbox("New edge's route label", labels, index=first, key=label_key,
                     help=f"Which of '{inert.escape(sel)}''s routes follows the new edge")
    st.button("Connect", key=K.CONNECT.item(gen, sel), disabled=target is None,
              icon=":material/arrow_forward:", width="stretch",
              on_click=actions.connect, args=(sel, target_key, label_key))


def _edges(spec: FlowSpec, sel: str, gen: int) -> None:
    """The node's edges, in then out, each with a remove button: an edge drawn under others (a
    click picks the one on top) is removed here without pointing at it (issue 48)."""
    mine = [(eid, e) for eid, e in zip(canvas.edge_ids(spec), spec.edges)
            if sel in (e.source, e.target)]
    if not mine:
        st.caption("Edges: none in or out yet.")
        return
    st.markdown(f"**Edges** ({len(mine)})")
    ordered = ([m for m in mine if m[1].target == sel]
               + [m for m in mine if m[1].target != sel])
    for eid, e in ordered:
        into = e.target == sel
        text = (f"from {inert.code(e.source)}" if into else f"to {inert.code(e.target)}") + (
            f" · {inert.escape(e.label)}" if e.label else "")
        row, remove = st.columns([4, 1], vertical_alignment="center")
        row.markdown(("← " if into else "→ ") + text)
        remove.button("", icon=":material/delete:", key=K.EDGE_REMOVE.item(gen, eid),
                      on_click=actions.remove_edge, args=(eid,),
                      help=f"Remove the edge {inert.escape(e.source)} → "
                           f"{inert.escape(e.target)} (Ctrl+Z undoes it)")


def _node(ed: Editor, spec: FlowSpec, sel: str, gen: int, problems: list[Problem]) -> None:
    node = spec.node(sel)
    cls = registry.get(node.operator)
    _head(f"**Node {inert.code(node.id)}**")
    st.caption(inert.code(node.operator))
    label_key = K.LABEL.item(gen, sel)
    st.text_input("Label", value=node.label, key=label_key, on_change=actions.set_label,
                  args=(sel, label_key))
    _connect(spec, sel, gen)
    _edges(spec, sel, gen)
    _breakpoints(ed, sel, gen)
    if cls is None:
        st.error(f"Unknown operator {inert.code(node.operator, limit=80)}: delete this node.")
    else:
        with st.expander("About this operator"):
            st.markdown(cls.help())
            st.caption(f"reads: {', '.join(cls.reads) or '-'} · writes: "
                       f"{', '.join(cls.writes) or '-'} · kind: {cls.kind}")
        forms_panel.render_params(cls.Params.model_json_schema(), node.params,
                                  K.PARAM.item(gen, sel) + "_", on_value=partial(actions.set_param, sel))
    for p in problems:
        if p.node == sel:
            (st.error if p.severity == "error" else st.warning)(
                inert.escape(p.message) + (f" — {inert.escape(p.hint)}" if p.hint else ""))


def _edge(spec: FlowSpec, sel: str, gen: int) -> None:
    found = canvas.find_edge(spec, sel)
    if found is None:
        return
    e = found[1]
    _head(f"**Edge {inert.code(e.source)} → {inert.code(e.target)}**")
    node_ids = {n.id for n in spec.nodes}
    labels = canvas.route_labels(spec.node(e.source)) if e.source in node_ids else ()
    if labels:
        options = ["(none)", *labels] + ([e.label] if e.label and e.label not in labels else [])
        key = K.EDGE_LABEL.item(gen, sel)
        st.selectbox("Route label", options, index=options.index(e.label or "(none)"), key=key,
                     on_change=actions.set_edge_label, args=(sel, key),
                     help=f"Which of '{inert.escape(e.source)}''s routes follows this edge")
    else:
        st.caption(f"'{inert.escape(e.source)}' does not route: this edge is always followed.")
        if e.label:
            st.button("Remove the label", key=K.EDGE_UNLABEL.item(gen),
                      on_click=actions.clear_edge_label, args=(sel,))


def _problems(problems: list[Problem]) -> None:
    errors = [p for p in problems if p.severity == "error"]
    st.markdown(f"**Problems** ({len(errors)} error(s), {len(problems) - len(errors)} warning(s))")
    if not problems:
        st.success("No problems: the flow can run.")
    # one alert per problem up to PROBLEMS_SHOWN; the rest as one list, drawn only when asked for
    # (a big flow can have a hundred, and drawing them all cost most of a click's round trip)
    for p in problems[:actions.PROBLEMS_SHOWN]:
        (st.error if p.severity == "error" else st.warning)(actions.problem_text(p))
    rest = problems[actions.PROBLEMS_SHOWN:]
    if rest and st.toggle(f"Show the other {len(rest)} problem(s)", key=K.ALL_PROBLEMS):
        st.markdown("\n".join(f"- {actions.problem_text(q, with_severity=True)}" for q in rest))


def _flow_fields(spec: FlowSpec, gen: int) -> None:
    with st.expander("Flow: description, entry, limits"):
        st.text_area("Description", value=spec.description, key=K.DESC.item(gen),
                     on_change=actions.set_description, args=(K.DESC.item(gen),))
        entries = ["(automatic)", *[n.id for n in spec.nodes]]
        st.selectbox("Entry node", entries,
                     index=entries.index(spec.entry) if spec.entry in entries else 0,
                     key=K.ENTRY.item(gen), on_change=actions.set_entry, args=(K.ENTRY.item(gen),),
                     help="Where a run starts; automatic = the only node without inputs")
        forms_panel.render_params(Limits.model_json_schema(), spec.limits.model_dump(),
                                  K.LIMITS.item(gen) + "_", on_value=actions.set_limit)
        st.button("Tidy the layout", key=K.TIDY, on_click=actions.tidy,
                  icon=":material/auto_fix_high:",
                  help="Place every node again: layers in reading order, loops routed around")


def render(ed: Editor) -> None:
    """The side panel for the current selection, the problems and the flow's fields."""
    spec, sel, gen = ed.spec, ed.selected, ed.form_gen
    problems = ed.problems(spec)
    if sel and sel in {n.id for n in spec.nodes}:
        _node(ed, spec, sel, gen, problems)
    elif sel and canvas.find_edge(spec, sel) is not None:
        _edge(spec, sel, gen)
    else:
        st.caption("Click a node or an edge on the canvas to edit it.")
    _problems(problems)
    _flow_fields(spec, gen)
