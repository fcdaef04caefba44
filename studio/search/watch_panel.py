"""The Search page's view of one search (?search=ID): progress (candidates evaluated, dropped and
why, model calls against the budget), the live chart of the front, the candidates' table, and
when it is done the front with its search and confirmation figures, each candidate linked to the
Editor (its saved flow), to Compare (its evaluation) and to Replay (its best answer, to step
through and fork). Polled every second while it runs."""
from __future__ import annotations

import streamlit as st

from flowkit.errors import FlowkitError
from service import search
from service.search import SearchRequest
from service.workspace import Workspace
from studio.common import inert
from studio.common.jobs import JobManager
from studio.common.state import SearchKeys as K
from studio.search import search_chart
from studio.search import search_data as sd
from studio.search import search_view as sv


def header(sid: str, req: SearchRequest) -> None:
    st.markdown(f"### Search {sid}")
    judge = (f" (judge: {inert.escape(req.judge_model or 'default')})"
             if search.is_judge(req.objective) else "")
    st.caption(f"objective {inert.escape(req.objective)}{judge} · "
               f"space {inert.code(req.space)} · {inert.escape(req.dataset)} on knowledge base "
               f"{inert.escape(req.kb)} · search questions {inert.escape(req.search_questions)}, "
               f"confirmation questions {inert.escape(req.confirm_questions)} · resume from a "
               f"shell with `flowkit search` and the same arguments")


def progress_section(ws: Workspace, jobs: JobManager, w: sv.Watch) -> None:
    state = w.state
    if state is None:
        st.progress(0.0, text=f"{w.status}: {w.message or 'waiting for its turn'}")
    else:
        b, c = state.budget, sv.counts(state)
        st.progress(min(b.spent_calls / max(b.calls, 1), 1.0),
                    text=f"{b.spent_calls} of {b.calls} model calls of the budget · "
                         f"{b.cached_calls} served from the cache · {b.confirm_calls} to confirm")
        st.markdown(f"**{c['evaluated']} of {c['candidates']} candidates evaluated** · "
                    f"{c['dropped']} dropped · {c['kept']} kept · {c['racing']} racing · "
                    f"phase {state.phase} · {w.status}")
        if w.message and w.status != "error":
            st.caption(inert.escape(w.message))
    if w.status == "error":
        st.error(f"The search failed: {inert.escape(w.message)}")
    if w.active:
        if st.button("Cancel", key=K.STOP, disabled=bool(w.job and w.job.cancel_requested),
                     help="Stops after the run in flight; Resume goes on from there"):
            sd.stop(jobs, w.sid)
            st.toast("Cancelling: stops after the run in flight")
    elif state is None or state.phase != "done":
        if st.button("Resume", key=K.RESUME, type="primary",
                     help="Goes on from where it stopped; finished runs are not redone"):
            try:
                sd.submit(jobs, ws, w.sid, w.request)
            except FlowkitError as err:
                st.error(inert.escape(err))
            else:
                st.rerun()


def dropped_section(w: sv.Watch) -> None:
    if w.state is None:
        return
    dropped = [e for e in w.state.entries if e.status == "dropped"]
    if dropped:
        with st.expander(f"Dropped early ({len(dropped)}) and why"):
            for e in dropped:
                st.markdown(f"- **{e.cid}** {inert.escape(sv.describe(e))}: "
                            f"{inert.escape(e.reason)}")
    if w.log:
        with st.expander("Log"):
            inert.text("\n".join(w.log))


def candidates_section(w: sv.Watch) -> None:
    if w.state is None:
        return
    points = sv.chart_points(w.state)
    if points:
        st.altair_chart(search_chart.front_chart(points, w.state.quality().short),
                        width="stretch")
    st.dataframe(sv.rows(w.state), hide_index=True, width="stretch", key=K.TABLE_DF,
                 column_config={
                     "editor": st.column_config.LinkColumn("editor", display_text="open flow"),
                     "compare": st.column_config.LinkColumn("compare",
                                                            display_text="open evaluation"),
                     "replay": st.column_config.LinkColumn("replay",
                                                           display_text="replay best answer")})
    goal = w.state.quality()
    st.caption(f"★ on the front · {inert.escape(goal.label())} in % · confirm {goal.short}: on "
               "the confirmation questions, with the difference from the best hand-written flow "
               "there [95% paired interval]")


def front_section(w: sv.Watch) -> None:
    if w.state is None or w.state.phase == "race":
        return
    st.subheader("The front")
    q = inert.escape(w.state.quality().label())
    for p in sv.front(w.state):
        e = p.entry
        c = p.confirm
        conf = (f"confirm {q} **{100 * c.score:.1f}** on {c.n} "
                f"({inert.escape(sv.interval(c, e.cid))}), "
                f"{c.tokens:.0f} tokens/q" if c else "not confirmed yet")
        links = [f"[open in the Editor]({sv.editor_link(e)})" if e.flow_name else "",
                 f"[open in Compare]({sv.compare_link(e)})" if sv.compare_link(e) else "",
                 f"[replay its best answer]({sv.replay_link(e)})" if sv.replay_link(e) else ""]
        st.markdown(f"- **{e.cid}** {inert.escape(p.label)}: search {q} "
                    f"**{100 * (e.score or 0):.1f}** on {e.reached}, {e.tokens or 0:.0f} tokens/q; "
                    f"{conf} · " + " · ".join(x for x in links if x))


def watch_panel(ws: Workspace, jobs: JobManager, sid: str) -> None:
    """The open search, polled every second while it runs; the page reruns when it ends."""
    try:
        req = sd.load_request(ws, sid)
    except FlowkitError as err:
        st.error(inert.escape(err))
        return
    if req is None:
        st.warning(f"No search {inert.escape(sid)} was started here.")
        return
    header(sid, req)
    first = sv.watch(ws, jobs, sid, req)

    @st.fragment(run_every=1 if first.active else None)
    def panel() -> None:
        try:
            w = sv.watch(ws, jobs, sid, req)
        except FlowkitError as err:
            st.error(inert.escape(err))
            return
        was = K.WAS_ACTIVE.get()
        K.WAS_ACTIVE.set({sid: w.active})
        if was and was.get(sid) and not w.active:
            st.rerun()                                   # ended: draw the page without polling
        progress_section(ws, jobs, w)
        dropped_section(w)
        candidates_section(w)
        front_section(w)

    panel()
