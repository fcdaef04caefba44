"""The studio's Streamlit settings: no file watcher in the studio a user runs (issue 29, item 10)."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_studio_watches_no_files():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["fileWatcherType"] == "none"
    assert config["server"].get("runOnSave", False) is False

