"""A self-paced learner's first session, in a real browser (issue 28): `python3 dev.py lab` opens lesson 00 of
students/; the file browser shows CONTENTS.md, students/, notebooks/ and the READMEs, not the developer tree;
the learner opens CONTENTS, follows a lesson link, runs the lesson, moves its slider, and the lesson's last cell
leads back to CONTENTS."""
from __future__ import annotations

import pytest

from browser_helpers import (NOTEBOOK_TIMEOUT_S, assert_clean, assert_readout_matches_kernel, close_notebook,
                             copy_learner_checkout, lab_screenshot, move_slider_and_read, open_notebook,
                             require_module, run_all_and_wait, start_dev_lab, wait_for)
from fixture_notebooks import READOUT_SELECTOR

LESSON = "students/02_one_to_many.ipynb"  # followed from CONTENTS.md; it has a slider
LINK_TEXT = "One-to-many: reference the parent from the child"


@pytest.fixture(scope="module")
def dev_lab(browser, tmp_path_factory):
    require_module("jupyterlab")
    checkout = copy_learner_checkout(tmp_path_factory.mktemp("learner") / "schema-lab")
    server = start_dev_lab(checkout, tmp_path_factory.mktemp("learner-home"))
    yield server
    server.stop()


def _current_path(page) -> str:
    return page.evaluate("() => { const w = window.jupyterapp.shell.currentWidget; "
                         "return w && w.context ? w.context.path : ''; }")


def _listing(page) -> list[str]:
    return page.evaluate("""() => Array.from(document.querySelectorAll('.jp-DirListing-item .jp-DirListing-itemText'))
        .map(e => e.textContent.trim())""")


def test_learner_opens_contents_follows_a_lesson_runs_it_and_moves_a_slider(dev_lab, page):
    page.goto(f"{dev_lab.base_url}/lab/tree/students/00_start_here.ipynb?token={dev_lab.token}",
              wait_until="domcontentloaded")
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands", timeout=60_000)
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    wait_for(page, lambda: _current_path(page) == "students/00_start_here.ipynb", 60, "lesson 00 of students/ to open")

    # the file browser: the learner's entries only
    page.locator(".jp-BreadCrumbs-home").first.click()
    wait_for(page, lambda: "students" in _listing(page), 30, "the file browser to list the top folder")
    assert sorted(_listing(page)) == ["CONTENTS.md", "INSTRUCTOR.md", "README.md", "notebooks", "students"]

    # CONTENTS.md opens as a page (Markdown Preview) whose links open the student copies
    page.locator(".jp-DirListing-item", has_text="CONTENTS.md").first.dblclick()
    wait_for(page, lambda: _current_path(page) == "CONTENTS.md", 30, "CONTENTS.md to open")
    preview = page.locator(".jp-RenderedMarkdown:visible").first
    preview.wait_for(state="visible", timeout=30_000)
    # the table renders after the panel shows: wait for it rather than count at once
    answers = preview.locator("a", has_text="with answers").first
    answers.wait_for(state="attached", timeout=30_000)  # the instructors' column is there, apart
    preview.locator("a", has_text=LINK_TEXT).first.click()
    wait_for(page, lambda: _current_path(page) == LESSON, 60, f"{LESSON} to open from its CONTENTS link")

    nb = open_notebook(page, dev_lab, LESSON)  # the panel the link opened, now tracked by the helpers
    try:
        state = assert_clean(nb, run_all_and_wait(nb, timeout_s=NOTEBOOK_TIMEOUT_S))
        assert state["live_widget_cells"], "the lesson shows its widgets"
        reading = move_slider_and_read(page, nb, slider_index=0, presses=3, readout_selector=READOUT_SELECTOR,
                                       max_presses=93)
        assert reading.readout_after != reading.readout_before
        assert_readout_matches_kernel(nb, reading)
        lab_screenshot(nb, "lab-learner-02-one-to-many")

        # the last cell's "Contents" link leads back
        nb.activate()
        links = page.locator(f"#{page.evaluate('(p) => window.__schemaLab[p].id', LESSON)} .jp-RenderedMarkdown a",
                             has_text="Contents")
        links.last.scroll_into_view_if_needed()
        links.last.click()
        wait_for(page, lambda: _current_path(page) == "CONTENTS.md", 30, "the lesson's Contents link to open CONTENTS.md")
        assert not page.schema_lab_errors, f"uncaught errors in the page: {page.schema_lab_errors}"
    finally:
        close_notebook(nb)
