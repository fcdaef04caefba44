"""What the Compare page's Judges section shows, as plain data: the grader models to pick from,
each judge score as a cell ("PPI 72.0 [61.2, 80.3]" with labels, "58.0 [50.1, 66.0] uncorrected"
without), the paired difference against the baseline, what the judge was worth (its PPI++ weight
and effective number of labels), the line on how many labels there are and how much they
narrowed the interval, and the judge's reliability card in words. No Streamlit here."""
from __future__ import annotations

import math
from typing import Any

from flowkit.eval.formatting import MIN_LABELS, judge_interval, judge_weight_words
from flowkit.eval.pairwise import WinRate, win_lines
from flowkit.eval.reliability import ReliabilityCard
from flowkit.eval.report import JudgeScore
from service.grading import LABEL_WORDS, JudgedReport, label_words
from service.modelchoice import DEFAULT
from service.passage_labels import METRIC as CONTEXT_RELEVANCE
from service.settings import PACKAGED

#: The model picker's entry for "a .gguf file on disk" (its path is typed beside it).
OTHER = "__gguf__"
UNLABELLED = "unlabelled"
LABEL_METRICS = tuple(LABEL_WORDS)


def model_options() -> list[str]:
    """'default' (the workspace's own model), every packaged model id, then a .gguf path."""
    return [DEFAULT, *PACKAGED, OTHER]


def model_option_label(option: str) -> str:
    if option == DEFAULT:
        return "default (the studio's model)"
    if option == OTHER:
        return "a .gguf file (path)"
    return f"{option} ({PACKAGED[option].name})" if option in PACKAGED else option


def chosen_model(option: str | None, path: str | None) -> str:
    """The model `grading.grade` takes: '' for the default, a packaged id, or the typed path."""
    if option == OTHER:
        return (path or "").strip()
    return "" if option in (None, DEFAULT) else option


def score_cell(jf: JudgeScore) -> str:
    """'PPI 72.0 [61.2, 80.3]' with labels, '58.0 [50.1, 66.0] uncorrected' without (in %;
    flowkit.eval.formatting.judge_interval)."""
    text = judge_interval(jf.estimate, labelled=jf.corrected)
    if text == "-":
        return text
    return f"PPI {text}" if jf.corrected else f"{text} uncorrected"


def delta_cell(jf: JudgeScore, baseline: str) -> str:
    """The paired difference against the baseline, marked PPI (some pairs labelled) or
    uncorrected; * when its interval excludes 0."""
    if jf.flow == baseline:
        return "baseline"
    text = judge_interval(jf.vs_baseline, labelled=jf.vs_corrected, difference=True)
    if text == "-":
        return text
    return f"PPI {text}" if jf.vs_corrected else f"{text} uncorrected"


def criteria_lines(text: str | None) -> list[str]:
    """The criteria typed in the box: one per non-empty line, spaces squeezed, each once."""
    lines = (" ".join(line.split()) for line in (text or "").splitlines())
    return list(dict.fromkeys(line for line in lines if line))


def judge_name(grader: str, texts: dict[str, str] | None = None) -> str:
    """A judge as the page names it: a built-in's name, a criterion of yours by its words
    ('criterion "the answer names the command"'), or its grader name when they are unknown."""
    text = (texts or {}).get(grader)
    return f'criterion "{text}"' if text else grader


def score_rows(reports: list[JudgedReport], texts: dict[str, str] | None = None
               ) -> list[dict[str, Any]]:
    """One row per judge, judge model and flow: the score, the labels, the difference against
    the baseline and what the judge was worth in the score (`judge_weight_words`)."""
    return [{"judge": judge_name(r.grader, texts), "judge model": r.model, "flow": f.flow, "score (%)": score_cell(f),
             "labels": f.labels, "vs baseline (points)": delta_cell(f, r.baseline),
             "judge weight": judge_weight_words(f.weight)}
            for r in reports for f in r.flows]


