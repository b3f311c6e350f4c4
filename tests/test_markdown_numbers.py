"""Every number a lesson's text presents as measured is shown by a cell's output (issue 15).

The rule, applied to each complete notebook ``notebooks/NN_*.ipynb`` (with its stored outputs):

1. The text judged is each markdown cell's prose: headings (lesson titles and numbers), table rows (the
   workload tables' rates and the limits' values come from the source material), inline code spans and links are
   left out.
2. A number *claims a measurement* when its sentence has a measurement word (:data:`MEASURE_WORDS`: measured,
   examined, returned, read, took, bytes, ms, keys, documents, round trips, writes, entries ...), and it is not a
   fact or a setting: not followed by a size unit of the limits (MiB, MB, KiB, GB), a time of the lesson
   (minutes), a rate (/s, per second, a day), a scale word of a hypothetical (million) or a version; not a
   lesson number (``lesson 38``, ``(38)``), a limit or a period (``at most 10,000``, ``every 30 seconds``), or a
   year.
3. Such a number must appear in the notebook's code: as a number in some code cell's output (the measurement
   shown), or as a literal in some code cell's source (a size the notebook sets, such as ``range(6000)``: an input,
   not a measurement). Thousands separators and a trailing ``.0`` do not matter.

Numbers that do not pass in lessons whose text this test's author does not own are listed, with the reason, in
:data:`ALLOWED` (the lead resolves them); an entry that no longer fails makes the test fail, so it is removed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

MEASURE_WORDS = re.compile(
    r"\b(measur\w*|examin\w*|returns?|returned|reads?|took|takes|bytes?|ms|keys?|documents?|docs|round[- ]trips?|"
    r"writes?|written|entries|scann\w*|finds|found|costs?|modified|matched|pushes|accepted|refused|fetch\w*|"
    r"index(?:es)? (?:size|entries)|size)\b", re.IGNORECASE)
NUMBER = re.compile(r"(?<![\w.$/-])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.]*\d)")
#: what may follow a number that is a fact or a setting, not a measurement
NOT_MEASURED_AFTER = re.compile(
    r"^\s*(?:%\s*(?:margin|tolerance)|(?:Mi|Ki|Gi|M|K|G|T)i?B\b|minutes?\b|min\b|/s\b|/day\b|per second\b|"
    r"a second\b|a day\b|a minute\b|times a (?:second|day)\b|per day\b|levels?\b|indexes per\b|fields? in\b|"
    r"(?:million|billion)\b|"
    r"·|[.]\d)", re.IGNORECASE)
NOT_MEASURED_BEFORE = re.compile(r"(?:lessons?|MongoDB|version|v|strength|level|#|\(|·|→|←|at most|up to|every|"
                                 r"limit of|over)\s*$", re.IGNORECASE)

#: (notebook, number): claims in lessons not owned by the author of this test, with why they do not pass yet
ALLOWED: dict[tuple[str, str], str] = {}


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def _prose(markdown: str) -> str:
    """The markdown's prose: no headings, table rows, code spans, code blocks or links' targets."""
    markdown = re.sub(r"```.*?```", " ", markdown, flags=re.S)
    lines = [ln for ln in markdown.splitlines() if not ln.lstrip().startswith(("#", "|"))]
    text = "\n".join(lines)
    text = re.sub(r"`[^`]*`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"\$[^$]+\$", " ", text)  # LaTeX
    return text


def _normal(number: str) -> str:
    n = number.replace(",", "")
    return n[:-2] if n.endswith(".0") else n


def _numbers_in(text: str) -> set[str]:
    return {_normal(m) for m in re.findall(r"\d[\d,]*(?:\.\d+)?", text)}


def shown_numbers(nb: dict) -> set[str]:
    """Every number in the notebook's code outputs and in its code cells' sources."""
    found: set[str] = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        found |= _numbers_in(_text(cell["source"]))
        for out in cell.get("outputs", []):
            found |= _numbers_in(_text(out.get("text")))
            for mime in ("text/plain", "text/html", "text/markdown"):
                found |= _numbers_in(_text(out.get("data", {}).get(mime)))
    return found


def measurement_claims(nb: dict) -> list[tuple[str, str]]:
    """(number as written, its sentence) for every number the notebook's prose presents as measured."""
    claims = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        prose = _prose(_text(cell["source"]))
        for sentence in re.split(r"(?<=[.!?:;])\s+|\n\s*[-*]\s+|\n\n", prose):
            sentence = " ".join(sentence.replace("#", " ").split())
            if not MEASURE_WORDS.search(sentence):
                continue
            for m in NUMBER.finditer(sentence):
                number = m.group(1)
                before, after = sentence[:m.start()], sentence[m.end():]
                if NOT_MEASURED_AFTER.match(after) or NOT_MEASURED_BEFORE.search(before):
                    continue
                if re.fullmatch(r"(19|20)\d\d", number):  # a year
                    continue
                claims.append((number, sentence))
    return claims


