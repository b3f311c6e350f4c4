"""Generated documents are up to date: CONTENTS.md, the navigation cells, students/, INSTRUCTOR.md.

Each test regenerates in memory with tools/gen_docs.py and compares with the files on disk. When one fails,
run `python3 tools/gen_docs.py` (then commit the changed files). The generator itself is tested on
throw-away notebooks in a temporary directory.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import gen_docs  # noqa: E402
import notebook_meta  # noqa: E402
from notebook_meta import Lesson, MetadataError  # noqa: E402

FIX = f"run `{gen_docs.REGENERATE}` to regenerate"


class Generated(dict):
    """Generated path -> text; a short repr keeps failure messages readable."""

    def __repr__(self) -> str:
        return f"<{len(self)} generated files>"


@pytest.fixture(scope="module")
def expected() -> Generated:
    return Generated(gen_docs.expected_files(ROOT))


def _stale(expected: dict[Path, str], paths: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in paths
            if not p.exists() or p.read_text(encoding="utf-8") != expected[p]]


# --- the repository's generated files are fresh ------------------------------------------------------------

def test_contents_is_fresh(expected):
    stale = _stale(expected, [ROOT / "CONTENTS.md"])
    assert not stale, f"CONTENTS.md is stale (notebook metadata changed or a lesson was added): {FIX}"


def test_navigation_cells_are_fresh(expected):
    paths = [p for p in expected if ROOT / "notebooks" in p.parents]
    stale = _stale(expected, paths)
    assert not stale, f"the navigation cell of {', '.join(stale)} is missing or stale: {FIX}"


def test_student_copies_are_fresh(expected):
    paths = [p for p in expected if p.parent == ROOT / "students"]
    stale = _stale(expected, paths) + [str(p.relative_to(ROOT)) for p in gen_docs.obsolete_files(ROOT, expected)]
    assert not stale, f"student copies {', '.join(stale)} are stale, missing or obsolete: {FIX}"


def test_instructor_guide_is_fresh(expected):
    stale = _stale(expected, [ROOT / "INSTRUCTOR.md"])
    assert not stale, f"INSTRUCTOR.md is stale (notebook metadata changed or a lesson was added): {FIX}"


# --- the generator, on throw-away notebooks ----------------------------------------------------------------

HEADER = """# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
{meta}
# ---
"""
BODY = """
# %% [markdown]
# # {title}

# %%
x = 1
x

# %% tags=["solution"]
answer = x + 1
answer
"""


def make_lesson(notebooks: Path, name: str, meta: str, title: str = "T", built: bool = True) -> Path:
    """A small lesson source (and, when ``built``, an .ipynb with fake outputs) under ``notebooks``."""
    (notebooks / "src").mkdir(parents=True, exist_ok=True)
    src = notebooks / "src" / f"{name}.py"
    src.write_text(HEADER.format(meta="\n".join(f"#     {ln}" for ln in meta.splitlines())) + BODY.format(title=title))
    if built:
        nb = jupytext.read(src)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)]
                cell.execution_count = 1
        nbformat.write(nb, notebooks / f"{name}.ipynb")
    return src


@pytest.fixture()
def course(tmp_path: Path) -> Path:
    nbs = tmp_path / "notebooks"
    make_lesson(nbs, "00_intro", "minutes: 10\ntitle: Intro\nsection: Introduction", "Intro")
    make_lesson(nbs, "01_embed", "minutes: 20\ntitle: Embed | few\nsection: Relationships\nexercise_minutes: 10\n"
                "demo: Show the roles array.\nmistakes:\n- Using the average as the bound.", "Embed")
    make_lesson(nbs, "10_bucket", "minutes: 25\ntitle: Bucket\nsection: Patterns", "Bucket", built=False)
    return tmp_path


def test_metadata_reader_defaults_and_order(course):
    got = notebook_meta.lessons(course / "notebooks")
    assert [x.name for x in got] == ["00_intro", "01_embed", "10_bucket"]
    assert got[0].exercise_minutes == 5 and got[0].demo == "" and got[0].mistakes == ()
    assert got[1].exercise_minutes == 10 and got[1].slot_minutes == 30
    assert got[1].mistakes == ("Using the average as the bound.",)
    assert [s for s, _ in notebook_meta.sections(got)] == ["Introduction", "Relationships", "Patterns"]


def test_metadata_reader_names_file_and_key(tmp_path):
    make_lesson(tmp_path, "04_x", "minutes: 10\ntitle: X", built=False)
    with pytest.raises(MetadataError, match=r"04_x.py.*section"):
        notebook_meta.lessons(tmp_path)
    make_lesson(tmp_path, "04_x", "minutes: ten\ntitle: X\nsection: S", built=False)
    with pytest.raises(MetadataError, match=r"labkit.minutes='ten'"):
        notebook_meta.lessons(tmp_path)


SOURCES_META = """minutes: 10
title: Unique
section: Relationships
sources:
- title: "MongoDB manual: Unique [indexes]"
  url: https://www.mongodb.com/docs/manual/core/index-unique/
