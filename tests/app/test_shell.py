"""studio.common.shell: a page run on its own (a direct URL in a fresh server's first session) reruns
through app.py; AppTest and ordinary runs are left alone; every page calls it first."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager

from studio.common import shell

PAGES = sorted((Path(__file__).resolve().parents[2] / "pages").glob("*.py"))


@pytest.fixture()
def flag(monkeypatch):
    monkeypatch.setattr(PagesManager, "uses_pages_directory", PagesManager.uses_pages_directory)
    reruns: list[bool] = []
    monkeypatch.setattr(shell.st, "rerun", lambda: reruns.append(True))
    monkeypatch.setattr(shell.config, "get_option",
                        lambda name: False if name == "global.appTest" else None)
    return reruns


def test_a_page_run_on_its_own_leaves_the_pages_folder_mode_and_reruns(flag):
    PagesManager.uses_pages_directory = True
    shell.route_through_app()
    assert PagesManager.uses_pages_directory is False and flag == [True]


def test_after_st_navigation_nothing_happens(flag):
    PagesManager.uses_pages_directory = False
    shell.route_through_app()
    assert PagesManager.uses_pages_directory is False and flag == []


def test_apptest_runs_are_never_rerun(flag, monkeypatch):
    monkeypatch.setattr(shell.config, "get_option", lambda name: name == "global.appTest")
    PagesManager.uses_pages_directory = True
    shell.route_through_app()
    assert PagesManager.uses_pages_directory is True and flag == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_page_routes_through_app_before_anything_else(page):
    body = [n for n in ast.parse(page.read_text(encoding="utf-8")).body
            if not isinstance(n, (ast.Import, ast.ImportFrom))
            and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    first = body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)
    assert ast.unparse(first.value) == "route_through_app()"


def test_app_takes_its_logo_and_page_icon_from_assets():
    """app.py's st.logo and page_icon are the files in assets/ (studio.common.assets finds them)."""
    from studio.common import assets
    app = (Path(__file__).resolve().parents[2] / "app.py").read_text(encoding="utf-8")
    calls = {ast.unparse(n.func): n for n in ast.walk(ast.parse(app)) if isinstance(n, ast.Call)}
    logo = calls["st.logo"]
    assert ast.unparse(logo.args[0]) == "str(assets.path('logo.svg'))"
    config = calls["st.set_page_config"]
    icon = {k.arg: ast.unparse(k.value) for k in config.keywords}["page_icon"]
    assert icon == "str(assets.path('icon.svg'))"
    assert assets.path("logo.svg").is_file() and assets.path("icon.svg").is_file()
