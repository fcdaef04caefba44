"""Ready-made flows: one FlowSpec JSON file per template, built only from catalog operators."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import NotFoundError
from ..spec import FlowSpec, loads


def _dir() -> Path:
    return Path(str(resources.files(__package__)))


def names() -> list[str]:
    """Template names (file stems), sorted."""
    return sorted(p.stem for p in _dir().glob("*.json"))


def load_template(name: str) -> FlowSpec:
    """A template's FlowSpec by name."""
    path = _dir() / f"{name}.json"
    if not path.is_file():
        raise NotFoundError(f"no template '{name}'; templates: {', '.join(names())}")
    return loads(path.read_text(encoding="utf-8"), source=f"template {name}")


def all_templates() -> dict[str, FlowSpec]:
    return {n: load_template(n) for n in names()}