- title: "mongodb/mongo jstests/core/index/index_signature.js ($natural)"
  url: https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_signature.js"""


def test_metadata_reader_reads_sources(tmp_path):
    make_lesson(tmp_path, "05_u", SOURCES_META, built=False)
    (lesson,) = notebook_meta.lessons(tmp_path)
    assert lesson.sources == (
        notebook_meta.Source("MongoDB manual: Unique [indexes]", "https://www.mongodb.com/docs/manual/core/index-unique/"),
        notebook_meta.Source("mongodb/mongo jstests/core/index/index_signature.js ($natural)",
                             "https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_signature.js"))


@pytest.mark.parametrize("sources, message", [
    ("sources: https://www.mongodb.com/docs/manual/", r"05_u.py: labkit.sources must be a list"),
    ("sources:\n- https://www.mongodb.com/docs/manual/", r"05_u.py: labkit.sources entry 1 .* must be a mapping"),
    ("sources:\n- title: T\n  url: https://www.mongodb.com/docs/manual/\n- url: https://www.mongodb.com/docs/x/",
     r"05_u.py: labkit.sources entry 2: title=None"),
    ("sources:\n- title: T\n  href: https://www.mongodb.com/docs/manual/", r"entry 1: unknown key\(s\) href"),
    ("sources:\n- title: T\n  url: 3", r"entry 1 \('T'\): url=3 must be a non-empty string"),
    ("sources:\n- title: Seeds\n  url: ../shared/seeds/000.md", r"entry 1 \('Seeds'\): url '../shared/seeds/000.md' is not"),
    ("sources:\n- title: Old\n  url: https://github.com/mongodb/mongo/blob/master/jstests/core/a.js",
     r"entry 1 \('Old'\): url .* not one of the allowed kinds"),
    ("sources:\n- title: Blog\n  url: https://stackoverflow.com/q/1", r"entry 1 \('Blog'\).*allowed kinds"),
    ("sources:\n- title: Bare\n  url: https://www.mongodb.com/docs/", r"entry 1 \('Bare'\).*allowed kinds"),
    ("sources:\n- title: T\n  url: https://www.mongodb.com/docs/a/\n- title: T\n  url: https://www.mongodb.com/docs/b/",
     r"entries 1 and 2 have the same title 'T'"),
    ("sources:\n- title: A\n  url: https://www.mongodb.com/docs/a/\n- title: B\n  url: https://www.mongodb.com/docs/a/",
     r"entries 1 and 2 have the same url"),
    ("source:\n- title: A\n  url: https://www.mongodb.com/docs/a/", r"05_u.py: unknown labkit key\(s\) source"),
])
def test_metadata_reader_rejects_bad_sources_naming_file_and_entry(tmp_path, sources, message):
    make_lesson(tmp_path, "05_u", "minutes: 10\ntitle: U\nsection: S\n" + sources, built=False)
    with pytest.raises(MetadataError, match=message):
        notebook_meta.lessons(tmp_path)


def test_sources_cell_comes_before_navigation_in_py_notebook_and_student_copy(course):
    make_lesson(course / "notebooks", "05_u", SOURCES_META)
    gen_docs.write_all(course)
    want = ("## Sources\n\n"
            "1. [MongoDB manual: Unique \\[indexes\\]](https://www.mongodb.com/docs/manual/core/index-unique/)\n"
            "2. [mongodb/mongo jstests/core/index/index_signature.js (\\$natural)]"
            "(https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_signature.js)")
    for path in (course / "notebooks" / "src" / "05_u.py", course / "notebooks" / "05_u.ipynb",
                 course / "students" / "05_u.ipynb"):
        cells = jupytext.read(path).cells
        assert [(c.cell_type, c.metadata.get("tags")) for c in cells[-2:]] == [
            ("markdown", ["sources"]), ("markdown", ["navigation"])], path
        assert cells[-2].source == want, path
        assert sum("sources" in c.metadata.get("tags", []) for c in cells) == 1
    assert gen_docs.write_all(course) == []          # idempotent, byte for byte
    # lessons without sources get no sources cell
    assert "sources" not in jupytext.read(course / "notebooks" / "00_intro.ipynb").cells[-2].metadata.get("tags", [])
    # a changed list is stale; an emptied list removes the cell from .py and .ipynb
    src = course / "notebooks" / "src" / "05_u.py"
    src.write_text(src.read_text().replace("Unique [indexes]", "Unique indexes"))
    assert {src, course / "notebooks" / "05_u.ipynb"} <= set(gen_docs.stale_files(course))
    gen_docs.write_all(course)
    assert "1. [MongoDB manual: Unique indexes](" in jupytext.read(course / "notebooks" / "05_u.ipynb").cells[-2].source
    src.write_text(re.sub(r"#     sources:\n(#     [- ].*\n)+", "", src.read_text()))
    gen_docs.write_all(course)
    for path in (src, course / "notebooks" / "05_u.ipynb", course / "students" / "05_u.ipynb"):
        assert not any("sources" in c.metadata.get("tags", []) for c in jupytext.read(path).cells), path


def test_sources_cell_moves_back_before_navigation_wherever_it_is():
    text = ('# %%\nx = 1\n\n# %% [markdown] tags=["sources"]\n# old\n\n# %% [markdown]\n# ## End\n\n'
            '# %% [markdown] tags=["navigation"]\n# nav\n')
    new = gen_docs.py_with_navigation(text, "nav", "## Sources\n\n1. [a](b)")
    assert new == ('# %%\nx = 1\n\n# %% [markdown]\n# ## End\n\n# %% [markdown] tags=["sources"]\n# ## Sources\n#\n'
                   '# 1. [a](b)\n\n# %% [markdown] tags=["navigation"]\n# nav\n')
    assert gen_docs.py_with_navigation(new, "nav", "## Sources\n\n1. [a](b)") == new


def test_generate_then_fresh_then_stale_again(course):
    changed = gen_docs.write_all(course)
    assert course / "CONTENTS.md" in changed and course / "students" / "01_embed.ipynb" in changed
    assert gen_docs.stale_files(course) == []
    assert gen_docs.write_all(course) == []          # idempotent
    contents = (course / "CONTENTS.md").read_text()
    # lesson minutes, exercise minutes, their sum (issue 18: the total includes the exercises)
    # learners follow the lesson link (the student copy); instructors the last column (the complete lesson)
    assert ("| 01 | [Embed \\| few](students/01_embed.ipynb) | 20 | 10 | 30 | [01 with answers](notebooks/01_embed.ipynb) |"
            in contents)
    assert "| | **Relationships total** | **20** | **10** | **30** | |" in contents
    assert "| **Total** | **3** | **55** |" in contents
    make_lesson(course / "notebooks", "02_more", "minutes: 5\ntitle: More\nsection: Relationships", built=False)
    stale = gen_docs.stale_files(course)
    assert course / "CONTENTS.md" in stale and course / "notebooks" / "src" / "01_embed.py" in stale
    assert course / "notebooks" / "01_embed.ipynb" in stale and course / "INSTRUCTOR.md" in stale


def test_navigation_cell_is_last_and_carried_into_the_notebook(course):
    gen_docs.write_all(course)
    for name, nav in [
        ("00_intro", "[Contents](../CONTENTS.md) · [01 · Embed | few →](01_embed.ipynb)"),
        ("01_embed", "[← 00 · Intro](00_intro.ipynb) · [Contents](../CONTENTS.md) · [10 · Bucket →](10_bucket.ipynb)"),
    ]:
        for ext in (".py", ".ipynb"):
            last = jupytext.read(course / "notebooks" / ("src/" if ext == ".py" else "") / f"{name}{ext}").cells[-1]
            assert (last.cell_type, last.source, last.metadata["tags"]) == ("markdown", nav, ["navigation"])
    last = jupytext.read(course / "notebooks" / "src" / "10_bucket.py").cells[-1]
    assert last.source == "[← 01 · Embed | few](01_embed.ipynb) · [Contents](../CONTENTS.md)"


def test_py_navigation_replaces_an_old_cell_wherever_it_is():
    text = '# %%\nx = 1\n\n# %% [markdown] tags=["navigation"]\n# old\n\n# %% [markdown]\n# ## End\n'
    new = gen_docs.py_with_navigation(text, "new\n\nline")
    assert new == '# %%\nx = 1\n\n# %% [markdown]\n# ## End\n\n# %% [markdown] tags=["navigation"]\n# new\n#\n# line\n'
    assert gen_docs.py_with_navigation(new, "new\n\nline") == new


def test_student_copy_blanks_only_solution_cells(course):
    gen_docs.write_all(course)
    full = nbformat.read(course / "notebooks" / "00_intro.ipynb", as_version=4)
    student = nbformat.read(course / "students" / "00_intro.ipynb", as_version=4)
    assert len(full.cells) == len(student.cells)
    for a, b in zip(full.cells, student.cells):
        if "solution" in a.metadata.get("tags", []):
            assert (b.cell_type, b.source, b.outputs, b.metadata["tags"]) == ("code", "# Your answer here", [], ["solution"])
            assert "answer = x + 1" in a.source
        else:
            assert a == b                               # other cells keep their outputs
    assert "jupytext" not in student.metadata          # opening the copy must not create a paired .py
    assert not (course / "students" / "10_bucket.ipynb").exists()   # not built yet: no student copy
    readme = (course / "students" / "README.md").read_text()
    assert "| 00 | [Intro](00_intro.ipynb) | 10 | 1 |" in readme


def test_obsolete_student_copies_are_stale_and_deleted(course):
    gen_docs.write_all(course)
    (course / "students" / "07_gone.ipynb").write_text("{}")
    assert gen_docs.stale_files(course) == [course / "students" / "07_gone.ipynb"]
    gen_docs.write_all(course)
    assert not (course / "students" / "07_gone.ipynb").exists()


def test_instructor_guide_copes_with_missing_keys(course):
    gen_docs.write_all(course)
    text = (course / "INSTRUCTOR.md").read_text()
    assert "**Demo live:** Show the roles array." in text and "- Using the average as the bound." in text
    assert "add `labkit.demo` to the YAML header of `notebooks/src/00_intro.py`" in text
    for fact in ("LABKIT_DB_PREFIX", "python3 dev.py workshop prepare --learners 30",
                 "python3 dev.py workshop check --learners 30", "python3 dev.py workshop cleanup",
                 "python3 dev.py reset", "MONGODB_URI", "sl_<OS user name>_", "python3 dev.py workshop links"):
        assert fact in text


def _lesson(i: int, minutes: int, section: str = "S") -> Lesson:
    return Lesson(name=f"{i:02d}_l", number=f"{i:02d}", title=f"L{i}", section=section, minutes=minutes,
                  exercise_minutes=5, demo="", mistakes=(), has_exercise=True, source=Path(f"{i:02d}_l.py"))


@pytest.mark.parametrize("fmt", [f for f in gen_docs.FORMATS if not f.lessons and not f.cap and f.days == 1
                                 and not f.shortened and f.room_exercises is None], ids=lambda f: f.key)
def test_agendas_fit_keep_order_and_spread_breaks(fmt):
    course = [_lesson(i, m) for i, m in enumerate([15, 20, 30, 25, 30, 20, 35, 25, 30, 25, 20, 30, 25, 30, 20,
                                                    25, 30, 35, 20, 25, 30, 25, 20, 30, 25])]
    agenda = gen_docs.plan(fmt, course)
    assert agenda.end <= fmt.total
    assert list(agenda.covered) == course[:len(agenda.covered)]           # a prefix, in order
    assert list(agenda.covered) + list(agenda.left_out) == course
    budget = gen_docs._day_budget(fmt, 0)
    assert budget == fmt.total - gen_docs.OPENING[1] - gen_docs.CLOSING[1] - sum(m for _, m in fmt.breaks) - \
        -(-fmt.total // 10)                                                # a tenth of the day kept spare
    used = sum(x.slot_minutes for x in agenda.covered)
    assert used <= budget < used + agenda.left_out[0].slot_minutes        # the next lesson did not fit
    items = [item for _, _, item in agenda.rows]
    assert sum(item.startswith("**") for item in items) == len(fmt.breaks)
    starts = [start for start, _, _ in agenda.rows]
    assert starts == sorted(starts) and all(s + m == n for (s, m, _), n in zip(agenda.rows, starts[1:]))
    assert gen_docs.plan(fmt, course) == agenda                           # deterministic


def test_full_day_lunch_is_mid_day():
    course = [_lesson(i, 25) for i in range(20)]
    agenda = gen_docs.plan(gen_docs.FORMATS[2], course)
    lunch = next(start for start, _, item in agenda.rows if item == "**Lunch**")
    assert abs(lunch - agenda.end / 2) <= 60


def test_dollar_signs_never_pair_up_into_math(tmp_path):
    make_lesson(tmp_path / "notebooks", "03_lookup", "minutes: 5\ntitle: $lookup or `$graphLookup`?\nsection: R")
    make_lesson(tmp_path / "notebooks", "04_more", "minutes: 5\ntitle: More $match\nsection: R")
    files = gen_docs.expected_files(tmp_path)
    assert "[← 03 · \\$lookup or `$graphLookup`?](03_lookup.ipynb)" in files[tmp_path / "notebooks" / "src" / "04_more.py"]
    assert "| 03 | [\\$lookup or `$graphLookup`?](students/03_lookup.ipynb) | 5 |" in files[tmp_path / "CONTENTS.md"]
    assert "[03 · \\$lookup or `$graphLookup`?](students/03_lookup.ipynb)" in files[tmp_path / "INSTRUCTOR.md"]


def test_student_copy_hides_every_later_output_that_shows_a_predictions_answer():
    """The check's output says what was measured (5000); later outputs showing it (in any number format) lose
    their output in the student copy and are tagged nbval-ignore-output; context before the question, the
    exercise's own statement and unrelated numbers (15000) keep theirs."""
    def code(source, text, tags=()):
        cell = nbformat.v4.new_code_cell(source, metadata={"tags": list(tags)} if tags else {})
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)] if text else []
        return cell

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        code("print(users)", "5000 users\n"),                                                  # 0: context
        code('pk = labkit.exercises.get("37-predict-regex-keys")\npk', "Prediction 37-...: keys?"),
        code("pk.predict(4)", "Prediction recorded: 4.", ["solution"]),                         # 2: the question
        code("keys = measure()\nkeys", "5000", ["reveal"]),                                      # 3
        code("pk.check(keys)", "Not yet: you predicted 4, the measurement says 5000. Why ..."),  # 4
        code("print(table)", "keys examined: 5,000 | docs: 3\n"),                                 # 5: shows it
        code("print(other)", "keys examined: 15000\n"),                                           # 6: another number
        code('ex = labkit.exercises.get("37-login-filter")\nex', "Exercise ...: at most 5000 keys"),  # 7: a task
    ]
    text, blanked = gen_docs.student_notebook(nbformat.writes(nb), {"37-predict-regex-keys"})
    student = nbformat.reads(text, as_version=4)
    kept = [bool(c.outputs) for c in student.cells]
    assert kept == [True, True, False, False, False, False, True, True] and blanked == 1  # 4: the check says it
    for i in (3, 5):
        assert "nbval-ignore-output" in student.cells[i].metadata["tags"]
    assert "nbval-ignore-output" not in student.cells[6].metadata.get("tags", [])
    assert gen_docs.measured_pattern("Correct! you predicted 'a' and it is 'support queue'. ...").search(
        "the SUPPORT QUEUE view")
    assert gen_docs.measured_pattern("Correct! you predicted 4 and it is np.int64(4). Measured").pattern
    assert gen_docs.measured_pattern("Exercise 31-x") is None


def test_readme_and_instructor_name_the_same_shared_mode_lessons():
    """The lessons that scale down with LABKIT_SHARED=1 are read from the sources (their code uses
    labkit.shared); README.md says which, and INSTRUCTOR.md is generated from the same list."""
    import re

    numbers = gen_docs.shared_mode_lessons(notebook_meta.lessons())
    assert {"31", "34"} <= set(numbers)
    said = re.search(r"shared-cluster mode, `labkit\.shared_mode\(\)`:\s+lessons ([\d, and]+) scale",
                     (ROOT / "README.md").read_text())
    assert said and re.findall(r"\d\d", said.group(1)) == numbers
    assert f"lessons {gen_docs._and(numbers)} scale their heaviest" in (ROOT / "INSTRUCTOR.md").read_text()
