"""The editor's logic over a session: the draft, the canvas round trip, edits, save and conflicts.

Pages build an `Editor` from `st.session_state` and the workspace on every run (cheap); it keeps
everything in page-prefixed session keys and writes the draft to the server on every change, so
a refresh loses nothing. Each tab edits its own draft (studio/drafts.py says how); two tabs meet
only at save time, in the conflict dialog.
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, MutableMapping
from typing import Any

from flowkit import registry
from flowkit.errors import FlowkitError, NotFoundError, Problem, SpecError, StaleSaveError
from flowkit.names import check_new_name
from flowkit.spec import EdgeSpec, FlowSpec, Limits, NodeSpec, canonical, from_dict, to_dict
from flowkit.validate import check
from service import flows
from service.drafts import (
    Draft,
    DraftStore,
    drop_node_breakpoints,
    new_draft_id,
    node_marks,
    node_visit_condition,
    set_node_breakpoints,
    set_node_visit_condition,
)
from service.workspace import Workspace
from studio.common.state import EditorKeys as K
from studio.common.state import Key
from studio.editor import canvas, placing, tabs_panel

SEEN_CANVASES = 8                   # canvases (page loads) whose event numbers are remembered
UNDO_DEPTH = 100                    # edits kept for Undo


def canvas_key(flow: str) -> str:
    """The component's key: one per flow, so another flow's last canvas value never leaks in."""
    return K.FLOW_CANVAS.item(hashlib.sha1(flow.encode()).hexdigest()[:12])


class Editor:
    """One session's editor. All state lives in `state` under studio.common.state's EditorKeys
    (None: st.session_state, as in the app)."""

    def __init__(self, state: MutableMapping[str, Any] | None, ws: Workspace, tab: str | None = None,
                 is_open: Callable[[str], bool] | None = None) -> None:
        self.state = state
        self.ws = ws
        self.drafts = DraftStore(ws.data_dir)
        self.tab = tab if tab is not None else tabs_panel.current_tab()
        self.is_open = is_open or tabs_panel.tab_open
        self._parsed: tuple[dict[str, Any], FlowSpec] | None = None

    # ---- opening -------------------------------------------------------------------------
    @property
    def draft(self) -> Draft | None:
        return K.DRAFT.get(state=self.state)

    def open(self, flow: str, draft_id: str | None = None) -> Draft:
        """Edit `flow`: this session's draft, a draft on the server, or the saved flow."""
        cur = self.draft
        if cur is not None and cur.flow == flow and draft_id in (None, cur.draft_id):
            return cur
        draft = (self.drafts.load(flow, draft_id) if draft_id
                 else self.drafts.latest(flow, self.tab, self.is_open))
        if draft is not None and not self._readable(draft):
            draft = None
        copied = draft is not None and draft.held_elsewhere(self.tab, self.is_open)
        if copied and draft is not None:   # another open tab edits it: this tab takes a copy
            draft = Draft(flow=flow, draft_id=new_draft_id(), base_version=draft.base_version,
                          spec=json.loads(json.dumps(draft.spec)))
        restored = draft is not None
        if draft is None:
            spec, version = flows.get_flow(self.ws, flow)   # NotFoundError: the page says so
            draft = Draft(flow=flow, draft_id=new_draft_id(), base_version=version,
                          spec=to_dict(spec))   # a fresh id: an unsaved one may be another tab's
        draft.owner = self.tab
        self._start(draft)
        if restored and (self.dirty() or draft.breakpoints):
            self.drafts.save(draft)         # now this tab's
        if restored and self.dirty():
            self.notify("info", "This draft is open in another tab: this tab edits its own copy."
                        if copied else f"Restored your unsaved changes (started from version "
                                       f"{draft.base_version}).")
        return draft

    def _readable(self, draft: Draft) -> bool:
        try:
            from_dict(draft.spec)
        except SpecError:
            return False
        return True

    def _start(self, draft: Draft) -> None:
        K.DRAFT.set(draft, self.state)
        K.BASE.set(None, self.state)
        K.CANVAS.set(None, self.state)
        K.SELECTED.set(None, self.state)
        K.CONFLICT.set(None, self.state)
        K.CANVAS_PUSH.set(True, self.state)
        K.CANVAS_FIT.set(int(K.CANVAS_FIT.get(state=self.state) or 0) + 1, self.state)
        K.LAYOUT_VIEW.set(K.CANVAS_VIEW.get(state=self.state), self.state)   # None: not known yet
        K.LAYOUT_DIRECTION.set(None, self.state)                             # chosen when drawn
        K.FORM_GEN.set(int(K.FORM_GEN.get(state=self.state) or 0) + 1, self.state)
        K.UNDO_STACK.set((draft.draft_id, []), self.state)
        K.REDO_STACK.set((draft.draft_id, []), self.state)

    def close(self) -> None:
        K.DRAFT.set(None, self.state)

    # ---- the spec ------------------------------------------------------------------------
    @property
    def spec(self) -> FlowSpec:
        d = self.draft
        if d is None:
            raise FlowkitError("no flow is open in the editor")
        if self._parsed is None or self._parsed[0] is not d.spec:   # parse once per change
            kept = K.PARSED.get(state=self.state)   # the draft's dict is replaced, not changed
            self._parsed = (kept if kept and kept[0] is d.spec
                            else (d.spec, from_dict(d.spec)))
            K.PARSED.set(self._parsed, self.state)
        return self._parsed[1]

    def base_spec(self) -> dict[str, Any] | None:
        """The saved version the draft started from (as JSON data), None if it is gone."""
        d = self.draft
        if d is None or d.base_version is None:
            return None
        cached = K.BASE.get(state=self.state)
        if cached and cached[0] == d.flow and cached[1] == d.base_version:
            return cached[2]
        try:
            spec, _ = flows.get_flow(self.ws, d.flow, d.base_version)
        except NotFoundError:
            return None
        data = to_dict(spec)
        K.BASE.set((d.flow, d.base_version, data), self.state)
        return data

    def dirty(self) -> bool:
        d = self.draft
        return d is not None and d.spec != self.base_spec()

    def update(self, spec: FlowSpec, record: bool = True) -> None:
        """Make `spec` the draft and write it to the server (or drop the file when clean).
        `record`: the draft before it goes on the Undo stack (and Redo is forgotten)."""
        d = self.draft
        data = to_dict(spec)
        if d is None or data == d.spec:
            return
        if record:
            undo = self._stack(K.UNDO_STACK)
            undo.append(d.spec)
            del undo[:-UNDO_DEPTH]
            self._stack(K.REDO_STACK).clear()
        d.spec = data
        self._keep()

    def _keep(self) -> None:
        """Write the draft to the server while it holds something (unsaved changes or
        breakpoints); drop its file otherwise."""
        d = self.draft
        if d is None:
            return
        if self.dirty() or d.breakpoints:
            self.drafts.save(d)
        else:
            self.drafts.delete(d.flow, d.draft_id)

    # ---- breakpoints (the draft's, never the flow's) -------------------------------------
    @property
    def breakpoints(self) -> list[str]:
        """The draft's breakpoints, as text (what the Run page's box starts with)."""
        d = self.draft
        return list(d.breakpoints) if d is not None else []

    def breakpoint_sides(self, node_id: str) -> set[str]:
        """"before" and/or "after": where `node_id` holds a breakpoint of the draft."""
        return set(node_marks(self.breakpoints).get(node_id, {}))

    def toggle_breakpoint(self, node_id: str, side: str) -> None:
        """Turn the breakpoint before or after `node_id` on or off (the side panel's boxes)."""
        sides = self.breakpoint_sides(node_id) ^ {side}
        self.set_breakpoints(node_id, "before" in sides, "after" in sides)

    def set_breakpoints(self, node_id: str, before: bool, after: bool) -> None:
        """Make `node_id` pause the run before and/or after it (service.drafts says how the
        breakpoints with a visit or a condition fare; a side turned on takes the node's visit and
        condition); unknown nodes change nothing."""
        d = self.draft
        if d is None or node_id not in {n.id for n in self.spec.nodes}:
            return
        visit, condition = node_visit_condition(d.breakpoints, node_id)
        new = set_node_breakpoints(d.breakpoints, node_id, bool(before), bool(after))
        if visit is not None or condition is not None:
            new = set_node_visit_condition(new, node_id, visit, condition)
        self._store_breakpoints(new)

    def breakpoint_visit_condition(self, node_id: str) -> tuple[int | None, str | None]:
        """The visit and the condition `node_id`'s breakpoints pause on (None: every visit,
        always)."""
        return node_visit_condition(self.breakpoints, node_id)

    def set_breakpoint_visit_condition(self, node_id: str, visit: int | None,
                                       condition: str | None) -> None:
        """Make `node_id`'s breakpoints pause only on `visit` (None or 0: every visit) and only when
        `condition` holds (None or blank: always); BreakpointError naming the node and the field
        when either is bad (nothing is stored then). Unknown nodes change nothing."""
        d = self.draft
        if d is None or node_id not in {n.id for n in self.spec.nodes}:
            return
        self._store_breakpoints(set_node_visit_condition(d.breakpoints, node_id, visit, condition))

    def _store_breakpoints(self, new: list[str]) -> None:
        d = self.draft
        if d is not None and new != d.breakpoints:
            d.breakpoints = new
            self._keep()
            self.redraw()

    # ---- undo and redo -------------------------------------------------------------------
    def _stack(self, key: Key[Any]) -> list[dict[str, Any]]:
        """This draft's Undo or Redo stack (a stack kept for another draft is dropped)."""
        d = self.draft
        kept = key.get(state=self.state)
        if d is None or not kept or kept[0] != d.draft_id:
            kept = (d.draft_id if d else None, [])
            key.set(kept, self.state)
        return kept[1]

    def can_undo(self) -> bool:
        return bool(self._stack(K.UNDO_STACK))

    def can_redo(self) -> bool:
        return bool(self._stack(K.REDO_STACK))

    def undo(self) -> bool:
        """Put the draft back as it was before the last edit; False when there is none."""
        return self._step(self._stack(K.UNDO_STACK), self._stack(K.REDO_STACK))

    def redo(self) -> bool:
        """Make the last undone edit again; False when there is none."""
        return self._step(self._stack(K.REDO_STACK), self._stack(K.UNDO_STACK))

    def _step(self, source: list[dict[str, Any]], target: list[dict[str, Any]]) -> bool:
        d = self.draft
        if d is None or not source:
            return False
        data = source.pop()
        target.append(d.spec)
        self.update(from_dict(data), record=False)
        spec = self.spec
        if self.selected and self.selected not in {n.id for n in spec.nodes} | set(
                canvas.edge_ids(spec)):
            self.select(None)
        K.FORM_GEN.set(int(K.FORM_GEN.get(state=self.state) or 0) + 1, self.state)   # forms show the restored values
        self.redraw()
        return True

    def problems(self, spec: FlowSpec | None = None) -> list[Problem]:
        spec = spec or self.spec
        cached = K.PROBLEMS.get(state=self.state)
        if cached and cached[2] is spec:   # the same object: no need to hash it again
            return cached[1]
        key = hashlib.sha1(json.dumps(canonical(spec), sort_keys=True).encode()).hexdigest()
        problems = cached[1] if cached and cached[0] == key else check(spec)
        K.PROBLEMS.set((key, problems, spec), self.state)
        return problems

    # ---- the canvas round trip -----------------------------------------------------------
    @property
    def form_gen(self) -> int:
        """Bumped whenever the side panel's widgets must show the draft afresh (their keys end
        with it)."""
        return int(K.FORM_GEN.get(state=self.state) or 0)

    @property
    def selected(self) -> str | None:
        return K.SELECTED.get(state=self.state)

    def select(self, sel: str | None) -> None:
        K.SELECTED.set(sel, self.state)
        K.FORM_GEN.set(int(K.FORM_GEN.get(state=self.state) or 0) + 1, self.state)

    def canvas_picture(self) -> canvas.Picture:
        """The picture to hand to the canvas: a new revision only when the drawing changed (or a
        redraw was asked for), so the browser redraws nothing after a mere click."""
        desired = self._desired(self.spec)
        current = K.CANVAS.get(state=self.state)
        if (current is None or K.CANVAS_PUSH.get(state=self.state)
                or not canvas.same_drawing(current, desired)):
            rev = (current["rev"] if current else 0) + 1
            current = canvas.Picture(**{**desired, "rev": rev})
            K.CANVAS.set(current, self.state)
            K.CANVAS_PUSH.set(False, self.state)
        return current

    def _desired(self, spec: FlowSpec) -> canvas.Picture:
        """The canvas picture of `spec` with the current selection; built once per spec,
        selection and view (a rerun that changes none of them reuses the last one)."""
        sel, view, direction = self.selected, self.view, self.direction(spec)
        kept = K.DESIRED.get(state=self.state)
        bps = self.breakpoints
        if (kept and kept[0] is spec and kept[1] == sel and kept[3] == bps and kept[4] == view
                and kept[5] == direction):
            return kept[2]
        desired = canvas.picture(spec, self.problems(spec), sel, breakpoints=bps, view=view,
                                 direction=direction)
        K.DESIRED.set((spec, sel, desired, bps, view, direction), self.state)
        return desired

    def direction(self, spec: FlowSpec) -> str:
        """The way the open flow's layers run (LR or TB), as first drawn since it was opened (or
        tidied, or laid out for the canvas's size): kept while it stays open. The layout turns a
        flow placed all by hand by its shape, so without this a move that made it taller than
        wide flipped every handle and re-routed every lane (issue 48, item 3)."""
        kept = K.LAYOUT_DIRECTION.get(state=self.state)
        if kept in ("LR", "TB"):
            return str(kept)
        chosen = canvas.direction_of(spec, self.view)
        K.LAYOUT_DIRECTION.set(chosen, self.state)
        return chosen

    @property
    def view(self) -> canvas.View:
        """The canvas size (px) the open flow is laid out for: the one the canvas reported
        before the flow was opened, else its first report after (None until then: the
        layout's default). Kept while the flow stays open, so a resize never turns it."""
        return K.LAYOUT_VIEW.get(state=self.state)

    def _take_view(self, event: dict[str, Any]) -> None:
        """The canvas reported its size: remembered for the flows opened next; the open flow
        takes it too if it had none yet (laid out again, and fitted, if that changes it)."""
        w, h = canvas.size_of(event.get("width")), canvas.size_of(event.get("height"))
        if w is None or h is None:
            return
        K.CANVAS_VIEW.set((w, h), self.state)
        if self.view is not None or self.draft is None:
            return
        spec = self.spec
        K.LAYOUT_VIEW.set((w, h), self.state)
        K.LAYOUT_DIRECTION.set(None, self.state)
        if canvas.auto_layout(spec, None) != canvas.auto_layout(spec, (w, h)):
            K.CANVAS_FIT.set(self.fit_request + 1, self.state)
            self.redraw()

    @property
    def fit_request(self) -> int:
        """The canvas fits its view when this number changes: on opening a flow and on tidying,
        never on an edit (that would reset the user's zoom, GUIDE rule 4)."""
        return int(K.CANVAS_FIT.get(state=self.state) or 0)

    def take_events(self, value: Any) -> bool:
        """Apply the canvas's events not taken yet (studio/canvas_ui): a click selects, a drag
        moves nodes, a drawn edge connects. The canvas sends its last events each time, numbered
        per canvas (`token`), so two made faster than a rerun both arrive. False: nothing new."""
        if not isinstance(value, dict):
            return False
        token, events = value.get("token"), value.get("events")
        if not isinstance(token, str) or not isinstance(events, list):
            return False
        seen: dict[str, int] = dict(K.CANVAS_SEEN.get(state=self.state) or {})
        last = seen.get(token, 0)
        new = sorted((e for e in events if isinstance(e, dict) and isinstance(e.get("n"), int)
                      and not isinstance(e["n"], bool) and e["n"] > last), key=lambda e: e["n"])
        if not new:
            return False
        for event in new:
            self._take(event)
        seen.pop(token, None)
        seen[token] = new[-1]["n"]
        K.CANVAS_SEEN.set(dict(list(seen.items())[-SEEN_CANVASES:]), self.state)
        return True

    def _take(self, event: dict[str, Any]) -> None:
        spec, kind = self.spec, event.get("kind")
        if kind == "select":
            sel = event.get("id")
            if sel is None and self.selected is not None:   # a click on the empty canvas
                self.select(None)
            known = {n.id for n in spec.nodes} | set(canvas.edge_ids(spec))
            if isinstance(sel, str) and sel in known and sel != self.selected:
                self.select(sel)
        elif kind == "move":
            self.update(canvas.apply_moves(spec, event.get("moves")))
            self.redraw()       # lanes follow the nodes
        elif kind == "connect":
            self.connect(event.get("source"), event.get("target"))
        elif kind == "view":
            self._take_view(event)
        elif kind == "breakpoint" and isinstance(event.get("id"), str):
            self.set_breakpoints(event["id"], event.get("before") is True,
                                 event.get("after") is True)

    def connect(self, source: Any, target: Any, label: Any = None) -> str | None:
        """Add the edge source -> target (a drawn edge, or the side panel's "Connect to" form),
        select it and return its canvas id; None when it changes nothing (canvas.apply_connect:
        unknown nodes, an edge already there). One edit for Undo; no node moves."""
        spec = self.spec
        new, eid = canvas.apply_connect(spec, source, target, label)
        self.update(placing.keep_places(spec, new, self.view))   # what the user arranged stays
        if eid:
            self.select(eid)
        self.redraw()       # the browser drew the edge itself: replace it with ours (or drop it)
        return eid

    def redraw(self) -> None:
        """Hand the browser a fresh picture on the next run (after a Python-side change)."""
        K.CANVAS_PUSH.set(True, self.state)

    # ---- edits ---------------------------------------------------------------------------
    def add_node(self, operator: str) -> str:
        """Put a new `operator` node on the canvas and select it: below the selection (or the
        rightmost node), where it overlaps no node and no edge; no other node moves."""
        cls = registry.get(operator)
        if cls is None:
            raise NotFoundError(f"unknown operator '{operator}'")
        spec = self.spec
        base = operator.split(".", 1)[1]
        taken = {n.id for n in spec.nodes}
        nid, i = base, 1
        while nid in taken:
            i += 1
            nid = f"{base}_{i}"
        node = NodeSpec(id=nid, operator=operator, params={}, label="")
        anchor = canvas.auto_layout(spec, self.view).get(self.selected or "")   # below the selection
        placed, _ = placing.free_spot(spec.model_copy(update={"nodes": [*spec.nodes, node]}),
                                      nid, anchor, self.view)
        self.update(placed)
        self.select(nid)
        self.redraw()
        return nid

    def delete_selected(self) -> str | None:
        """Delete the selected node (with its edges) or edge; returns what was deleted."""
        sel = self.selected
        spec = self.spec
        if not sel:
            return None
        if any(n.id == sel for n in spec.nodes):
            nodes = [n for n in spec.nodes if n.id != sel]
            edges = [e for e in spec.edges if sel not in (e.source, e.target)]
            layout = {k: v for k, v in spec.layout.items() if k != sel}
            entry = None if spec.entry == sel else spec.entry
            d = self.draft
            if d is not None:
                d.breakpoints = drop_node_breakpoints(d.breakpoints, sel)
            self.update(placing.keep_places(spec, spec.model_copy(update={
                "nodes": nodes, "edges": edges, "layout": layout, "entry": entry}), self.view))
        elif not self.remove_edge(sel):
            self.select(None)
            return None
        self.select(None)
        self.redraw()
        return sel

    def remove_edge(self, edge_id: str) -> bool:
        """Remove the edge with canvas id `edge_id` (the side panel's list of a node's edges, or
        Delete on a selected edge): one edit for Undo, no node moves. False: no such edge."""
        spec = self.spec
        found = canvas.find_edge(spec, edge_id)
        if found is None:
            return False
        edges = [e for i, e in enumerate(spec.edges) if i != found[0]]
        self.update(placing.keep_places(spec, spec.model_copy(update={"edges": edges}), self.view))
        K.FORM_GEN.set(self.form_gen + 1, self.state)    # the edges' ids after it shift ('#n')
        self.redraw()
        return True

    def tidy(self) -> None:
        """Forget where the user put the nodes: studio/layout.py places them all again, for the
        canvas's size now."""
        K.LAYOUT_VIEW.set(K.CANVAS_VIEW.get(state=self.state) or self.view, self.state)
        K.LAYOUT_DIRECTION.set(None, self.state)
        spec = self.spec
        if spec.layout:
            self.update(spec.model_copy(update={"layout": {}}))
        K.CANVAS_FIT.set(self.fit_request + 1, self.state)
        self.redraw()

    def _replace_node(self, node_id: str, **changes: Any) -> None:
        spec = self.spec
        nodes = [n.model_copy(update=changes) if n.id == node_id else n for n in spec.nodes]
        self.update(spec.model_copy(update={"nodes": nodes}))

    def set_param(self, node_id: str, name: str, value: Any) -> None:
        """Set one param of a node (None removes it: the operator's default applies)."""
        node = self.spec.node(node_id)
        params = dict(node.params)
        if value is None:
            params.pop(name, None)
        else:
            params[name] = value
        self._replace_node(node_id, params=params)

    def set_label(self, node_id: str, label: str) -> None:
        self._replace_node(node_id, label=label.strip())

    def set_edge_label(self, edge_id: str, label: str | None) -> None:
        spec = self.spec
        found = canvas.find_edge(spec, edge_id)
        if found is None:
            return
        i, e = found
        edges = list(spec.edges)
        edges[i] = EdgeSpec(source=e.source, target=e.target, label=label or None)
        self.update(spec.model_copy(update={"edges": edges}))

    def set_limits(self, **values: Any) -> None:
        spec = self.spec
        limits = Limits.model_validate({**spec.limits.model_dump(), **values})
        self.update(spec.model_copy(update={"limits": limits}))

    def set_flow_fields(self, *, description: str | None = None, entry: str | None = "") -> None:
        """Change the description and/or the entry node ("" leaves the entry as it is)."""
        spec = self.spec
        changes: dict[str, Any] = {}
        if description is not None:
            changes["description"] = description
        if entry != "":
            changes["entry"] = entry
        self.update(placing.keep_places(spec, spec.model_copy(update=changes), self.view))

    # ---- save, conflicts, discard --------------------------------------------------------
    @property
    def conflict(self) -> dict[str, Any] | None:
        return K.CONFLICT.get(state=self.state)

    def save(self, message: str = "") -> int | None:
        """Save the draft as a new version; on a conflict, record it and return None."""
        d = self.draft
        if d is None:
            return None
        try:
            version = flows.save_version(self.ws, self.spec, expected_version=d.base_version,
                                         message=message)
        except StaleSaveError as err:
            K.CONFLICT.set({"expected": err.expected, "actual": err.actual, "deleted": False},
                           self.state)
            return None
        except NotFoundError:
            K.CONFLICT.set({"expected": d.base_version, "actual": None, "deleted": True}, self.state)
            return None
        self._saved(version)
        return version

    def _saved(self, version: int) -> None:
        d = self.draft
        if d is None:
            return
        d.base_version = version
        K.BASE.set(None, self.state)
        K.CONFLICT.set(None, self.state)
        self._keep()                       # kept only for its breakpoints, if it has any
        self.notify("success", f"Saved '{d.flow}' as version {version}.")

    def overwrite(self, message: str = "") -> int | None:
        """Conflict choice: save my draft on top of the stored version (whose number we reload)."""
        d = self.draft
        c = self.conflict
        if d is None or c is None:
            return None
        current = None if c.get("deleted") else flows.get_flow(self.ws, d.flow)[1]
        d.base_version = current
        return self.save(message or f"overwrote version {current}")

    def save_as(self, new_name: str, message: str = "") -> str:
        """Conflict choice (or 'save a copy'): save my draft as a new flow; edit that one now."""
        new_name = new_name.strip()
        if not new_name:
            raise FlowkitError("give the new flow a name")
        check_new_name(new_name, "flow")     # the one rule for new names (flowkit.names.RULE)
        if flows.flow_exists(self.ws, new_name):
            raise FlowkitError(f"a flow named '{new_name}' already exists; choose another name")
        old = self.draft
        spec = self.spec.model_copy(update={"name": new_name})
        version = flows.save_version(self.ws, spec, expected_version=None,
                                     message=message or f"copy of '{old.flow if old else ''}'")
        if old is not None:
            self.drafts.delete(old.flow, old.draft_id)
        self._start(Draft(flow=new_name, draft_id=new_draft_id(), base_version=version,
                          spec=to_dict(spec), owner=self.tab,
                          breakpoints=list(old.breakpoints) if old else []))
        self._keep()
        self.notify("success", f"Saved your draft as the new flow '{new_name}'.")
        return new_name

    def discard(self) -> None:
        """Drop the draft and load the stored flow's latest version."""
        d = self.draft
        if d is None:
            return
        self.drafts.delete(d.flow, d.draft_id)
        spec, version = flows.get_flow(self.ws, d.flow)
        self._start(Draft(flow=d.flow, draft_id=d.draft_id, base_version=version,
                          spec=to_dict(spec), owner=self.tab, breakpoints=d.breakpoints))
        self._keep()                       # breakpoints are not changes: they stay
        self.notify("info", f"Loaded version {version}; your changes were discarded.")

    def notify(self, kind: str, text: str) -> None:
        K.NOTICE.set((kind, text, time.monotonic()), self.state)

    def notice(self, max_age_s: float = 15.0) -> tuple[str, str] | None:
        """The last message (kind, text) while it is fresh: a run that shows it may be cut short
        by the next rerun, so it stays a few seconds instead of being shown once."""
        notice = K.NOTICE.get(state=self.state)
        if not notice or time.monotonic() - notice[2] > max_age_s:
            return None
        return notice[0], notice[1]
