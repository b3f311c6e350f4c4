"""Voila demo mode (sources stripped): the widgets render and a slider drives the kernel's readout.

Covers the generated slider fixture and every future ``notebooks/demo_*.ipynb`` (each is expected to show a
labkit explorer, i.e. a slider and a ``<table class='labkit-readout'>``).
"""
from __future__ import annotations

import pytest

from browser_helpers import (NOTEBOOK_TIMEOUT_S, NOTEBOOKS, copy_lab_root, move_slider_and_read, require_module,
                             screenshot, squash, start_voila, wait_for)
from fixture_notebooks import READOUT_SELECTOR, SLIDER_DEMO, SLIDER_INITIAL, readout_text, write_slider_demo

DEMOS = [SLIDER_DEMO] + sorted(p.name for p in NOTEBOOKS.glob("demo_*.ipynb"))
PRESSES = 4
# Text Voila (or the widget manager) shows when something went wrong.
BAD_TEXT = ["Traceback", "Error displaying widget", "Loading widget...", "Javascript Error", "There was an error",
            "No renderer could be found"]


@pytest.fixture
def voila_server(request, browser, tmp_path):
    require_module("voila")
    name = request.param
    if name == SLIDER_DEMO:
        notebook = write_slider_demo(tmp_path / "root" / "fixtures")
    else:
        notebook = copy_lab_root(tmp_path / "root") / "notebooks" / name
    server = start_voila(notebook, tmp_path / "home")
    yield server, name
    server.stop()


@pytest.mark.parametrize("voila_server", DEMOS, indirect=True, ids=[d.removesuffix(".ipynb") for d in DEMOS])
def test_voila_renders_and_slider_responds(voila_server, page):
    voila_server, name = voila_server
    page.goto(f"{voila_server.base_url}/?token={voila_server.token}", wait_until="domcontentloaded",
              timeout=NOTEBOOK_TIMEOUT_S * 1000)
    page.locator(".widget-slider .noUi-handle").first.wait_for(state="visible", timeout=NOTEBOOK_TIMEOUT_S * 1000)
    page.locator(READOUT_SELECTOR).first.wait_for(state="visible", timeout=30_000)

    def no_loading():
        return "Loading widget..." not in page.inner_text("body")
    wait_for(page, no_loading, 30, "every widget to render")
    body = page.inner_text("body")
    assert not [t for t in BAD_TEXT if t in body], f"Voila page shows {[t for t in BAD_TEXT if t in body]}:\n{body[:3000]}"
    assert page.locator(".jupyter-widgets").count() > 0
    editors = page.locator(".jp-InputArea-editor, .cm-editor, .CodeMirror").count()
    assert editors == 0, f"--strip_sources=True, yet {editors} code editor(s) on the page"
    if name == SLIDER_DEMO:
        assert "post_with_comments" not in body, "the notebook's source code is visible"

    reading = move_slider_and_read(page, None, slider_index=0, presses=PRESSES, readout_selector=READOUT_SELECTOR)
    assert reading.readout_after != reading.readout_before
    if name == SLIDER_DEMO:
        n = SLIDER_INITIAL + PRESSES
        assert reading.slider_after == str(n)
        assert reading.readout_before == readout_text(SLIDER_INITIAL)
        assert reading.readout_after == readout_text(n), "readout differs from the value the kernel's formula gives"
        shot = "voila-slider"
    else:
        shot = "voila-" + name.removesuffix(".ipynb").replace("_", "-")
    body = page.inner_text("body")
    assert not [t for t in BAD_TEXT if t in body], f"after moving the slider the page shows:\n{body[:3000]}"
    assert not page.schema_lab_errors, f"uncaught errors in the page: {page.schema_lab_errors}"
    assert squash(reading.readout_locator.inner_text()) == reading.readout_after
    screenshot(page, shot, fit_content=True)


@pytest.mark.parametrize("voila_server", ["demo_dashboard.ipynb"], indirect=True, ids=["demo_dashboard"])
def test_demo_draws_plans_and_keeps_readouts_still(voila_server, page):
    """The dashboard draws the feed query's plan as a tree of stages (issue 28) and redraws it when the index
    changes; the readout keeps its width as its takeaway line changes length (values must not jump)."""
    voila_server, _ = voila_server
    page.goto(f"{voila_server.base_url}/?token={voila_server.token}", wait_until="domcontentloaded",
              timeout=NOTEBOOK_TIMEOUT_S * 1000)
    plans = page.locator("svg.labkit-plan")
    plans.first.wait_for(state="visible", timeout=NOTEBOOK_TIMEOUT_S * 1000)
    assert plans.count() >= 2, "the feed query's plan and the login's plan are drawn"
    feed_plan = plans.nth(0)
    stages = lambda: feed_plan.locator("g.labkit-plan-node").evaluate_all("gs => gs.map(g => g.dataset.stage)")  # noqa: E731
    assert stages() == ["SORT", "COLLSCAN"]
    box = feed_plan.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 50, "the drawing takes room on the page"
    readout = page.locator(READOUT_SELECTOR).nth(1)
    width_before = readout.bounding_box()["width"]
    page.locator(".widget-dropdown select").first.select_option(label="{authorId: 1, createdAt: -1, _id: -1}")
    wait_for(page, lambda: stages() == ["LIMIT", "FETCH", "IXSCAN"], 60, "the plan to be redrawn without its SORT")
    assert page.locator("svg.labkit-plan").nth(0).locator("g[data-kind='index']").count() == 1
    assert readout.bounding_box()["width"] == width_before, "the readout changed width with its values"
    screenshot(page, "voila-demo-dashboard-plan", fit_content=False)
    assert not page.schema_lab_errors, f"uncaught errors in the page: {page.schema_lab_errors}"
