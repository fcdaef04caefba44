"""Where a search stands, kept in a JSON file beside the space so a killed search resumes.

`<space>.search-<id>.json` holds the candidates (what each is, raced how far, dropped why, the
saved flow version), Optuna's trials (what each wave asked and was told, see `study`), the budget
spent, the phase (race, confirm, done) and the quality objective (F1, or a judge and its model:
a resumed search keeps it, and `check_objective` refuses to resume it on another). The answers themselves
are the evaluations' runs in the workspace database: a resumed search finds them there and runs
only what is missing. The id is derived from the space's content, the dataset, the knowledge base
and the two splits and the data directory, so another command starts another file.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import jsonread
from ..errors import FlowkitError, SpecError, short
from .objective import Objective
from .racing import Budget, Entry
from .study import Trial


def search_id(space_text: str, dataset: str, kb: str, search: str, confirm: str,
              where: str = "") -> str:
    """12 hex digits naming one search (the same command on the same data directory `where`
    gets the same id)."""
    key = json.dumps([space_text, dataset, kb, search, confirm, where])
    return hashlib.sha1(key.encode()).hexdigest()[:12]


def state_path(space_path: str | Path, sid: str) -> Path:
    """The state file beside the space file."""
    p = Path(space_path)
    return p.with_name(f"{p.stem}.search-{sid}.json")


@dataclass(frozen=True)
class Confirmation:
    """A candidate's figures on the confirmation questions: its mean `score` on the search's
    objective over `n` questions, tokens and seconds per question, and its paired difference in
    score from `vs` (the best hand-written flow there; itself for that flow) with the 95%
    interval [`low`, `high`]."""

    score: float
    n: int
    tokens: float
    seconds: float
    vs: str
    delta: float
    low: float
    high: float

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Confirmation:
        """The figures `asdict` wrote (a state saved before this record: the score under 'f1')."""
        return cls(float(d["score"] if "score" in d else d["f1"]), int(d["n"]),
                   float(d["tokens"]), float(d["seconds"]), str(d["vs"]), float(d["delta"]),
                   float(d["low"]), float(d["high"]))


@dataclass
class SearchState:
    """A search's progress: candidates, trials, budget, phase and the confirmation figures."""

    search_id: str
    phase: str = "race"                 # race | confirm | done
    race_status: str = ""               # done | budget | stopped
    entries: list[Entry] = field(default_factory=list)
    budget: Budget = field(default_factory=lambda: Budget(0))
    confirm: dict[str, Confirmation] = field(default_factory=dict)
    trials: list[Trial] = field(default_factory=list)
    #: what the race ranks on (`objective.names()`); a judge's model as asked ('' the
    #: workspace's) and as named beside its scores
    objective: str = "f1"
    judge_model: str = ""
    judge_label: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"search_id": self.search_id, "phase": self.phase,
                "race_status": self.race_status,
                "entries": [e.to_dict() for e in self.entries],
                "budget": self.budget.to_dict(),
                "confirm": {cid: asdict(c) for cid, c in self.confirm.items()},
                "trials": [t.to_dict() for t in self.trials],
                "objective": self.objective, "judge_model": self.judge_model,
                "judge_label": self.judge_label}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SearchState:
        return cls(str(d["search_id"]), str(d.get("phase", "race")),
                   str(d.get("race_status", "")),
                   [Entry.from_dict(e) for e in d.get("entries", [])],
                   Budget.from_dict(d.get("budget", {"calls": 0})),
                   {str(cid): Confirmation.from_dict(c)
                    for cid, c in (d.get("confirm") or {}).items()},
                   [Trial.from_dict(t) for t in d.get("trials", [])],
                   str(d.get("objective") or "f1"), str(d.get("judge_model") or ""),
                   str(d.get("judge_label") or ""))

    def quality(self) -> Objective:
        """The objective as one value: its name, judge model and how its scores are named."""
        return Objective(self.objective, self.judge_model, self.judge_label)

    def check_objective(self, objective: str, judge_model: str, path: Path | str) -> None:
        """Refuse to resume this search on another objective or judge model (its figures so far
        were scored on its own), naming both and the state file to delete to start again."""
        mine = (self.objective, self.judge_model if Objective(self.objective).is_judge else "")
        asked = (objective, judge_model if Objective(objective).is_judge else "")
        if mine == asked:
            return

        def said(o: str, m: str) -> str:
            return o + (f" --judge-model {m}" if m else "")
        raise FlowkitError(f"search {self.search_id} was started with --objective "
                           f"{said(*mine)} and cannot resume with --objective {said(*asked)}: "
                           f"its candidates were raced on {mine[0]}; run it again with "
                           f"--objective {said(*mine)}, or delete '{path}' to start it again "
                           f"on {asked[0]}")


#: The largest state file read (a search of 64 candidates writes well under 1 MB).
MAX_STATE_BYTES = 64 * 1024 * 1024


def load(path: Path) -> SearchState | None:
    """The stored state, or None when the search has not started. Read by the bounded reader
    (a regular file, size, depth, numbers, text); any damage is one FlowkitError."""
    if not path.exists():
        return None
    try:
        raw = jsonread.read_file(path, MAX_STATE_BYTES)
        data = jsonread.parse(jsonread.decode_utf8(raw, str(path)), str(path), max_depth=32,
                              max_string=MAX_STATE_BYTES)
        if not isinstance(data, dict):
            raise TypeError("not a JSON object")
        return SearchState.from_dict(data)
    except (SpecError, KeyError, TypeError, ValueError, AttributeError) as err:
        raise FlowkitError(f"cannot read the search state '{path}': {short(str(err))}; delete it "
                           "to start the search again") from None


def save(path: Path, state: SearchState) -> None:
    """Write the state atomically (a kill leaves the old or the new file, never half of one)."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.to_dict(), indent=1, default=str))
    os.replace(tmp, path)
