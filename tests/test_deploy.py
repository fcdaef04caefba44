"""deploy/compose.yaml and the settings it mounts hang together (no container engine runs on these
machines, so the file is checked structurally here: services, dependencies, ports, the token)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlparse

import yaml

from flowkit.runtime.resources import Settings

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"


def _compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_every_service_is_built_or_pulled_and_dependencies_exist() -> None:
    services = _compose()["services"]
    assert set(services) == {"studio", "llm", "chroma", "db"}
    for name, svc in services.items():
        assert "image" in svc or "build" in svc, name
        for dep in svc.get("depends_on", {}):
            assert dep in services, (name, dep)
    assert services["db"]["healthcheck"]["test"][0] == "CMD-SHELL"


def test_only_the_studio_is_published_on_loopback_and_it_needs_a_token() -> None:
    services = _compose()["services"]
    published = {n: s["ports"] for n, s in services.items() if "ports" in s}
    assert published == {"studio": ["127.0.0.1:8501:8501"]}
    token = services["studio"]["environment"]["FLOWKIT_STUDIO_TOKEN"]
    assert re.fullmatch(r"\$\{FLOWKIT_STUDIO_TOKEN:\?.+\}", token)     # compose refuses without it


def test_the_mounted_settings_point_at_the_services() -> None:
    settings = Settings.from_dict(json.loads((DEPLOY / "settings.json").read_text()))
    services = _compose()["services"]
    llm = urlparse(settings.llm.base_url)
    assert settings.llm.backend == "openai" and llm.hostname == "llm"
    assert str(llm.port) in services["llm"]["expose"]
    assert settings.chroma_host == "chroma" and str(settings.chroma_port) in services["chroma"]["expose"]
    db = urlparse(settings.database_url)
    assert db.hostname == "db" and db.path.lstrip("/") == services["db"]["environment"]["POSTGRES_DB"]
    mounts = services["studio"]["volumes"]
    assert "./settings.json:/data/settings.json:ro" in mounts
