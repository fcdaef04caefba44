"""The Optuna study that picks the sampled candidates, asked in waves and told each result.

The hand-written flows race with a first wave of sampled candidates (about a third of those
`max_candidates` leaves); when a wave's race ends, each of its candidates is told two
objectives, its search score (up: F1 or the search's objective) and its tokens per question
(down) — a dropped one its figures on the questions it reached — and the next wave is asked
of a study that knows them (TPE; random until the first wave is told), while candidates and
budget remain.

Every ask is kept in the search state as a `Trial`: its params, the candidate it gave (or the
one it duplicates: a point that builds a flow already taken is never evaluated twice, it is told
that candidate's figures) and, once told, its values. Before each wave the study is rebuilt from
those records (`create_trial` + `add_trial`) with a sampler seeded by the space's seed and the
number of records, so a search killed and resumed asks exactly what an uninterrupted one would.
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..spec import FlowSpec
from .candidates import Candidate, build_spec, identity, normalise
from .space import SearchSpace, axis_values

if TYPE_CHECKING:
    from optuna import Study

WAVES = 3          # the sampled candidates come in (up to) this many waves
#: the objectives: search score (F1 or the search's objective) up, tokens per question down
DIRECTIONS: list[Literal["maximize", "minimize"]] = ["maximize", "minimize"]


@dataclass
class Trial:
    """One ask: the params Optuna gave, the candidate they built (cid) and, once told, the
    values [score, tokens per question]."""

    params: dict[str, Any]
    cid: str
    wave: int
    values: list[float] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Trial:
        return cls(dict(d["params"]), str(d["cid"]), int(d["wave"]),
                   None if d.get("values") is None else [float(v) for v in d["values"]])


def wave_size(space: SearchSpace) -> int:
    """Sampled candidates asked per wave (0 when the hand-written flows fill max_candidates)."""
    left = space.max_candidates - len(space.flows)
    return max(1, math.ceil(left / WAVES)) if left > 0 else 0


def distributions(space: SearchSpace) -> dict[str, Any]:
    """One categorical distribution per choice: flow, model, each operator and param axis."""
    from optuna.distributions import CategoricalDistribution as Cat
    dists: dict[str, Any] = {"flow": Cat(space.flows), "model": Cat(space.models)}
    for i, ax in enumerate(space.operators):
        dists[f"o{i}"] = Cat(ax.choices)
    for i, pax in enumerate(space.params):
        dists[f"p{i}"] = Cat(list(range(len(axis_values(pax)))))
    return dists


def rebuild(space: SearchSpace, trials: list[Trial]) -> Study:
    """A fresh study holding every recorded trial (told: COMPLETE with its values; never told:
    FAIL), its sampler seeded by the space's seed and how many trials there are."""
    import optuna
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    seed = int(hashlib.sha1(f"{space.seed}/{len(trials)}".encode()).hexdigest()[:8], 16)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=max(1, wave_size(space)))
    study = optuna.create_study(directions=DIRECTIONS, sampler=sampler)
    dists = distributions(space)
    for t in trials:
        state = optuna.trial.TrialState.COMPLETE if t.values else optuna.trial.TrialState.FAIL
        study.add_trial(optuna.trial.create_trial(state=state, values=t.values,
                                                  params=t.params, distributions=dists))
    return study


def ask_wave(space: SearchSpace, flows: Mapping[str, FlowSpec], trials: list[Trial],
             taken: Mapping[str, str], known: Mapping[str, list[float]], n: int, first_cid: int
             ) -> tuple[list[tuple[str, Candidate, FlowSpec]], list[Trial]]:
    """Up to `n` new candidates (cid, candidate, spec) numbered from `first_cid`, and the trials
    asked for them. `taken` maps the identity key of each candidate so far to its cid, `known`
    the cids with figures to theirs: a point that builds a taken flow is recorded against it
    (told its figures at once when known) and not evaluated again."""
    study = rebuild(space, trials)
    wave = 1 + max((t.wave for t in trials), default=0)
    seen = dict(taken)
    out: list[tuple[str, Candidate, FlowSpec]] = []
    asked: list[Trial] = []
    dists = distributions(space)
    for _ in range(max(50, 20 * n)):
        if len(out) >= n:
            break
        trial = study.ask(dists)
        flow = str(trial.params["flow"])
        cand = normalise(space, flows, flow, str(trial.params["model"]), trial.params)
        spec = build_spec(space, flows[flow], cand)
        key = identity(spec, cand.model)
        cid = seen.get(key)
        if cid is None:
            cid = seen[key] = f"c{first_cid + len(out):02d}"
            out.append((cid, cand, spec))
        values = known.get(cid)
        if values:                        # a duplicate of a told candidate: it knows the answer
            study.tell(trial, values)
        asked.append(Trial(dict(trial.params), cid, wave, values))
    return out, asked


def tell(trials: list[Trial], figures: Callable[[str], list[float] | None]) -> int:
    """Give each trial not yet told the figures of its candidate ([score, tokens per question], or
    None while it has none); returns how many were told."""
    n = 0
    for t in trials:
        if t.values is None:
            t.values = figures(t.cid)
            n += t.values is not None
    return n
