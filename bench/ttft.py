"""Time to the first answer token of a warm naive_rag run, and where it goes (not a test).

The run is what the Run page's job does (service.workspace.Workspace.run with on_token), on the
sample knowledge base with the real default model in its worker process, after one warm-up run.
Each question is asked once (the completion cache never answers). Per run:

- before the model: compile, the dense retrieval step (embed the question, query Chroma: its own
  time is retrieval_step_s) until its step event is stored;
- model to first token: the answer operator builds its prompt, the worker reads it (prefill)
  and writes the first piece;
- first token to end: the rest of the answer, the step stored.

Variants run side by side, alternating question by question (each workspace has its own model
worker), so both see the same load: `--variants base,batch1024` (LLMSettings fields after ':';
"base" is the settings as they are). The page adds its own wait on top (it polls the run every
0.5 s and streams within 50 ms): tests/e2e/test_run_page_e2e.py reports that figure.

With --browser, the same questions are also asked on the Run page of a studio (its own
FLOWKIT_HOME, Chromium at 1366x800), alternating with the in-process runs: the time from the
click on Run to the first answer word on the page, so the page's own share shows beside the
engine's.

With --first, the first run after the studio starts instead: a workspace opened on a data
folder with the sample KB already ingested, its model preloaded in the background as the studio
does (Resources.preload, where the code has it), one question asked --delay s later (the user
opening the Run page and typing), then a second, warm one. Each is timed from its submission.

Usage: python bench/ttft.py [--n 6] [--variants base,n_batch=256] [--browser] [--out FILE.json]
       python bench/ttft.py --first [--delay 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowkit.ingest import ensure_sample
from flowkit.run_request import RunHooks, RunRequest
from flowkit.templates import load_template
from flowkit.trace import RunEnd, RunStart, StepEvent
from service.workspace import Workspace


def questions() -> list[str]:
    """The sample set's questions (each on its own topic, so the passages differ run to run)."""
    path = Path(__file__).resolve().parent.parent / "flowkit" / "sample_kb" / "questions.jsonl"
    return [json.loads(line)["question"] for line in path.read_text().splitlines() if line.strip()]


