"""The studio's Streamlit settings: no file watcher in the studio a user runs (issue 29, item 10)."""
from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_studio_watches_no_files():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["fileWatcherType"] == "none"
    assert config["server"].get("runOnSave", False) is False



def test_the_server_upload_limit_is_the_one_service_uploads_states():
    """Streamlit refuses uploads over server.maxUploadSize (its default, 200, was what every
    uploader's caption said); service/uploads.py names the real limits and config.toml the same."""
    from service.uploads import FLOW_UPLOAD_MB, KB_UPLOAD_MB, SERVER_UPLOAD_MB
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == SERVER_UPLOAD_MB
    assert max(FLOW_UPLOAD_MB, KB_UPLOAD_MB) <= SERVER_UPLOAD_MB


def test_the_flow_uploader_states_the_flow_file_limit():
    """The flow reader refuses files over 2,000,000 bytes: the uploader says 2 MB (whole MB of
    2**20 bytes, the smallest that lets every readable file through)."""
    from flowkit.spec import MAX_FILE_BYTES
    from service.uploads import FLOW_UPLOAD_MB
    assert FLOW_UPLOAD_MB == 2
    assert (FLOW_UPLOAD_MB - 1) * 2**20 < MAX_FILE_BYTES <= FLOW_UPLOAD_MB * 2**20
