"""Every notebook, opened and run in JupyterLab in a real browser, as a learner would."""
from __future__ import annotations

from fnmatch import fnmatch

import pytest

from browser_helpers import (NOTEBOOKS, assert_clean, assert_readout_matches_kernel, close_notebook,
                             lab_screenshot, move_slider_and_read, open_notebook, panel_locator, run_all_and_wait,
                             scroll_to_top)
from fixture_notebooks import BYTES_SELECTOR, READOUT_SELECTOR, SLIDER_DEMO, SLIDER_INITIAL, post_size, readout_text

NOTEBOOK_NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))

# Screenshots (build/screenshots/, or docs/images/ with LABKIT_UPDATE_SCREENSHOTS=1; deterministic names,
# overwritten each run): notebook stem -> image name.
SCREENSHOTS = {"00_start_here": "lab-start-here"}

# Lessons whose slider a test moves: (glob of the notebook under notebooks/, readout selector, slider index,
# key presses). The readout is labkit's explorer table (labkit.widgets: <table class='labkit-readout'>).
LESSON_SLIDERS = [
    ("00_start_here", READOUT_SELECTOR, 0, 3),
    ("*one_to_many*", READOUT_SELECTOR, 0, 3),
    ("*follows*", READOUT_SELECTOR, 0, 3),
    ("*bucket*", READOUT_SELECTOR, 0, 3),
    ("*shard_keys*", READOUT_SELECTOR, 0, 3),
]


# A lesson's readout may move in coarse steps (e.g. the nearest account to a follower count): the slider test
# keeps nudging, in doubling bursts, up to this many presses before it calls the readout unresponsive.
MAX_PRESSES = 93


@pytest.mark.parametrize(
    "name", NOTEBOOK_NAMES or [pytest.param("none", marks=pytest.mark.skip(
        reason="no notebooks/*.ipynb: build them with `python3 dev.py build-notebooks`"))])
def test_notebook_runs_clean_in_lab(lab, lab_page, kept_notebooks, name):
    page = lab_page
    nb = open_notebook(page, lab, f"notebooks/{name}")
    keep = False
    try:
        state = run_all_and_wait(nb)
        state = assert_clean(nb, state)
        stem = name.removesuffix(".ipynb")
        if stem in SCREENSHOTS:
            scroll_to_top(nb)
            lab_screenshot(nb, SCREENSHOTS[stem])
        assert not page.schema_lab_errors, f"uncaught errors in the page: {page.schema_lab_errors}"
        keep = any(fnmatch(name, f"{pattern}.ipynb") for pattern, *_ in LESSON_SLIDERS)
        if keep:  # the slider test moves this notebook's slider next; don't run it all again
            kept_notebooks[nb.path] = nb
    finally:
        if not keep:
            close_notebook(nb)


def test_slider_demo_in_lab(lab, lab_page):
    """The slider helper, proven on the generated fixture: page readout == kernel == same formula here."""
    page = lab_page
    nb = open_notebook(page, lab, f"fixtures/{SLIDER_DEMO}")
    try:
        assert_clean(nb, run_all_and_wait(nb))
        shown = panel_locator(nb).locator(BYTES_SELECTOR).inner_text()
        assert shown == f"{post_size(SLIDER_INITIAL):,}", "initial readout differs from the formula's value"
        reading = move_slider_and_read(page, nb, slider_index=0, presses=4, readout_selector=READOUT_SELECTOR)
        n = SLIDER_INITIAL + 4
        assert reading.slider_before == str(SLIDER_INITIAL)
        assert reading.slider_after == str(n)
        assert reading.readout_before == readout_text(SLIDER_INITIAL)
        assert reading.readout_after == readout_text(n), "page readout differs from the formula's value"
        assert_readout_matches_kernel(nb, reading)
        # and the kernel agrees on the number itself, asked directly
        assert nb.kernel_exec("print(comments.value, post_size(comments.value))").split() == [str(n), str(post_size(n))]
        assert_clean(nb, nb.state())
    finally:
        close_notebook(nb)


@pytest.mark.parametrize("pattern, readout_selector, slider_index, presses", LESSON_SLIDERS,
                         ids=[p[0].strip("*") for p in LESSON_SLIDERS])
def test_lesson_slider_updates_readout(lab, lab_page, kept_notebooks, pattern, readout_selector, slider_index, presses):
    matches = sorted(NOTEBOOKS.glob(pattern if pattern.endswith(".ipynb") else f"{pattern}.ipynb"))
    if not matches:
        pytest.skip(f"no notebook matches notebooks/{pattern}.ipynb yet (lesson not written or not built with "
                    "`python3 dev.py build-notebooks`); this test runs once it exists")
    page = lab_page
    for path in matches:
        nb = kept_notebooks.pop(f"notebooks/{path.name}", None)
        try:
            if nb is None or not nb.is_open():
                nb = open_notebook(page, lab, f"notebooks/{path.name}")
                assert_clean(nb, run_all_and_wait(nb))
            reading = move_slider_and_read(page, nb, slider_index, presses, readout_selector=readout_selector,
                                           max_presses=MAX_PRESSES)
            assert reading.readout_after != reading.readout_before
            assert_readout_matches_kernel(nb, reading)
            assert_clean(nb, nb.state())
            lab_screenshot(nb, f"lab-{path.stem.replace('_', '-')}-slider")
        finally:
            if nb is not None:
                close_notebook(nb)
