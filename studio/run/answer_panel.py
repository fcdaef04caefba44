"""The run's answer as the Run page draws it: while the run goes on, what the model writes as a
draft (round k: an answer written on the way is a draft until the run ends; earlier rounds stay
readable), with the run's figures counting along; then the stored answer as the Answer, marked
right or wrong against a dataset's expected answers, its cited passages, and the steps table (kept
after the run ends, so the page keeps its shape and does not jump)."""
from __future__ import annotations

import time
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from flowkit import registry
from flowkit.trace import StepEvent
from service.runs import PauseEdit, RunInfo, asked_question, grade_answer, pause_edits
from studio.common import inert
from studio.common import provenance_panel as provenance
from studio.common.pending import user_waiting
from studio.common.state import RunKeys as K
from studio.replay.replay import short_value
from studio.run import runview
from studio.run.stream import Streamed, buffers

LOADING = "Loading the model (first run: about 15 s)..."
#: marks the answer while it is being written
CURSOR = "▌"
#: how often the stream looks for new pieces; how long it waits for more once words came (or,
#: where it cannot tell a click is waiting, for any); the longest one stream lasts (seconds)
STREAM_TICK_S, IDLE_S, MAX_STREAM_S = 0.05, 1.0, 30.0
#: the working-memory keys whose writers' text is an answer in the making (a draft)
DRAFT_KEYS = ("answer", "drafts")
#: the live box's title while a node that writes no answer calls the model (a query rewrite, a
#: judge)
AT_WORK = "The model at work"


@dataclass(frozen=True)
class Draft:
    """What an answer-writing node's model call wrote, in the order the run wrote them."""

    round: int
    node_id: str
    visit: int
    text: str


def writes_answer(spec: dict[str, Any], node_id: str) -> bool:
    """Whether the flow's node writes the answer (or drafts of it): its model text is a draft."""
    for n in spec.get("nodes", []):
        if n.get("id") == node_id:
            cls = registry.get(str(n.get("operator", "")))
            return cls is not None and any(k in cls.writes for k in DRAFT_KEYS)
    return False


def drafts(spec: dict[str, Any], steps: Sequence[StepEvent]) -> list[Draft]:
    """The drafts of the finished steps: each answer-writing step's last model completion."""
    out: list[Draft] = []
    for s in steps:
        if s.llm_calls and writes_answer(spec, s.node_id):
            out.append(Draft(len(out) + 1, s.node_id, s.visit, s.llm_calls[-1].completion))
    return out


def live_title(spec: dict[str, Any], steps: Sequence[StepEvent], node_ids: Sequence[str]) -> str:
    """The live box's title while `node_ids` (the node writing, or those probably next) run:
    'Draft (round k)' for an answer in the making, never 'Answer' (that is the run's end)."""
    if any(writes_answer(spec, n) for n in node_ids):
        return f"Draft (round {len(drafts(spec, steps)) + 1})"
    return AT_WORK


class LiveFigures:
    """'Tokens so far' and 'Seconds' while a run goes on, drawn again as the model writes (they
    stood still while a stream held the page): the finished steps' tokens plus the pieces the
    unfinished call has written, and the job's time."""

    def __init__(self, tokens_slot: Any, seconds_slot: Any, base_tokens: int,
                 steps: Sequence[StepEvent], elapsed: Callable[[], float | None]) -> None:
        self._tokens, self._seconds = tokens_slot, seconds_slot
        self._base = base_tokens
        self._finished = {(s.node_id, s.visit) for s in steps}
        self._elapsed = elapsed
        self._shown: tuple[int, int | None] | None = None

    def tokens(self, now: Streamed | None) -> int:
        """The run's tokens with the unfinished call's pieces (one piece a token)."""
        writing = now is not None and (now.node_id, now.visit) not in self._finished
        return self._base + (now.call_pieces if writing and now is not None else 0)

    def draw(self, now: Streamed | None = None) -> None:
        """Draw both figures again if either changed (seconds as whole seconds)."""
        secs = self._elapsed()
        shown = (self.tokens(now), None if secs is None else int(secs))
        if shown == self._shown:
            return
        self._shown = shown
        self._tokens.metric("Tokens so far", shown[0])
        self._seconds.metric("Seconds", "-" if shown[1] is None else shown[1])


