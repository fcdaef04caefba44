"""Where a search stands, kept in a JSON file beside the space so a killed search resumes.

`<space>.search-<id>.json` holds the candidates (what each is, raced how far, dropped why, the
saved flow version), Optuna's trials (what each wave asked and was told, see `study`), the budget
spent and the phase (race, confirm, done). The answers themselves
are the evaluations' runs in the workspace database: a resumed search finds them there and runs
only what is missing. The id is derived from the space's content, the dataset, the knowledge base
and the two splits and the data directory, so another command starts another file.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import jsonread
from ..errors import FlowkitError, SpecError, short
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


@dataclass
class SearchState:
    """A search's progress: candidates, trials, budget, phase and the confirmation figures."""

    search_id: str
    phase: str = "race"                 # race | confirm | done
    race_status: str = ""               # done | budget | stopped
    entries: list[Entry] = field(default_factory=list)
    budget: Budget = field(default_factory=lambda: Budget(0))
    confirm: dict[str, Any] = field(default_factory=dict)
    trials: list[Trial] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"search_id": self.search_id, "phase": self.phase,
                "race_status": self.race_status,
                "entries": [e.to_dict() for e in self.entries],
                "budget": vars(self.budget), "confirm": self.confirm,
                "trials": [t.to_dict() for t in self.trials]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SearchState:
        return cls(str(d["search_id"]), str(d.get("phase", "race")),
                   str(d.get("race_status", "")),
                   [Entry.from_dict(e) for e in d.get("entries", [])],
                   Budget(**d.get("budget", {"calls": 0})), dict(d.get("confirm") or {}),
                   [Trial.from_dict(t) for t in d.get("trials", [])])


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
