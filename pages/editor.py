"""Editor: the canvas, the operator palette, the node/edge side panel, problems, save and run."""
from __future__ import annotations

import streamlit as st

from flowkit import registry
from flowkit.errors import FlowkitError, NotFoundError
from flowkit.spec import Limits
from studio import canvas_ui
from studio.common import diffs, forms_panel, inert
from studio.common.shell import route_through_app
from studio.common.workspace import get_workspace
from studio.editor import actions_panel as actions
from studio.editor import canvas, keys_panel, palette_panel
from studio.editor.editor import K_GEN, Editor, canvas_key

route_through_app()   # a direct URL in a fresh server's first session: go through app.py


# ---- which flow -------------------------------------------------------------------------------
ws = get_workspace()
ed = Editor(st.session_state, ws)
flow = st.query_params.get("flow") or (ed.draft.flow if ed.draft else None)
if not flow:
    st.title("Editor")
    names = [f.name for f in ws.store.list_flows()]
    if not names:
        st.info("No saved flows yet.")
        st.page_link("pages/flows.py", label="Create one on the Flows page", icon=":material/add:")
        st.stop()
    pick = st.selectbox("Open a flow", names, key="editor_pick")
    if st.button("Open", type="primary"):
        st.query_params["flow"] = pick
        st.rerun()
    st.stop()
try:
    draft = ed.open(flow, st.query_params.get("draft"))
except NotFoundError as err:
    st.title("Editor")
    st.error(inert.escape(err))
    st.page_link("pages/flows.py", label="Back to the flows", icon=":material/arrow_back:")
    st.stop()
if st.query_params.get("flow") != draft.flow or st.query_params.get("draft") != draft.draft_id:
    st.query_params.update({"flow": draft.flow, "draft": draft.draft_id})

spec = ed.spec
problems = ed.problems(spec)
gen = st.session_state.get(K_GEN, 0)

# ---- header and toolbar -----------------------------------------------------------------------
st.title(f"Editor · {inert.escape(draft.flow)}")
dirty = ed.dirty()
st.caption(f"Started from version {draft.base_version}"
           + (" · **unsaved changes** (kept on the server: a refresh loses nothing)" if dirty
              else " · no unsaved changes"))
# the two boxes always exist, filled or not, so the canvas below keeps its place in the page
# (an element inserted above it would make the browser mount the canvas afresh)
notice_box, conflict_box = st.empty(), st.container()
notice = ed.notice()
if notice:
    (notice_box.success if notice[0] == "success" else notice_box.info)(inert.escape(notice[1]))

conflict = ed.conflict
if conflict:
    with conflict_box.container(border=True):
        if conflict.get("deleted"):
            st.error(f"Conflict: '{inert.escape(draft.flow)}' was deleted while you edited it. Your draft is "
                     "kept: save it as a new flow.")
        else:
            st.error(f"Conflict: version {conflict['actual']} of '{inert.escape(draft.flow)}' "
                     "was saved while "
                     f"you edited version {conflict['expected']}. Your draft is kept; choose "
                     "what to do.")
            try:
                theirs, _ = ws.store.get_flow(draft.flow)
                changes = diffs.structural(theirs, spec)
                with st.expander(f"Your draft compared with version {conflict['actual']}"):
                    st.markdown("\n".join(f"- {inert.code(c)}" for c in changes)
                                or "Only positions differ.")
            except NotFoundError:
                pass
        c1, c2, c3 = st.columns(3)
        with c1:
            new_name = st.text_input("New flow name", value=f"{draft.flow}_mine",
                                     key="editor_conflict_name")
            if st.button("Keep mine: save as a new flow", key="editor_conflict_save_as"):
                try:
                    saved = ed.save_as(new_name)
                except FlowkitError as err:
                    st.error(inert.escape(err))
                else:
                    st.query_params.update({"flow": saved, "draft": ed.draft.draft_id})
                    st.rerun()
        if not conflict.get("deleted"):
            c2.button(f"Overwrite: save mine over version {conflict['actual']}",
                      key="editor_conflict_overwrite", on_click=actions.overwrite)
            c3.button(f"Discard mine: load version {conflict['actual']}",
                      key="editor_conflict_discard", on_click=actions.discard)