def _pieces(run_id: str, going_on: Callable[[], bool], caption: Any,
            interrupted: Callable[[], bool | None] = user_waiting,
            tick: Callable[[Streamed | None], None] | None = None,
            finished: Container[tuple[str, int]] = ()) -> Iterator[str]:
    """The answer's text as the model writes it, escaped (it is the model's, never Markdown):
    what is there, then each new piece as it arrives. Until the first words the stream stays
    open while the model reads its prompt, so they show the moment they come; after them it
    ends when nothing new came for IDLE_S (the page then polls again). It also ends when the
    run ends or finishes a step (`going_on` turns False: the page then shows how far it got),
    another model call starts, the user clicked something (`interrupted`: Streamlit holds a
    click on Cancel until the stream ends), or after MAX_STREAM_S. Where a click cannot be seen
    (`interrupted` says None) it never waits more than IDLE_S for words. `tick` is called with
    what the run has written on every look (the page's figures count along). A call of a
    `finished` (node, visit) is not written again: its text is a finished step's (a draft shown
    apart), and the box waits for the next call."""
    sent, started, last = 0, time.monotonic(), time.monotonic()
    call = None
    while True:
        now = buffers().get(run_id)
        if tick is not None:
            tick(now)
        if now is not None and (now.node_id, now.visit) in finished:
            now = None
        if now is not None:
            if call is None:
                call = now.calls
                caption.caption(f"Writing: {inert.code(now.node_id)} (visit {now.visit}) {CURSOR}")
            elif now.calls != call:
                return
            if len(now.text) > sent:
                yield inert.escape(now.text[sent:])
                sent, last = len(now.text), time.monotonic()
        t, user = time.monotonic(), interrupted()
        if user or t - started > MAX_STREAM_S or not going_on():
            return
        if (sent or user is None) and t - last > IDLE_S:
            return
        time.sleep(STREAM_TICK_S)


def live_answer(run: RunInfo, steps: Sequence[StepEvent], loaded: bool,
                going_on: Callable[[], bool],
                tick: Callable[[Streamed | None], None] | None = None) -> None:
    """The live box while the run goes on: what the model writes, streamed as it comes while
    `going_on` (the run at the same step), titled as what it is (a draft of the answer, round k,
    or the model at other work), the earlier drafts below it; else why it waits (the model
    loading on the first run). `tick`: see `_pieces`."""
    head = st.empty()
    now = buffers().get(run.id)
    done = {(s.node_id, s.visit) for s in steps}
    writing = [now.node_id] if now is not None and (now.node_id, now.visit) not in done \
        else runview.next_nodes(run.spec, list(steps))
    head.subheader(live_title(run.spec, steps, writing))
    earlier = drafts(run.spec, steps)
    with st.container(border=True, key=K.ANSWER_BOX):
        if not loaded and now is None:
            st.info(LOADING, icon=":material/hourglass_top:")
        else:
            caption = st.empty()
            caption.caption("Waiting for the model's first words...")
            body = st.empty()
            text, titled = "", False

            def look(seen: Streamed | None) -> None:
                nonlocal titled
                if seen is not None and not titled and (seen.node_id, seen.visit) not in done \
                        and seen.node_id not in writing:
                    head.subheader(live_title(run.spec, steps, [seen.node_id]))
                    titled = True
                if tick is not None:
                    tick(seen)
            for piece in _pieces(run.id, going_on, caption, tick=look, finished=done):
                text += piece
                body.markdown(text + CURSOR)
            if text:
                body.markdown(text)
        if earlier:
            with st.expander(f"Earlier drafts ({len(earlier)})"):
                _draft_list(earlier)


def _draft_list(found: Sequence[Draft]) -> None:
    for d in found:
        st.caption(f"Draft (round {d.round}) · {inert.code(d.node_id)} (visit {d.visit})")
        inert.text(d.text or "(empty)")


def question_head(run: RunInfo, steps: Sequence[StepEvent]) -> None:
    """The question the answer was computed from, quoted, and under it the working memory edited
    at a breakpoint (`edits_notice`): a question changed at a pause is shown as changed, never
    the one first asked alone above an answer to the new one."""
    st.markdown(inert.quote(asked_question(run, steps)))
    edits_notice(pause_edits(steps))


def edit_line(edit: PauseEdit) -> str:
    """One edit in words: the key, where (the step, the node the run went on to), old -> new."""
    where = f"before {inert.code(edit.node)}" if edit.node else "not run on yet"
    return (f"{inert.code(edit.key)} at step {edit.step}, {where}: "
            f"{inert.code(short_value(edit.old))} → {inert.code(short_value(edit.new))}")


def edits_notice(edits: Sequence[PauseEdit]) -> None:
    """Which working-memory keys a user edited while the run was paused at a breakpoint, each
    with its old and new value and the step: the run went on from the edited memory."""
    if not edits:
        return
    lines = "\n".join(f"- {edit_line(e)}" for e in edits)
    st.info("Working memory edited at a breakpoint: the steps after the edit run on the new "
            "values.\n"
            + lines, icon=":material/edit_note:")


