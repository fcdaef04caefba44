"""A pass/fail gate on an evaluation's report, for CI (`flowkit eval ... --fail-if COND`): each
condition names what fails the build, and is checked for every flow of the report.

Grammar (spaces around the words as shown; case does not matter for the words):

    METRIC OP NUMBER          a flow fails when its mean METRIC compares so: "f1 < 30"
    worse-than FLOW on METRIC a flow fails when it is worse than FLOW on METRIC beyond doubt

METRIC is one of em, f1, acc, recall, tokens, llm_calls, seconds (per question, as the report's
summary has them) or failed (the count of failed runs); OP one of <, <=, >, >=. Rates (em, f1,
acc, recall) are in % as every table shows them: "f1 < 30" is F1 below 30.0. A flow whose
METRIC has no value (recall without gold passages) is skipped, not failed.

"Worse beyond doubt" is the paired interval the report computes (`metrics.paired_bootstrap`: flow
minus FLOW on the questions both answered, 95% bootstrap interval) lying wholly on the worse side
of 0: below 0 for em, f1, acc and recall, above 0 for tokens, llm_calls and seconds (fewer is
better). A flow no different from FLOW, or one whose interval holds 0, passes; FLOW itself is not
checked against itself.

`parse` reads a condition or raises `GateError` naming it, so a command can refuse a condition
before any run starts; `check_flows` refuses a FLOW that is not one of the evaluation's; `check`
gives one `Outcome` per condition and flow.
"""
from __future__ import annotations

import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import FlowkitError
from .formatting import fmt, fmt_delta
from .metrics import METRICS, PAIRED, PairedDiff, paired_bootstrap
from .report import EvalReport

#: The metrics a condition may name: the summary's, and the count of failed runs.
GATE_METRICS = (*(m for m, _, _ in METRICS), "failed")
#: Metrics where more is better; for the rest (costs, failures) less is.
HIGHER_IS_BETTER = frozenset(m for m, _, higher in METRICS if higher)
_RATES = ("em", "f1", "acc", "recall")
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_OP_WORDS = {"<": "below", "<=": "at most", ">": "above", ">=": "at least"}
_THRESHOLD = re.compile(r"^\s*([a-z_][a-z0-9_]*)\s*(<=|>=|<|>)\s*([-+]?\d+(?:\.\d+)?)\s*$", re.I)
_WORSE = re.compile(r"^\s*worse-than\s+(\S+)\s+on\s+([a-z_][a-z0-9_]*)\s*$", re.I)


class GateError(FlowkitError):
    """A gate condition that cannot be read, or names a flow the evaluation does not have."""


@dataclass(frozen=True)
class Threshold:
    """'METRIC OP NUMBER': a flow fails when its METRIC (in the unit tables show) compares so."""

    text: str
    metric: str
    op: str
    value: float


@dataclass(frozen=True)
class WorseThan:
    """'worse-than FLOW on METRIC': a flow fails when its paired interval against `reference`
    lies wholly on the worse side of 0."""

    text: str
    reference: str
    metric: str


Condition = Threshold | WorseThan


@dataclass(frozen=True)
class Outcome:
    """One condition on one flow: `status` is 'passed', 'failed' or 'skipped' (no value to
    judge by); `message` says why in one line."""

    condition: Condition
    flow: str
    status: str
    message: str

    @property
    def failed(self) -> bool:
        return self.status == "failed"


def _hint(text: str, why: str) -> GateError:
    return GateError(f"--fail-if '{text}': {why}; write 'METRIC OP NUMBER' (\"f1 < 30\") or "
                     f"'worse-than FLOW on METRIC' (\"worse-than naive_rag on f1\"), METRIC one "
                     f"of {', '.join(GATE_METRICS)}, OP one of <, <=, >, >=")


def parse(text: str) -> Condition:
    """The condition `text` says, or GateError naming it and the grammar."""
    m = _WORSE.match(text)
    if m:
        metric = m.group(2).lower()
        if metric not in PAIRED and metric != "llm_calls":
            raise _hint(text, f"'{metric}' cannot be compared question by question (use "
                              f"{', '.join((*PAIRED, 'llm_calls'))})")
        return WorseThan(text.strip(), m.group(1), metric)
    m = _THRESHOLD.match(text)
    if not m:
        raise _hint(text, "not a condition")
    metric = m.group(1).lower()
    if metric not in GATE_METRICS:
        raise _hint(text, f"unknown metric '{m.group(1)}'")
    return Threshold(text.strip(), metric, m.group(2), float(m.group(3)))


def check_flows(conditions: Sequence[Condition], flows: Sequence[str]) -> None:
    """GateError when a 'worse-than FLOW' names no flow of `flows`."""
    for c in conditions:
        if isinstance(c, WorseThan) and c.reference not in flows:
            raise GateError(f"--fail-if '{c.text}': '{c.reference}' is not a flow of this "
                            f"evaluation ({', '.join(flows)})")


def _value(rep: EvalReport, flow: str, metric: str) -> float | None:
    s = rep.summaries[flow]
    raw = getattr(s, metric)
    if raw is None:
        return None
    return 100 * float(raw) if metric in _RATES else float(raw)


def _threshold(c: Threshold, rep: EvalReport, flow: str) -> Outcome:
    value = _value(rep, flow, c.metric)
    if value is None:
        return Outcome(c, flow, "skipped", f"{flow}: no {c.metric} to check (--fail-if '{c.text}')")
    shown = str(int(value)) if c.metric == "failed" else fmt(c.metric, getattr(
        rep.summaries[flow], c.metric))
    if _OPS[c.op](value, c.value):
        return Outcome(c, flow, "failed", f"{flow}: {c.metric} is {shown}, {_OP_WORDS[c.op]} "
                                          f"{c.value:g} (--fail-if '{c.text}')")
    return Outcome(c, flow, "passed", f"{flow}: {c.metric} is {shown}")


def _paired(rep: EvalReport, flow: str, c: WorseThan) -> PairedDiff:
    if c.reference == rep.baseline and c.metric in PAIRED:
        return rep.deltas[flow][PAIRED.index(c.metric)]
    return paired_bootstrap(rep.results[flow], rep.results[c.reference], c.metric)


def _worse(c: WorseThan, rep: EvalReport, flow: str) -> Outcome:
    d = _paired(rep, flow, c)
    if d.n == 0:
        return Outcome(c, flow, "skipped", f"{flow}: no question answered by both it and "
                                           f"{c.reference} (--fail-if '{c.text}')")
    worse = d.high < 0 if c.metric in HIGHER_IS_BETTER else d.low > 0
    diff = f"{c.metric} minus {c.reference}'s: {fmt_delta(d)} on {d.n} questions"
    if worse:
        return Outcome(c, flow, "failed", f"{flow}: worse than {c.reference}, {diff} "
                                          f"(--fail-if '{c.text}')")
    return Outcome(c, flow, "passed", f"{flow}: {diff}")


def check(conditions: Sequence[Condition], rep: EvalReport) -> list[Outcome]:
    """One outcome per condition and flow of `rep`, conditions in the order given, flows in the
    report's order ('worse-than FLOW' skips FLOW itself)."""
    check_flows(conditions, rep.flows)
    out = []
    for c in conditions:
        for flow in rep.flows:
            if isinstance(c, Threshold):
                out.append(_threshold(c, rep, flow))
            elif flow != c.reference:
                out.append(_worse(c, rep, flow))
    return out