bar = st.columns([2.4, 1, 1, 1, 1.2, 0.5, 0.5], vertical_alignment="bottom")
bar[0].text_input("Version message", key="editor_save_msg", placeholder="what changed (optional)")
bar[1].button("Save", type="primary", on_click=actions.save, key="editor_save", width="stretch",
              help="Save the draft as a new version of the flow")
run_clicked = bar[2].button("Run ▶", key="editor_run", width="stretch",
                            help="Open the run page with this flow (saves the draft first)")
with bar[3].popover("Discard", width="stretch", disabled=not dirty):
    st.write("Throw away your unsaved changes and load the saved flow?")
    st.button("Discard my changes", key="editor_discard", on_click=actions.discard)
delete_box = bar[4].empty()   # filled after the canvas reports this run's selection
bar[5].button("", icon=":material/undo:", key="editor_undo", on_click=actions.undo,
              disabled=not ed.can_undo(), width="stretch", help="Undo the last edit (Ctrl+Z)")
bar[6].button("", icon=":material/redo:", key="editor_redo", on_click=actions.redo,
              disabled=not ed.can_redo(), width="stretch",
              help="Redo what you undid (Ctrl+Shift+Z, Ctrl+Y)")
if run_clicked:
    if not ed.dirty() or ed.save("saved before a run") is not None:
        st.session_state["run_flow"] = draft.flow
        st.switch_page("pages/run.py", query_params={"flow": draft.flow})
    st.rerun()

# ---- palette | canvas | side panel ------------------------------------------------------------
left, middle, right = st.columns([1.15, 4, 1.5])   # 1366 px: module titles fit in the palette
with left:
    st.markdown("**Operators**")
    palette_panel.render(on_add=actions.add)

with middle:
    key = canvas_key(draft.flow)
    event = canvas_ui.flow_canvas(ed.canvas_picture(), key=key, fit=ed.fit_request,
                                  min_zoom=0.2, minimap=len(spec.nodes) > 30,
                                  on_event=lambda: actions.canvas_event(key))
    st.caption("Drag from a node's output handle (right, or bottom in a long flow) to another "
               "node's input handle to connect them; purple edges are a loop's way back, grey "
               "routed ones pass nodes in their way. "
               "Click a node or edge to edit it; delete it with **Delete selected** or the "
               "Delete / Backspace key; a click on the empty canvas clears the selection. Undo "
               "any edit with Ctrl+Z. The mouse wheel scrolls the page; click the canvas (or "
               "hold Ctrl) to zoom with it.")
if ed.take_events(event):   # only if the callback missed them: draw their result
    st.rerun()
delete_box.button("Delete selected", key="editor_delete", on_click=actions.delete, width="stretch",
                  disabled=not ed.selected,
                  help="Delete the selected node (with its edges) or edge (keys: Delete, Backspace)")
keys_panel.editor_shortcuts(delete="editor_delete", undo="editor_undo", redo="editor_redo")
spec = ed.spec
problems = ed.problems(spec)