def unshown_claims(nb: dict) -> list[tuple[str, str]]:
    """The measurement claims whose number no code cell shows."""
    shown = shown_numbers(nb)
    return [(n, s) for n, s in measurement_claims(nb) if _normal(n) not in shown]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_measured_number_in_the_text_is_shown_by_a_cell(path):
    nb = json.loads(path.read_text())
    missing = unshown_claims(nb)
    allowed = {n for (stem, n) in ALLOWED if stem == path.stem}
    bad = [(n, s) for n, s in missing if _normal(n) not in {_normal(a) for a in allowed}]
    assert not bad, "\n".join(f"{path.stem}: {n!r} is presented as measured but no cell shows it: {s!r}"
                              for n, s in bad)
    stale = sorted(allowed - {n for n, _ in missing})
    assert not stale, f"{path.stem}: ALLOWED entries {stale} pass now; remove them"


def _fake(markdown: str, output: str, source: str = "x = plan()") -> dict:
    return {"cells": [
        {"cell_type": "code", "source": source, "outputs": [{"output_type": "stream", "text": output}]},
        {"cell_type": "markdown", "source": markdown},
    ]}


def test_a_wrong_measured_number_fails():
    text = "The regex examines 5,000 keys to return 3 accounts."
    assert unshown_claims(_fake(text, "keys examined: 5000\nreturned: 3")) == []
    wrong = unshown_claims(_fake(text, "keys examined: 4997\nreturned: 3"))
    assert [n for n, _ in wrong] == ["5,000"]
    assert [n for n, _ in unshown_claims(_fake("It took 15 ms per run.", "12.5 ms"))] == ["15"]


def test_facts_settings_and_lesson_numbers_are_not_measurements():
    for text in ("A document may hold at most 16 MiB of BSON.", "The support queue runs 500/s and reads 20 orders.",
                 "Lesson 38 shows the extended reference; see (38) for the documents.",
                 "MongoDB 8.0 returns documents in order.", "About 25 minutes of reading documents.",
                 "The `{\"$limit\": 20}` stage returns documents."):
        claims = [n for n, _ in unshown_claims(_fake(text, "20" if "reads 20" in text else ""))]
        assert claims == [], (text, claims)


def test_a_wrong_number_in_a_real_lesson_fails():
    nb = json.loads((ROOT / "notebooks" / "37_case_insensitive.ipynb").read_text())
    assert unshown_claims(nb) == []
    nb["cells"].append({"cell_type": "markdown", "source": "The regex examined 4,321 keys for 3 accounts."})
    assert [n for n, _ in unshown_claims(nb)] == ["4,321"]


def test_inputs_set_by_the_code_count_as_shown():
    assert unshown_claims(_fake("6,000 orders, 1 document each.", "", "orders = [order(i) for i in range(6000)]"
                                                                        "\nn = 1")) == []
