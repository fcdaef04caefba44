"""assets/: every file the studio reads is found by the one loader, shipped in a wheel (pyproject's
data-files), copied into the Docker image, and used (module colours in the replay graph)."""
from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest

from flowkit import registry, templates
from flowkit.errors import ResourceError
from studio.common import assets, graph_panel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_cache():
    assets.asset_dir.cache_clear()
    assets.modules.cache_clear()
    assets._unknown.cache_clear()
    yield
    assets.asset_dir.cache_clear()
    assets.modules.cache_clear()
    assets._unknown.cache_clear()


def test_every_asset_is_found_in_the_checkout():
    assert assets.asset_dir() == ROOT / "assets"
    for name in assets.FILES:
        assert assets.path(name).is_file(), name
        assert assets.path(name).stat().st_size > 0, name


def test_pyproject_ships_every_asset_in_the_wheel():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data_files = conf["tool"]["setuptools"]["data-files"]
    globs = data_files[assets.DATA_SUBDIR.as_posix()]
    shipped = {p.relative_to(ROOT).as_posix() for g in globs for p in ROOT.glob(g)}
    assert {f"assets/{name}" for name in assets.FILES} <= shipped
    assert not [s for s in shipped if "screenshots" in s]     # README pictures stay out of it


def test_dockerfile_copies_the_assets_and_dockerignore_keeps_them():
    docker = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^COPY assets \./assets$", docker, re.M)
    ignore = (ROOT / ".dockerignore").read_text().split()
    assert not [line for line in ignore if line.strip("/").startswith("assets")
                and "screenshots" not in line]


def test_an_installed_copy_is_found_when_there_is_no_checkout(tmp_path, monkeypatch, fresh_cache):
    """What a `pip install .` gives: no assets beside the package, the files under
    <data>/share/flowkit/assets."""
    data = tmp_path / "prefix"
    installed = data / assets.DATA_SUBDIR
    installed.mkdir(parents=True)
    for name in assets.FILES:
        shutil.copy(ROOT / "assets" / name, installed / name)
    monkeypatch.setattr(assets, "_SOURCE", tmp_path / "no-checkout" / "assets")
    monkeypatch.setattr(assets.sysconfig, "get_path", lambda name: str(data))
    assert assets.asset_dir() == installed
    assert assets.css("login").startswith("/*")
    assert assets.module_look("retrieval.dense").title == "Retrieval"


def test_no_assets_anywhere_is_a_resource_error(tmp_path, monkeypatch, fresh_cache):
    monkeypatch.setattr(assets, "_SOURCE", tmp_path / "none")
    monkeypatch.setattr(assets.sysconfig, "get_path", lambda name: str(tmp_path / "nothing"))
    monkeypatch.setattr(assets.metadata, "files", lambda name: [])
    with pytest.raises(ResourceError, match="assets folder was not found"):
        assets.asset_dir()


def test_a_missing_file_names_itself():
    with pytest.raises(ResourceError, match="nope.css"):
        assets.css("nope")


def test_modules_json_covers_the_six_modules():
    looks = assets.modules()
    assert list(looks) == list(registry.MODULES)
    for look in looks.values():
        assert re.fullmatch(r"#[0-9a-f]{6}", look.colour) and re.fullmatch(r"#[0-9a-f]{6}", look.accent)
        assert look.material == f":material/{look.icon}:" and len(look.glyph) == 1
    assert assets.module_look("no_such_module.x").title == "Other"


def test_replay_graph_paints_nodes_with_the_module_colours():
    spec = templates.load_template("naive_rag")
    nodes, _ = graph_panel.flow_picture(spec, [], None)
    by_id = {n["id"]: n for n in nodes}
    for node in spec.nodes:
        look = assets.module_look(node.operator)
        assert by_id[node.id]["color"] == {"background": look.colour, "border": look.accent}


def test_svgs_are_svg():
    for name in ("logo.svg", "icon.svg"):
        text = assets.path(name).read_text()
        assert text.lstrip().startswith("<svg") and "</svg>" in text


def test_the_login_form_carries_the_login_css(monkeypatch):
    from studio.common import guard
    monkeypatch.setitem(guard._state, "installed", guard._state["installed"])   # Guard() sets it
    response = guard.Guard(token="t")._form(200, "/")
    body = bytes(response.body).decode()
    assert assets.css("login").strip() in body and "<style>" in body
