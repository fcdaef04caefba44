"""The studio's assets: the files in the top-level `assets/` folder, found the same way from a
checkout, an installed wheel and the Docker image.

    assets.path("logo.svg")          # the logo (st.logo) and assets.path("icon.svg") (page_icon)
    assets.module_look("retrieval")  # title, fill colour, accent colour, icon, glyph of a module
    assets.css("login")              # the text of assets/login.css

Where they are: in a checkout (and the Docker image, which copies `assets/` beside `studio/`) the
folder next to the `studio` package; in a wheel, pyproject's `[tool.setuptools.data-files]` puts
them under `<prefix>/share/flowkit/assets` (DATA_SUBDIR), which is where `asset_dir` looks next.
`FILES` lists every file the code reads; tests/app/test_assets.py checks that each is found and
that pyproject ships each. This module does not import Streamlit.
"""
from __future__ import annotations

import json
import sysconfig
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path

from flowkit.errors import ResourceError

#: Where a wheel installs the assets, relative to the install scheme's data directory.
DATA_SUBDIR = Path("share") / "flowkit" / "assets"
#: The file that marks an assets folder (every copy has it).
MARKER = "modules.json"
#: Every asset the code reads (screenshots are for the README only and are not shipped).
FILES: tuple[str, ...] = ("modules.json", "logo.svg", "icon.svg", "login.css")

_SOURCE = Path(__file__).resolve().parents[2] / "assets"


def candidates() -> list[Path]:
    """The folders `asset_dir` tries, in order: the checkout's, the install scheme's data
    directory, and where the installed distribution's record says its data files went."""
    out = [_SOURCE, Path(sysconfig.get_path("data")) / DATA_SUBDIR]
    try:
        files = metadata.files("flowkit") or []
    except metadata.PackageNotFoundError:
        files = []
    suffix = (DATA_SUBDIR / MARKER).as_posix()
    out += [Path(str(f.locate())).parent for f in files if f.as_posix().endswith(suffix)]
    return out


@cache
def asset_dir() -> Path:
    """The assets folder this studio runs with; ResourceError when none is found."""
    for folder in candidates():
        if (folder / MARKER).is_file():
            return folder
    raise ResourceError("The studio's assets folder was not found (looked in: "
                        + ", ".join(str(c) for c in candidates())
                        + "). Install flowkit with `pip install .` or run from a checkout.")


def path(name: str) -> Path:
    """The file `name` of the assets folder; ResourceError when it is missing."""
    found = asset_dir() / name
    if not found.is_file():
        raise ResourceError(f"The asset {name!r} is missing from {asset_dir()}.")
    return found


def css(name: str) -> str:
    """The style sheet assets/<name>.css as text (the one way the studio loads its CSS)."""
    return path(f"{name}.css").read_text(encoding="utf-8")


@dataclass(frozen=True)
class ModuleLook:
    """How the studio shows one operator module: its title, node fill colour, accent (border)
    colour, Material Symbols icon name (`:material/<icon>:` in Streamlit) and a text glyph."""

    module: str
    title: str
    colour: str
    accent: str
    icon: str
    glyph: str

    @property
    def material(self) -> str:
        """The icon as Streamlit writes it in labels, e.g. ':material/search:'."""
        return f":material/{self.icon}:"


def _look(module: str, raw: dict[str, str]) -> ModuleLook:
    return ModuleLook(module=module, title=raw["title"], colour=raw["colour"],
                      accent=raw["accent"], icon=raw["icon"], glyph=raw["glyph"])


@cache
def modules() -> dict[str, ModuleLook]:
    """Every module's look from assets/modules.json, in the file's order."""
    try:
        data = json.loads(path(MARKER).read_text(encoding="utf-8"))
        return {m: _look(m, raw) for m, raw in data["modules"].items()}
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ResourceError(f"assets/{MARKER} is not readable: {err}") from err


@cache
def _unknown() -> ModuleLook:
    data = json.loads(path(MARKER).read_text(encoding="utf-8"))
    return _look("", data["unknown"])


def module_look(module_or_operator: str) -> ModuleLook:
    """The look of a module, given its name or an operator's ('retrieval.dense' -> retrieval);
    a neutral look for a module the file does not name."""
    return modules().get(module_or_operator.split(".")[0]) or _unknown()


def module_colours() -> dict[str, str]:
    """Module name -> node fill colour (what the editor canvas and the replay graph paint)."""
    return {m: look.colour for m, look in modules().items()}
