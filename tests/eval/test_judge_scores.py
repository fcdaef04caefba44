"""A judge's score of each flow from verdicts and labels, as a pure function (no workspace, no
storage): PPI++ where answers are labelled (with the judge's weight), uncorrected where not, paired
against the first flow."""
from __future__ import annotations

import math

from flowkit.eval.judge_scores import judge_scores
from flowkit.eval.ppi import uncorrected
from flowkit.eval.ppi_pp import judge_weight, judge_weight_paired, ppi_pp_mean, ppi_pp_paired

SCORES = {"base": {f"q{i}": float(i % 2) for i in range(10)},
          "other": {f"q{i}": float(i % 3 == 0) for i in range(10)}}


def test_labelled_flows_get_ppi_and_the_rest_the_judges_own_mean() -> None:
    labels = {"base": {"q0": 1.0, "q1": 1.0, "q2": 0.0}}
    base, other = judge_scores(["base", "other"], SCORES, labels, grader="correctness", model="m")
    s = SCORES["base"]
    assert (base.flow, base.grader, base.model, base.corrected, base.labels) == \
        ("base", "correctness", "m", True, 3)
    rest = [v for q, v in s.items() if q not in labels["base"]]
    pairs = [(s[q], y) for q, y in labels["base"].items()]
    assert base.estimate == ppi_pp_mean(rest, pairs, metric="correctness", flow="base")
    assert base.weight == judge_weight(rest, pairs) and base.weight is not None
    alone = ppi_pp_mean(rest, pairs, weight=0.0)
    assert base.labels_only_width == alone.high - alone.low and base.vs_baseline is None
    assert math.isclose(base.raw_mean, 0.5)
    assert not other.corrected and other.labels == 0 and other.weight is None
    assert other.estimate == uncorrected(list(SCORES["other"].values()), metric="correctness",
                                         flow="other")
    # no question labelled for both flows: the paired difference is the judge's own
    assert other.vs_baseline is not None and not other.vs_corrected and other.vs_weight is None
    assert other.vs_baseline.baseline == "base" and other.vs_baseline.n == 10


def test_a_pair_labelled_for_both_flows_corrects_the_difference() -> None:
    labels = {"base": {"q0": 1.0, "q1": 0.0}, "other": {"q0": 1.0, "q1": 1.0}}
    _, other = judge_scores(["base", "other"], SCORES, labels, grader="g", model="m")
    assert other.vs_corrected
    assert other.vs_baseline == ppi_pp_paired(SCORES["other"], SCORES["base"], labels["other"],
                                              labels["base"], metric="g", flow="other",
                                              baseline="base")
    assert other.vs_weight == judge_weight_paired(SCORES["other"], SCORES["base"],
                                                  labels["other"], labels["base"])
    assert other.to_dict()["vs_judge_weight"] == other.vs_weight.to_dict()


def test_a_flow_without_verdicts_is_missing_not_an_error() -> None:
    (only,) = judge_scores(["f"], {}, {}, grader="g", model="m")
    assert only.estimate.n == 0 and math.isnan(only.raw_mean) and only.vs_baseline is None


def test_a_judge_interval_is_cut_to_a_share_and_one_label_is_not_shown_as_exact() -> None:
    from flowkit.eval.formatting import TOO_FEW, judge_interval
    from flowkit.eval.metrics import PairedDiff
    wide = PairedDiff("g", "f", "", 5, 0.9, 0.7, 1.1)
    assert judge_interval(wide, labelled=True) == "90.0 [70.0, 100.0]"
    one = PairedDiff("g", "f", "", 1, 0.8, 0.8, 0.8)           # one label: no spread seen
    assert judge_interval(one, labelled=True) == f"80.0 ({TOO_FEW})"
    assert judge_interval(one, labelled=False) == "80.0 [80.0, 80.0]"   # a judge's own mean
    diff = PairedDiff("g", "f", "b", 6, 0.5, 0.2, 1.3)
    assert judge_interval(diff, labelled=True, difference=True) == "+50.0 [+20.0, +100.0] *"
    assert judge_interval(None, labelled=False) == "-"
    assert judge_interval(PairedDiff("g", "f", "", 0, math.nan, math.nan, math.nan),
                          labelled=True) == "-"
