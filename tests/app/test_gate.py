"""The access gate (AppTest on app.py): with FLOWKIT_STUDIO_TOKEN set nothing but the token box
renders until the session gives the right token; without it the studio opens as before. The Docker
entrypoint refuses to start without the token; the studio's config listens on localhost."""
from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.common import gate_panel

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token-ä"


def _app() -> AppTest:
    return AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)


def test_token_matches_is_exact() -> None:
    assert gate_panel.token_matches(TOKEN, TOKEN)
    assert not gate_panel.token_matches(TOKEN + " ", TOKEN)
    assert not gate_panel.token_matches("", TOKEN)


def test_without_a_token_the_studio_opens(ws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(gate_panel.TOKEN_ENV, raising=False)
    at = _app().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Flows"]
    assert all(w.key != gate_panel.INPUT_KEY for w in at.text_input)


def test_with_a_token_nothing_renders_until_it_is_given(ws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gate_panel.TOKEN_ENV, TOKEN)
    at = _app().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["flowkit studio"]      # not the Flows page
    assert not at.sidebar.markdown                                # nor the sidebar
    at.text_input(key=gate_panel.INPUT_KEY).input("wrong").run()
    assert [e.value for e in at.error] == ["Wrong token."]
    assert [t.value for t in at.title] == ["flowkit studio"]
    at.text_input(key=gate_panel.INPUT_KEY).input(TOKEN).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Flows"]
    at.run()                                                      # once per session
    assert [t.value for t in at.title] == ["Flows"]
    assert _app().run().title[0].value == "flowkit studio"        # a new session asks again


def test_docker_entrypoint_refuses_without_a_token(tmp_path: Path) -> None:
    out = subprocess.run(["sh", str(ROOT / "docker-entrypoint.sh")], cwd=tmp_path, check=False,
                         env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=30)
    assert out.returncode == 64
    assert "FLOWKIT_STUDIO_TOKEN" in out.stderr
    assert 'CMD ["sh", "./docker-entrypoint.sh"]' in (ROOT / "Dockerfile").read_text()


def test_config_listens_on_localhost() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "localhost"
    assert config["server"]["headless"] is True
