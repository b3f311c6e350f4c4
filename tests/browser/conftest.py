"""Fixtures for the real-browser tests: Debian's chromium driven by Playwright for Python.

Without chromium or playwright these tests are skipped with a message saying how to install them, except
when ``CI=true``: then they fail, so CI can never pass without having run them.

One JupyterLab server (session scope) serves a temporary copy of ``notebooks/`` (+ ``data/``) and the
generated fixture notebooks; its process group is killed at the end of the session.
"""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from browser_helpers import (CHROMIUM_ARGS, VIEWPORT, chromium_path, copy_lab_root, ensure_lab_loaded, require_module,
                             start_lab, unavailable)
from fixture_notebooks import write_slider_demo


@pytest.fixture(scope="session")
def browser():
    path = chromium_path()
    if path is None:
        where = os.environ.get("SCHEMA_LAB_CHROMIUM") or "/usr/bin/chromium"
        unavailable(f"chromium (no executable {where})")
    require_module("playwright")
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
    except Exception:
        pw.stop()
        raise
    yield browser
    browser.close()
    pw.stop()


def _loopback_only(route):
    host = urlsplit(route.request.url).hostname
    if host in {"127.0.0.1", "localhost"} or route.request.url.startswith(("data:", "blob:")):
        route.continue_()
    else:
        route.abort()


def _new_page(browser):
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    context.route("**/*", _loopback_only)
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.schema_lab_errors = []
    page.on("pageerror", lambda exc: page.schema_lab_errors.append(str(exc)))
    return context, page


@pytest.fixture
def page(browser):
    """A fresh browser context and page; requests leaving 127.0.0.1 are aborted; page errors are kept."""
    context, page = _new_page(browser)
    yield page
    context.close()


@pytest.fixture(scope="session")
def _lab_session_page(browser, lab):
    context, page = _new_page(browser)
    yield page
    context.close()


@pytest.fixture
def lab_page(_lab_session_page, lab):
    """The one page with JupyterLab loaded, shared by the Lab tests (loading Lab costs 5-10 s on 2 cores).

    Each test gets it with no notebook open and no dialog; ``page.schema_lab_errors`` holds only this
    test's uncaught page errors.
    """
    page = _lab_session_page
    ensure_lab_loaded(page, lab)
    page.schema_lab_errors.clear()
    yield page


@pytest.fixture(scope="session")
def lab_root(tmp_path_factory) -> Path:
    """Temporary server root: notebooks/*.ipynb and data/ copied, fixtures/slider_demo.ipynb generated."""
    root = copy_lab_root(tmp_path_factory.mktemp("lab-root"))
    write_slider_demo(root / "fixtures")
    return root


@pytest.fixture(scope="session")
def lab(browser, lab_root, tmp_path_factory):
    """The one JupyterLab server for every browser test (depends on ``browser`` so it skips with it)."""
    require_module("jupyterlab")
    server = start_lab(lab_root, tmp_path_factory.mktemp("lab-home"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def kept_notebooks() -> dict:
    """Notebooks the run-all test left open, already run and checked, for a later test on the same page.

    Saves a second run-all of the lessons whose slider ``test_lesson_slider_updates_readout`` moves.
    """
    return {}
