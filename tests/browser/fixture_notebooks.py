"""Widget notebooks the browser tests open, written at test time into a temporary directory.

They are generated, not committed as ``.ipynb``: ``pytest --nbval tests`` collects every ``.ipynb`` under
``tests/`` and would run them as notebook tests.

``slider_demo``: an ``IntSlider`` (number of comments embedded in a post) drives an ``HTML`` readout of the
post's BSON size, computed in the kernel with ``bson.encode``. The readout follows labkit's convention
(``labkit.widgets``): a ``<table class='labkit-readout'>`` with one ``<td class='labkit-<name>'>`` per value.
``SIZE_FORMULA`` is the one piece of code both the kernel and the test process run, so a test can compute
the value the kernel must show for any slider value.
"""
from __future__ import annotations

from pathlib import Path

import nbformat

SLIDER_DEMO = "slider_demo.ipynb"
SLIDER_INITIAL, SLIDER_MIN, SLIDER_MAX, SLIDER_STEP = 3, 0, 50, 1
READOUT_SELECTOR = ".labkit-readout"
BYTES_SELECTOR = ".labkit-document-bytes"

SIZE_FORMULA = '''\
import bson

def post_with_comments(n):
    return {"_id": "post:432", "author": "user:112", "title": "Schema design is workload design",
            "comments": [{"user": f"user:{i}", "text": "Nice post! " * 3} for i in range(n)]}

def post_size(n):
    return len(bson.encode(post_with_comments(n)))
'''


def post_size(n: int) -> int:
    """The document size the kernel computes for ``n`` comments (same code, run here)."""
    scope: dict = {}
    exec(SIZE_FORMULA, scope)  # noqa: S102 - our own constant
    return scope["post_size"](n)


def readout_text(n: int) -> str:
    """The readout's visible text for ``n`` comments, whitespace removed (how the tests compare text)."""
    return f"commentsembedded{n:,}documentbytes{post_size(n):,}"


def _slider_demo() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Slider demo\n\nMove the slider: the readout is the post's BSON size, "
                                      "computed in the kernel."),
        nbformat.v4.new_code_cell(SIZE_FORMULA),
        nbformat.v4.new_code_cell(f'''\
import ipywidgets as widgets

comments = widgets.IntSlider(value={SLIDER_INITIAL}, min={SLIDER_MIN}, max={SLIDER_MAX}, step={SLIDER_STEP},
                             description="comments", continuous_update=False)
readout = widgets.HTML()

def show(_=None):
    n = comments.value
    readout.value = ("<table class='labkit-readout'>"
                     f"<tr><th style='text-align:left'>comments embedded</th><td class='labkit-comments-embedded'>{{n:,}}</td></tr>"
                     f"<tr><th style='text-align:left'>document bytes</th><td class='labkit-document-bytes'>{{post_size(n):,}}</td></tr>"
                     "</table>")

comments.observe(show, names="value")
show()
widgets.VBox([comments, readout])'''),
    ]
    return nb


def write_slider_demo(directory: Path) -> Path:
    """Write ``slider_demo.ipynb`` into ``directory`` and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SLIDER_DEMO
    nbformat.write(_slider_demo(), path)
    return path
