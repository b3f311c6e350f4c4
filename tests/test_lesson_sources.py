"""Every lesson carries its sources, and cites each of them where the claim is made (issue 25, part 3).

The rule (LESSON_CONVENTIONS.md, "Sources"), for each lesson ``notebooks/src/NN_name.py``:

1. its ``labkit:`` header has a non-empty ``sources:`` list (title and url; tools/notebook_meta.py refuses a
   malformed entry, a url of a kind that is not MongoDB's own material, a repeated title or url);
2. every entry's url is the target of a markdown link in a cell the author wrote (no uncited sources; the
   generated "Sources" cell does not count);
3. every link in the markdown to MongoDB's material (mongodb.com, mongodb.org, github.com/mongodb...) is an entry
   of the list, exactly (no unlisted sources);
4. nothing in the lesson points at this machine's files (``../shared``, ``/work/``).

Lessons not done yet are in :data:`KNOWN`; an entry that passes makes the test fail, so the list only shrinks.
``python tests/test_lesson_sources.py [lesson ...]`` prints the problems.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lesson_checks import (authored_markdown, by_name, lesson_tests,  # noqa: E402
                           main, notebook_meta)

#: lesson -> why it does not pass yet (remove the entry when it does; the test says so)
KNOWN: dict[str, str] = {}  # every lesson lists and cites its sources (issue 25; lessons 40-42: issue 27)

#: a link to MongoDB's own material, which must then be a listed source
MONGODB_LINK = re.compile(r"https?://(?:[\w-]+\.)*mongodb\.(?:com|org)\b[^\s)>\]\"']*|"
                          r"https?://github\.com/mongodb(?:-js|-labs)?/[^\s)>\]\"']*", re.IGNORECASE)
#: markdown link targets: [text](url "title"), <url>, and reference definitions [ref]: url
LINK_TARGET = re.compile(r"\]\(\s*<?([^\s)>]+)>?(?:\s+\"[^\"]*\")?\s*\)|<(https?://[^>\s]+)>|^\s*\[[^\]]+\]:\s*(\S+)",
                         re.MULTILINE)
LOCAL_PATH = re.compile(r"\.\./shared\b|(?<![\w.])/work/|file://")


def link_targets(markdown: str) -> list[str]:
    """Every link target of ``markdown``."""
    return [next(g for g in m.groups() if g) for m in LINK_TARGET.finditer(markdown)]


def problems_of(path: Path) -> list[str]:
    """What is wrong with the sources of the lesson whose source is ``path`` (empty when nothing)."""
    try:
        lesson = notebook_meta.read_lesson(path)
    except notebook_meta.MetadataError as exc:
        return [str(exc)]
    nb = jupytext.read(path)
    markdown = authored_markdown(nb)
    found: list[str] = []
    if not lesson.sources:
        found.append("no `sources:` list in the labkit header (every statement about MongoDB's behaviour needs "
                     "its source)")
    listed = {s.url for s in lesson.sources}
    linked = {t for md in markdown for t in link_targets(md)}
    for src in lesson.sources:
        if notebook_meta.source_url_kind(src.url) is None:
            found.append(f"source {src.title!r}: url {src.url} is not of an allowed kind")
        if src.url not in linked:
            found.append(f"source {src.title!r} is never cited: link its url from the markdown where the claim is "
                         f"made, e.g. [short text]({src.url})")
    mentioned = sorted({u.rstrip(".,;:") for md in markdown for u in MONGODB_LINK.findall(md)})
    for url in mentioned:
        if url not in listed:
            found.append(f"the markdown links {url}, which is not in `sources:` (add it there, with a title)")
    whole = path.read_text(encoding="utf-8")
    for m in LOCAL_PATH.finditer(whole):
        line = whole.count("\n", 0, m.start()) + 1
        found.append(f"line {line} points at a file of this machine ({m.group(0)!r}); cite MongoDB's own page")
    return found


problems = by_name(problems_of)
test_known_lists_only_lessons, test_every_lesson_lists_and_cites_its_sources = lesson_tests(problems, KNOWN, "tests/test_lesson_sources.py")


# --- the rule itself, on throw-away lessons ------------------------------------------------------------------

MANUAL = "https://www.mongodb.com/docs/manual/core/index-unique/"
JSTEST = "https://github.com/mongodb/mongo/blob/v8.0/jstests/core/index/index_signature.js"
HEADER = """# ---
# jupyter:
#   labkit:
#     minutes: 5
#     title: T
#     section: S
{sources}# ---
"""


def _lesson(tmp_path: Path, body: str, sources: tuple[tuple[str, str], ...] = (("Unique", MANUAL),)) -> Path:
    listed = "".join(f"#     - title: {t}\n#       url: {u}\n" for t, u in sources)
    path = tmp_path / "src" / "09_t.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER.format(sources="#     sources:\n" + listed if sources else "") + body)
    return path


CITED = f"# %% [markdown]\n# A duplicate key fails with error 11000 ([manual: unique indexes]({MANUAL})).\n"


def test_a_cited_source_passes(tmp_path):
    assert problems_of(_lesson(tmp_path, CITED)) == []
    reference_style = f"# %% [markdown]\n# Unique [indexes][u] reject it.\n#\n# [u]: {MANUAL}\n"
    assert problems_of(_lesson(tmp_path, reference_style)) == []


def test_no_sources_fails(tmp_path):
    assert [p[:22] for p in problems_of(_lesson(tmp_path, "# %% [markdown]\n# Text.\n", ()))] == ["no `sources:` list in "]


def test_an_uncited_source_fails_and_the_sources_cell_does_not_count(tmp_path):
    body = (f"# %% [markdown]\n# A duplicate key fails.\n\n# %% [markdown] tags=[\"sources\"]\n# ## Sources\n#\n"
            f"# 1. [Unique]({MANUAL})\n")
    assert problems_of(_lesson(tmp_path, body)) == [
        f"source 'Unique' is never cited: link its url from the markdown where the claim is made, e.g. "
        f"[short text]({MANUAL})"]
    mentioned_in_code = f"# %%\nURL = \"{MANUAL}\"\n\n# %% [markdown]\n# No link here.\n"
    assert len(problems_of(_lesson(tmp_path, mentioned_in_code))) == 1


def test_an_unlisted_mongodb_link_fails(tmp_path):
    body = CITED + f"# Since 5.0 ([jstest]({JSTEST})); see also https://www.mongodb.com/docs/manual/indexes/.\n"
    assert problems_of(_lesson(tmp_path, body)) == [
        f"the markdown links {JSTEST}, which is not in `sources:` (add it there, with a title)",
        "the markdown links https://www.mongodb.com/docs/manual/indexes/, which is not in `sources:` (add it "
        "there, with a title)"]
    assert problems_of(_lesson(tmp_path, body.replace("; see also https://www.mongodb.com/docs/manual/indexes/", ""),
                               (("Unique", MANUAL), ("Signature", JSTEST)))) == []


def test_a_link_must_match_the_entry_exactly(tmp_path):
    body = CITED.replace(MANUAL, MANUAL + "#unique-compound-index")
    found = problems_of(_lesson(tmp_path, body))
    assert any("never cited" in p for p in found) and any("#unique-compound-index, which is not" in p for p in found)


def test_a_local_path_fails(tmp_path):
    found = problems_of(_lesson(tmp_path, CITED + "# From ../shared/seeds/004.md.\n"))
    assert found == ["line 13 points at a file of this machine ('../shared'); cite MongoDB's own page"]


def test_a_malformed_header_is_reported_not_raised(tmp_path):
    found = problems_of(_lesson(tmp_path, CITED, (("Blog", "https://example.com/post"),)))
    assert len(found) == 1 and "not one of the allowed kinds" in found[0] and "09_t.py" in found[0]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], problems, KNOWN))