class Clock:
    """Arrival times of a run's step events and its first streamed piece (monotonic s)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.steps: list[tuple[float, StepEvent]] = []
        self.first_piece: float | None = None

    def start(self, run: RunStart) -> None:
        pass

    def step(self, event: StepEvent) -> None:
        self.steps.append((time.monotonic(), event))

    def end(self, result: RunEnd) -> None:
        pass

    def on_token(self, node_id: str, visit: int, piece: str) -> None:
        if self.first_piece is None and piece.strip():
            self.first_piece = time.monotonic()


def workspace(root: Path, variant: str) -> Workspace:
    """A workspace on its own data folder with the sample KB; `variant` is "base" or LLMSettings
    fields, "field=value" joined by '+' (an empty value is False for a flag)."""
    ws = Workspace(root / variant.replace("=", "_").replace("+", "_"))
    if variant != "base":
        llm = ws.resources.settings.llm
        changes: dict[str, Any] = {}
        for part in variant.split("+"):
            key, value = part.split("=", 1)
            changes[key] = type(getattr(llm, key))(value)
        ws.resources.settings = replace(ws.resources.settings, llm=replace(llm, **changes))
    ensure_sample(ws.resources)
    return ws


def one_run(ws: Workspace, question: str) -> dict[str, float]:
    clock = Clock()
    end = ws.run(load_template("naive_rag"), RunRequest(question, kb="sample"),
                 RunHooks(sink=clock, on_token=clock.on_token, cache=None))
    done = time.monotonic()
    assert end.status == "ok", end
    retrieval, r_event = next((t, e) for t, e in clock.steps
                              if e.operator.startswith("retrieval."))
    answer = next(e for _, e in clock.steps if e.operator == "generation.answer")
    first = clock.first_piece or done
    return {"retrieval_step_s": r_event.ms / 1000, "before_model_s": retrieval - clock.t0,
            "model_to_first_s": first - retrieval,
            "first_token_s": first - clock.t0, "rest_s": done - first, "total_s": done - clock.t0,
            "prompt_tokens": float(sum(c.prompt_tokens for c in answer.llm_calls))}


ANSWER_BOX = ".st-key-run_answer_box"


def browser_run(page: Any, url: str, question: str) -> dict[str, float]:
    """One naive_rag run from the Run page: seconds from the click on Run to the first answer
    word shown, and to the run shown as ended."""
    import re

    from e2ekit import eventually, settle
    page.goto(f"{url}/run?flow=template:naive_rag")
    page.get_by_role("heading", name="Run", exact=True).wait_for(timeout=180_000)
    settle(page)
    box = page.locator("textarea[aria-label='Question']")
    box.fill(question)
    box.press("Control+Enter")
    settle(page)
    started = time.monotonic()
    page.get_by_role("button", name="Run ▶").click()

    def answer_word() -> bool:
        answer = page.locator(ANSWER_BOX)
        text = answer.inner_text() if answer.count() else ""
        body = re.sub(r"Writing:.*?\)|Waiting for the model's first words\.\.\.|Loading the "
                      r"model.*?\.\.\.|▌", "", text)
        return bool(re.search(r"\w", body))
    eventually(answer_word, timeout=600, what="the first answer word", every=0.02)
    first = time.monotonic() - started
    page.get_by_role("link", name="Open the replay").wait_for(timeout=600_000)
    return {"first_word_s": first, "shown_ended_s": time.monotonic() - started}


def first_run(delay_s: float) -> dict[str, dict[str, float]]:
    """The first run after the studio opens its workspace, and the warm run after it."""
    qs = questions()
    with tempfile.TemporaryDirectory() as tmp:
        setup = Workspace(Path(tmp))
        ensure_sample(setup.resources)          # ingested beforehand, as in a studio in use
        setup.close()
        opened = time.monotonic()
        ws = Workspace(Path(tmp))               # the studio starts
        preload = getattr(ws.resources, "preload", None)
        if callable(preload):
            preload()
        try:
            time.sleep(max(0.0, delay_s - (time.monotonic() - opened)))
            first = one_run(ws, qs[0])
            warm = one_run(ws, qs[1])
        finally:
            ws.close()
    report = {"first": first, "warm": warm}
    print(f"preload: {'yes' if callable(preload) else 'no (this code has none)'}; first run "
          f"asked {delay_s:g} s after the workspace opened")
    for name, r in report.items():
        print(f"{name:<6} first token {r['first_token_s']:6.2f} s (model to first "
              f"{r['model_to_first_s']:6.2f} s, before the model {r['before_model_s']:5.2f} s), "
              f"total {r['total_s']:6.2f} s")
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=6, help="questions per variant (after one warm-up)")
    ap.add_argument("--variants", default="base")
    ap.add_argument("--browser", action="store_true", help="also from the Run page in Chromium")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--first", action="store_true",
                    help="the first run after the studio starts, then a warm one")
    ap.add_argument("--delay", type=float, default=5.0,
                    help="--first: seconds from the workspace opening to the question")
    args = ap.parse_args()
    if args.first:
        result = first_run(args.delay)
        if args.out:
            args.out.write_text(json.dumps(result, indent=2))
        return
    variants = args.variants.split(",")
    rows: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    shown: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        page = None
        if args.browser:
            sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))
            from e2ekit import StudioServer, chromium, setup_sample
            home = Path(tmp) / "studio"
            setup_sample(home)
            url = stack.enter_context(StudioServer(home, timeout_s=180))
            page = stack.enter_context(chromium()).new_page(
                viewport={"width": 1366, "height": 800})
            page.set_default_timeout(120_000)
            browser_run(page, url, questions()[0])          # warm: the model loads
        spaces = {v: workspace(Path(tmp), v) for v in variants}
        try:
            for ws in spaces.values():
                one_run(ws, questions()[0])
            for q in questions()[1:args.n + 1]:
                for v, ws in spaces.items():          # alternating: the same load for each
                    rows[v].append(one_run(ws, q))
                if page is not None:
                    shown.append(browser_run(page, url, q))
        finally:
            for ws in spaces.values():
                ws.close()
    report: dict[str, Any] = {}
    keys = ("retrieval_step_s", "before_model_s", "model_to_first_s", "first_token_s", "rest_s", "total_s",
            "prompt_tokens")
    print(f"{'variant':<18}" + "".join(f"{k:>17} " for k in keys) + "   (medians)")
    for v, rs in rows.items():
        med = {k: statistics.median(r[k] for r in rs) for k in keys}
        report[v] = {"median": med, "runs": rs}
        print(f"{v:<18}" + "".join(f"{med[k]:>18.2f}" for k in keys))
    if shown:
        med = {k: statistics.median(r[k] for r in shown) for k in shown[0]}
        report["run page"] = {"median": med, "runs": shown}
        print(f"{'run page':<18}first answer word {med['first_word_s']:.2f} s, run shown ended "
              f"{med['shown_ended_s']:.2f} s (medians, from the click on Run)")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