def labels_line(r: JudgedReport, texts: dict[str, str] | None = None) -> str:
    """How many labels there are for this judge and how much they narrowed the interval: the
    PPI++ interval's width against the interval from the labels alone, and what the judge was
    worth, per labelled flow (plain text: flow and model names are the user's)."""
    n = sum(f.labels for f in r.flows)
    head = f"{judge_name(r.grader, texts)} on {r.model}: "
    if not n:
        what = ("every passage an answer read (relevant or not)" if r.grader == CONTEXT_RELEVANCE
                else "answers")
        return (head + "no labels yet, so the scores are the judge's own (uncorrected). Label "
                f"{what} in the side-by-side view below: a few turn them into PPI++ estimates with "
                "intervals that hold whatever the judge's mistakes.")
    parts = []
    for f in r.flows:
        if f.labels and f.labels < MIN_LABELS:
            parts.append(f"{f.flow}: 1 label, too few for an interval (label {MIN_LABELS} or "
                         "more)")
            continue
        if not f.labels or f.labels_only_width is None or math.isnan(f.width):
            continue
        # a score lies in 0..100: an interval that reaches past either end is read, and its
        # width told, up to there (judge_interval shows it so), never "130 points wide"
        low, high = 100 * max(f.estimate.low, 0.0), 100 * min(f.estimate.high, 1.0)
        ppi, alone = high - low, min(100 * f.labels_only_width, 100.0)
        if alone > 0:
            change = f"{100 * (1 - ppi / alone):.0f}% narrower" if ppi <= alone \
                else f"{100 * (ppi / alone - 1):.0f}% wider"
        else:
            change = "the labels alone agree entirely"
        parts.append(f"{f.flow}: its true score lies between {low:.0f} and {high:.0f}, a span "
                     f"of {ppi:.0f} of the 100 points, against {alone:.0f} from its "
                     f"{f.labels} label{'s' if f.labels != 1 else ''} alone ({change}; judge "
                     f"{judge_weight_words(f.weight)})")
    return (head + f"{n} label{'s' if n != 1 else ''}; with the judge's verdicts, 95 times in "
            "100: " + "; ".join(parts) + ".")


def card_line(r: JudgedReport) -> str:
    """The judge's reliability card in words (its agreement with your labels and what to do
    about it: `flowkit.eval.reliability`), one line; '' without a card."""
    return " · ".join(r.card.lines()) if r.card else ""


def pairwise_line(rate: WinRate, card: ReliabilityCard) -> str:
    """One pairwise judge's win rate, counts and flips (`pairwise.win_lines`), and where there
    are pairwise labels its reliability card's agreement lines, in words."""
    agreement = card.lines()[:2] if card.labels else []
    return " · ".join([f"pairwise judge on {rate.model}", *win_lines(rate), *agreement])


def label_options(metric: str) -> list[str]:
    """The choices of a label radio: unlabelled, then the words for 1 and 0."""
    yes, no = label_words(metric)
    return [UNLABELLED, yes, no]


def label_value(metric: str, option: str | None) -> float | None:
    """The stored value of a label radio's choice (None: no label)."""
    yes, no = label_words(metric)
    return {yes: 1.0, no: 0.0}.get(option or UNLABELLED)


def label_option(metric: str, value: float | None) -> str:
    yes, no = label_words(metric)
    return UNLABELLED if value is None else yes if value >= 0.5 else no


def verdict_line(grader: str, model: str, score: float | None, parsed: bool,
                 texts: dict[str, str] | None = None) -> str:
    """One verdict in the per-question view: judge, model, verdict, and the model's own words."""
    if score is None:
        verdict = "no verdict"
    elif grader == "context_relevance":
        verdict = f"{100 * score:.0f}% of the passages help"
    else:
        verdict = "yes" if score >= 1 else "no" if score <= 0 else "unclear (scored 0.5)"
    mark = "" if parsed else " · unparsed"
    return f"{judge_name(grader, texts)} ({model}): {verdict}{mark}"