def final_answer(run: RunInfo, expected: Sequence[str] | None,
                 steps: Sequence[StepEvent] = ()) -> None:
    """The stored answer, and right or wrong when the question came from a dataset; the drafts
    written on the way, when there were several, apart under it."""
    st.subheader("Answer")
    with st.container(border=True, key=K.ANSWER_BOX):
        if run.record.answer:
            inert.text(run.record.answer)
        else:
            st.caption("(no answer)")
        cut_notice(runview.cut_answer(run, list(steps)))
        written = drafts(run.spec, steps)
        if len(written) > 1:
            with st.expander(f"Drafts written on the way ({len(written)})"):
                _draft_list(written)
    grade = grade_answer(run.record.answer or "", expected or [])
    if grade is not None:
        said = " | ".join(inert.escape(a) for a in grade.expected)
        figures = f"exact match {grade.exact:.0f}, token F1 {grade.f1:.2f}"
        if grade.right:
            st.success(f"Right: the answer contains the expected answer ({said}); {figures}.",
                       icon=":material/check_circle:")
        else:
            st.error(f"Wrong: the expected answer ({said}) is not in it; {figures}.",
                     icon=":material/cancel:")


def cut_notice(cut: runview.CutAnswer | None) -> None:
    """Under an answer the model was stopped in: which limit stopped it and where to raise it."""
    if cut is None:
        return
    node = inert.code(cut.node_id)
    if cut.limit is not None:
        st.warning(f"Cut at the token limit: the model stopped after {cut.limit} tokens, the "
                   f"`max_tokens` of node {node}, so the answer may end mid-sentence. Raise it "
                   f"in the Editor (select node {node}: **Max Tokens**), or for one run under "
                   f"**Model settings for this run** ({inert.escape(cut.node_id)} · max_tokens).",
                   icon=":material/content_cut:")
    else:
        st.warning(f"Cut where the model's context filled: node {node} wrote {cut.tokens} "
                   "tokens and the prompt took the rest, so the answer may end mid-sentence. "
                   "Raise **Context (tokens)** on the Settings page, or show the model fewer "
                   "or shorter passages.",
                   icon=":material/content_cut:")


def totals_panel(figures: dict[str, Any], per_row: int = 3) -> None:
    """The run's totals (runview.totals) as metrics, `per_row` to a row so that no label or
    figure is cut ("2...") in a narrow column, each with what it counts as its help."""
    items = list(figures.items())
    for i in range(0, len(items), per_row):
        cols = st.columns(per_row)
        for col, (name, value) in zip(cols, items[i:i + per_row]):
            col.metric(name, value, help=runview.TOTALS_HELP.get(name))


def cited(run: RunInfo, steps: list[StepEvent]) -> None:
    """The passages the answer cites, the first one open."""
    passages = runview.cited_passages(run, steps)
    if passages and not runview.model_cited(steps):
        st.caption("The answer cites no passage: the model wrote no [n] mark.")
    elif passages:
        st.markdown("**Cited passages**")
        for i, d in enumerate(passages, 1):
            title = f"[{i}] " + inert.escape(f"{d['id']}"
                                             + (f" · {d['title']}" if d["title"] else ""))
            with st.expander(title, expanded=(i == 1)):
                if d["found"]:
                    provenance.caption(d)
                    inert.text(d["text"])
                    if d["score"] is not None:
                        st.caption(f"score {runview.rounded(d['score'])}")
                else:
                    st.caption("Not in the run's memory or retrievals.")
    elif run.record.status == "ok":
        st.caption("The answer cites no passage.")


def retrieved(run: RunInfo) -> None:
    """The passages the run ended with in working memory, each with where it came from, in one
    closed expander (the cited ones are a subset; a model that wrote no [n] mark cites none)."""
    passages = runview.retrieved_passages(run)
    if not passages:
        return
    with st.expander(f"Retrieved passages ({len(passages)})"):
        for i, d in enumerate(passages, 1):
            score = f" · score {runview.rounded(d['score'])}" if d["score"] is not None else ""
            st.markdown(f"**{i}.** {inert.code(d['id'])}"
                        + (f" · {inert.escape(d['title'])}" if d["title"] else "") + score)
            provenance.caption(d)
            inert.text(str(d["text"])[:300] + ("…" if len(str(d["text"])) > 300 else ""))


def steps_table(steps: list[StepEvent]) -> None:
    """The steps finished so far (the same table while running and after the end)."""
    st.markdown(f"**Steps** ({len(steps)})")
    if steps:
        st.dataframe(runview.step_rows(steps), hide_index=True, width="stretch")
    else:
        st.caption("No step has finished yet.")