with right:
    sel = ed.selected
    node_ids = {n.id for n in spec.nodes}
    edge = canvas.find_edge(spec, sel) if sel and sel not in node_ids else None
    if sel in node_ids:
        node = spec.node(sel)
        cls = registry.get(node.operator)
        head, close = st.columns([3, 1], vertical_alignment="center")
        head.markdown(f"**Node {inert.code(node.id)}**")
        close.button("", icon=":material/close:", key="editor_deselect", on_click=actions.deselect, help="Close")
        st.caption(inert.code(node.operator))
        st.text_input("Label", value=node.label, key=f"editor_label_{gen}_{sel}",
                      on_change=actions.set_label, args=(sel, f"editor_label_{gen}_{sel}"))
        if cls is None:
            st.error(f"Unknown operator {inert.code(node.operator, limit=80)}: delete this node.")
        else:
            with st.expander("About this operator"):
                st.markdown(cls.help())
                st.caption(f"reads: {', '.join(cls.reads) or '-'} · writes: "
                           f"{', '.join(cls.writes) or '-'} · kind: {cls.kind}")
            forms_panel.render_params(cls.Params.model_json_schema(), node.params,
                                f"editor_p_{gen}_{sel}_",
                                on_value=lambda name, value, nid=sel: actions.set_param(nid, name, value))
        for p in problems:
            if p.node == sel:
                (st.error if p.severity == "error" else st.warning)(
                    inert.escape(p.message) + (f" — {inert.escape(p.hint)}" if p.hint else ""))
    elif edge is not None:
        _, e = edge
        head, close = st.columns([3, 1], vertical_alignment="center")
        head.markdown(f"**Edge {inert.code(e.source)} → {inert.code(e.target)}**")
        close.button("", icon=":material/close:", key="editor_deselect", on_click=actions.deselect, help="Close")
        labels = canvas.route_labels(spec.node(e.source)) if e.source in node_ids else ()
        if labels:
            options = ["(none)", *labels] + ([e.label] if e.label and e.label not in labels else [])
            st.selectbox("Route label", options, index=options.index(e.label or "(none)"),
                         key=f"editor_edge_label_{gen}_{sel}", on_change=actions.set_edge_label,
                         args=(sel, f"editor_edge_label_{gen}_{sel}"),
                         help=f"Which of '{inert.escape(e.source)}''s routes follows this edge")
        else:
            st.caption(f"'{inert.escape(e.source)}' does not route: this edge is always followed.")
            if e.label:
                st.button("Remove the label", key=f"editor_edge_unlabel_{gen}",
                          on_click=actions.clear_edge_label, args=(sel,))
    else:
        st.caption("Click a node or an edge on the canvas to edit it.")

    errors = [p for p in problems if p.severity == "error"]
    st.markdown(f"**Problems** ({len(errors)} error(s), {len(problems) - len(errors)} warning(s))")
    if not problems:
        st.success("No problems: the flow can run.")
    # one alert per problem up to actions.PROBLEMS_SHOWN; the rest as one list, drawn only when asked for
    # (a big flow can have a hundred, and drawing them all cost most of a click's round trip)
    for p in problems[:actions.PROBLEMS_SHOWN]:
        (st.error if p.severity == "error" else st.warning)(actions.problem_text(p))
    rest = problems[actions.PROBLEMS_SHOWN:]
    if rest and st.toggle(f"Show the other {len(rest)} problem(s)", key="editor_all_problems"):
        st.markdown("\n".join(f"- {actions.problem_text(q, with_severity=True)}" for q in rest))

    with st.expander("Flow: description, entry, limits"):
        st.text_area("Description", value=spec.description, key=f"editor_desc_{gen}",
                     on_change=actions.set_description, args=(f"editor_desc_{gen}",))
        entries = ["(automatic)", *[n.id for n in spec.nodes]]
        st.selectbox("Entry node", entries,
                     index=entries.index(spec.entry) if spec.entry in entries else 0,
                     key=f"editor_entry_{gen}", on_change=actions.set_entry, args=(f"editor_entry_{gen}",),
                     help="Where a run starts; automatic = the only node without inputs")
        forms_panel.render_params(Limits.model_json_schema(), spec.limits.model_dump(),
                            f"editor_limits_{gen}_", on_value=actions.set_limit)
        st.button("Tidy the layout", key="editor_tidy", on_click=actions.tidy,
                  icon=":material/auto_fix_high:",
                  help="Place every node again: layers in reading order, loops routed around")
