"""The source material's mongosh examples run verbatim in mongosh against the served engine (issue 17, item 4).

The seed documents live outside the repository (``../shared/seeds`` relative to the repo root) and are read
at test time; nothing of their text is copied here. A small parser pulls the executable mongosh statements
out of the prose, mongosh (npm package, ``tools/install_mongosh.sh``) runs them unchanged in one script, and
the test checks the results the source describes: Sam and Fred, the posts newest first, the follows and
their two indexes, the duplicate-key errors on a rerun, and the validator refusing a ninth role.

Semantics checked against MongoDB's manual (insertMany / createIndex / collMod / $jsonSchema maxItems pages)
and jstests/core/query/json_schema/ (maxItems) and jstests/core/write/insert/ (duplicate _id: code 11000).
Locally the test is skipped with an install hint when mongosh or the seeds are missing; under CI=true a
missing mongosh fails.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from bson import json_util
from pymongo import MongoClient

from served_helpers import ROOT, in_ci, mongosh_path, serve_in_thread, unavailable



def _seeds_dir() -> Path:
    """``$SCHEMA_LAB_SEEDS``, else ``../shared/seeds`` next to the repository (for a git worktree: next to
    the main checkout too)."""
    env = os.environ.get("SCHEMA_LAB_SEEDS", "").strip()
    if env:
        return Path(env)
    candidates = [ROOT.parent / "shared" / "seeds"]
    try:
        common = subprocess.run(["git", "rev-parse", "--git-common-dir"], cwd=ROOT, capture_output=True,
                                text=True, timeout=10).stdout.strip()
        if common:
            candidates.append((ROOT / common).resolve().parent.parent / "shared" / "seeds")
    except (OSError, subprocess.SubprocessError):
        pass
    return next((c for c in candidates if c.is_dir()), candidates[0])


SEEDS = _seeds_dir()
# A document whose examples are meant to be run says so ("Run the executable blocks in order in mongosh");
# the statements after that sentence are its executable examples. Snippets in other documents are fragments
# (placeholder ObjectIds such as ObjectId("prod-1"), collections that were never created).
EXECUTABLE_MARK = re.compile(r"executable blocks.*mongosh|mongosh.*executable blocks", re.IGNORECASE)
DB_NAME = "schema_design_demo"
INSTALL_HINT = "install it with tools/install_mongosh.sh (npm install --prefix .tools mongosh) or set SCHEMA_LAB_MONGOSH"


# ---------------------------------------------------------------- parser


@dataclass(frozen=True)
class Statement:
    """One mongosh statement as written in the source (comments kept), and where it starts."""

    source: str
    line: int

    @property
    def code(self) -> str:
        """The statement without its leading comment lines and its final semicolon."""
        lines = [ln for ln in self.source.splitlines() if not ln.lstrip().startswith("//")]
        text = "\n".join(lines).rstrip()
        return text[:-1].rstrip() if text.endswith(";") else text

    @property
    def comments(self) -> list[str]:
        return [ln.strip() for ln in self.source.splitlines() if ln.lstrip().startswith("//")]


_STARTS = re.compile(r"^db(\.|\s*=)")


def _depth_change(line: str) -> tuple[int, bool]:
    """Bracket depth change of one line of JavaScript (strings and // comments skipped), and whether
    the line's code ends with a semicolon."""
    depth, quote, i, code = 0, None, 0, []
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'`":
            quote = ch
        elif line.startswith("//", i):
            break
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        code.append(ch)
        i += 1
    return depth, "".join(code).rstrip().endswith(";")


def mongosh_statements(text: str) -> list[Statement]:
    """The mongosh statements of a document: each starts at a line ``db.…`` or ``db = …`` (with the ``//``
    comment lines right above it) and ends where its brackets close and a line ends with ``;``, or where
    the next line does not continue it (a chained ``.sort(...)``). JSON shapes and prose are skipped."""
    lines = text.splitlines()
    out: list[Statement] = []
    i = 0
    while i < len(lines):
        if not _STARTS.match(lines[i]):
            i += 1
            continue
        start = i
        while start > 0 and lines[start - 1].lstrip().startswith("//"):
            start -= 1
        depth, body = 0, []
        j = i
        while j < len(lines):
            change, ends = _depth_change(lines[j])
            depth += change
            body.append(lines[j])
            j += 1
            if depth <= 0:
                if ends:
                    break
                nxt = lines[j].lstrip() if j < len(lines) else ""
                if not nxt.startswith("."):
                    break
        out.append(Statement("\n".join(lines[start:i] + body), start + 1))
        i = j
    return out


def executable_statements(text: str) -> list[Statement]:
    """The statements a document declares executable (those after its "run the executable blocks" sentence)."""
    mark = EXECUTABLE_MARK.search(text)
    if not mark:
        return []
    offset = text[: mark.end()].count("\n")
    return [s for s in mongosh_statements(text) if s.line > offset + 1]


# ---------------------------------------------------------------- running mongosh

_HARNESS = """\
function __report(i, ok, value) {
  let line;
  try {
    line = EJSON.stringify({ i: i, ok: ok, value: value }, { relaxed: false });
  } catch (e) {  // not a document (a Database handle, for one): its name as mongosh prints it
    line = EJSON.stringify({ i: i, ok: ok, value: String(value) });
  }
  print("__SL__" + line);
}
function __result(r) {
  if (r && typeof r.toArray === "function") { return r.toArray(); }
  return r;
}
function __error(e) {
  return { name: e.name, code: e.code, codeName: e.codeName, message: e.message,
           errInfo: e.errInfo, writeErrors: (e.writeErrors || []).map(w => ({ index: w.index, code: w.code })) };
}
"""


def mongosh_script(statements: list[str]) -> str:
    """A mongosh script running each statement verbatim (wrapped so its result is printed as EJSON)."""
    parts = [_HARNESS]
    for i, code in enumerate(statements):
        parts.append(f"try {{\n  __report({i}, true, __result((\n{code}\n)));\n}} catch (e) {{\n"
                     f"  __report({i}, false, __error(e));\n}}\n")
    return "\n".join(parts)


def run_mongosh(exe: str, uri: str, statements: list[str], tmp: Path) -> list[dict]:
    """Run ``statements`` in one mongosh process; return one ``{i, ok, value}`` per statement."""
    script = tmp / "script.js"
    script.write_text(mongosh_script(statements))
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home), MONGOSH_FORCE_DISABLE_TELEMETRY_FOR_TESTING="1", DO_NOT_TRACK="1")
    proc = subprocess.run([exe, "--quiet", "--norc", uri, str(script)], capture_output=True, text=True,
                          timeout=120, env=env)
    results = [json_util.loads(line[len("__SL__"):]) for line in proc.stdout.splitlines()
               if line.startswith("__SL__")]
    assert proc.returncode == 0 and len(results) == len(statements), (
        f"mongosh exited {proc.returncode} after {len(results)} of {len(statements)} statements\n"
        f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
    return results


# ---------------------------------------------------------------- fixtures


def _seed_documents() -> dict[str, str]:
    if not SEEDS.is_dir():
        pytest.skip(f"the source material is not here: expected the seed documents in {SEEDS} "
                    "(../shared/seeds next to the repository)")
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(SEEDS.glob("*.txt"))}


@pytest.fixture(scope="module")
def seeds() -> dict[str, str]:
    return _seed_documents()


@pytest.fixture(scope="module")
def executable(seeds) -> list[Statement]:
    found = [s for text in seeds.values() for s in executable_statements(text)]
    assert found, f"no seed document in {SEEDS} declares executable mongosh blocks"
    return found


@pytest.fixture(scope="module")
def mongosh() -> str:
    exe = mongosh_path()
    if exe is None:
        unavailable(f"mongosh not found; {INSTALL_HINT}")
    return exe


@pytest.fixture(scope="module")
def server():
    with serve_in_thread() as srv:
        yield srv


# ---------------------------------------------------------------- parser tests (no mongosh needed)


def test_parser_on_a_made_up_document():
    text = "\n".join([
        "Intro prose with db.users mentioned inline.",
        "Run the executable blocks in order in mongosh.",
        '{ "_id": "shape", "not": "code" }',
        "// a comment",
        "db.a.insertOne({ x: 1,  // trailing comment (with a paren",
        '  y: "s;)" });',
        "db.a.find({})",
        "  .sort({ x: 1 }).limit(2);",
        "Prose again.",
        "db.a.countDocuments({})",
        "More prose.",
    ])
    stmts = executable_statements(text)
    assert [s.line for s in stmts] == [4, 7, 10]
    assert stmts[0].comments == ["// a comment"]
    assert stmts[0].code.endswith('y: "s;)" })')
    assert stmts[1].code == "db.a.find({})\n  .sort({ x: 1 }).limit(2)"
    assert stmts[2].code == "db.a.countDocuments({})"
    assert executable_statements(text.replace("executable blocks", "examples")) == []


def test_parser_finds_the_source_examples(executable):
    codes = [s.code for s in executable]
    heads = [c.split("(")[0].strip() for c in codes]
    # The relationship-modeling document's examples, in the order the source gives them.
    for expected in ["db = db.getSiblingDB", "db.users.insertMany", "db.users.find", "db.users.updateOne",
                     "db.posts.insertMany", "db.posts.createIndex", "db.users.findOne", "db.posts.find",
                     "db.users.aggregate", "db.follows.createIndex", "db.follows.insertOne",
                     "db.follows.countDocuments", "db.runCommand"]:
        assert expected in heads, f"{expected} not extracted; got {heads}"
    assert heads.index("db.users.insertMany") < heads.index("db.posts.insertMany") < heads.index("db.runCommand")
    assert all(not c.lstrip().startswith(("{", "[")) for c in codes), "illustrative JSON shapes are not run"


# ---------------------------------------------------------------- mongosh against the served engine


def _by_head(executable: list[Statement]) -> dict[str, list[int]]:
    heads: dict[str, list[int]] = {}
    for i, s in enumerate(executable):
        heads.setdefault(s.code.split("(")[0].strip(), []).append(i)
    return heads


def _ids(docs: list[dict]) -> list:
    return [d["_id"] for d in docs]


def test_source_examples_run_verbatim_in_mongosh(mongosh, server, executable, tmp_path):
    with MongoClient(server.uri, serverSelectionTimeoutMS=5000) as client:
        client.drop_database(DB_NAME)  # "a fresh, disposable database"
    codes = [s.code for s in executable]
    heads = _by_head(executable)
    inserts = heads["db.users.insertMany"] + heads["db.posts.insertMany"] + heads["db.follows.insertOne"]
    def roles(n: int) -> str:
        return "[" + ", ".join(f'{{ title: "r{k}", canEdit: false }}' for k in range(n)) + "]"

    nine = roles(9)
    # After the verbatim run: the source's own claims, each as one more mongosh statement.
    extra = [codes[i] for i in inserts] + [  # "Rerunning the inserts unchanged produces duplicate-key errors"
        'db.follows.insertOne({ _id: "follow:dup", followerId: "user:234", followingId: "user:112" })',
        f'db.users.insertOne({{ _id: "user:999", name: "Nina", roles: {nine} }})',
        f'db.users.updateOne({{ _id: "user:234" }}, {{ $set: {{ roles: {nine} }} }})',
        'db.users.insertOne({ _id: "user:998", name: "Ona", roles: [{ title: "admin", canEdit: "yes" }] })',
        f'db.users.insertOne({{ _id: "user:997", name: "Eight", roles: {roles(8)} }})',
        "db.getName()",
    ]
    results = run_mongosh(mongosh, server.uri, codes + extra, tmp_path)
    verbatim, after = results[: len(codes)], results[len(codes):]
    failed = [(executable[r["i"]].line, executable[r["i"]].code[:60], r["value"]) for r in verbatim if not r["ok"]]
    assert not failed, f"source statements failed in mongosh: {failed}"
    value = [r["value"] for r in verbatim]

    def one(head: str, k: int = 0):
        return value[heads[head][k]]

    # One-to-few: Sam holds the admin role; the find returns only _id, name and roles.
    assert one("db.users.insertMany")["insertedIds"] == {"0": "user:112", "1": "user:234"}
    admins = one("db.users.find")
    assert _ids(admins) == ["user:112"] and set(admins[0]) == {"_id", "name", "roles"}
    upd = one("db.users.updateOne")
    assert (upd["matchedCount"], upd["modifiedCount"]) == (1, 1)
    # One-to-many: posts reference their author; the compound index; newest first.
    assert one("db.posts.createIndex") == "authorId_1_createdAt_-1__id_-1"
    assert one("db.users.findOne") == {"_id": "user:112", "name": "Sam"}
    posts = one("db.posts.find")
    assert _ids(posts) == ["post:432", "post:234"]
    assert all(set(p) == {"_id", "title", "location", "createdAt"} for p in posts)
    joined = one("db.users.aggregate")
    assert len(joined) == 1 and set(joined[0]) == {"_id", "name", "posts"}
    assert _ids(joined[0]["posts"]) == ["post:432", "post:234"]
    # One-to-infinity: the relationship collection and its two indexes.
    assert [value[i] for i in heads["db.follows.createIndex"]] == ["followerId_1_followingId_1",
                                                                  "followingId_1_followerId_1"]
    assert one("db.follows.insertOne")["insertedId"] == "follow:234:112"
    who_follows_sam, fred_follows = (value[i] for i in heads["db.follows.find"])
    assert _ids(who_follows_sam) == ["follow:234:112"] and _ids(fred_follows) == ["follow:234:112"]
    assert one("db.follows.countDocuments") == 1
    assert one("db.runCommand")["ok"] == 1

    # The rerun inserts fail with duplicate keys (E11000, code 11000), as the source says.
    reruns, after = after[: len(inserts)], after[len(inserts):]
    for r in reruns:
        assert not r["ok"] and (r["value"]["code"] == 11000
                                or {w["code"] for w in r["value"]["writeErrors"]} == {11000}), r
    dup_pair, ninth_insert, ninth_update, bad_type, eight, name = after
    assert not dup_pair["ok"] and dup_pair["value"]["code"] == 11000, "unique follower/following pair"
    # The validator refuses a ninth role on insert and on update (DocumentValidationFailure, code 121).
    for r in (ninth_insert, ninth_update, bad_type):
        assert not r["ok"] and r["value"]["code"] == 121, r
        assert r["value"]["errInfo"]["failingDocumentId"] is not None
    assert eight["ok"] and eight["value"]["insertedId"] == "user:997", "eight roles are allowed"
    assert name["ok"] and name["value"] == DB_NAME, "db = db.getSiblingDB(...) switched the database"

    # The same data seen from pymongo through the served engine.
    with MongoClient(server.uri, serverSelectionTimeoutMS=5000) as client:
        db = client[DB_NAME]
        sam = db.users.find_one({"_id": "user:112"})
        assert sam["roles"][0] == {"title": "admin", "canEdit": False} and sam["updatedAt"] > sam["createdAt"]
        assert db.users.find_one({"_id": "user:234"})["roles"] == []
        assert sorted(db.users.distinct("_id")) == ["user:112", "user:234", "user:997"]
        assert db.follows.index_information()["followerId_1_followingId_1"].get("unique") is True
        options = db.list_collections(filter={"name": "users"}).next()["options"]
        assert options["validator"]["$jsonSchema"]["properties"]["roles"]["maxItems"] == 8
        assert (options["validationLevel"], options["validationAction"]) == ("strict", "error")


def test_mongosh_missing_fails_under_ci(monkeypatch):
    monkeypatch.setenv("SCHEMA_LAB_MONGOSH", "/nonexistent/mongosh")
    assert mongosh_path() is None
    monkeypatch.setenv("CI", "true")
    assert in_ci()
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        unavailable(f"mongosh not found; {INSTALL_HINT}")
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="install_mongosh"):
        unavailable(f"mongosh not found; {INSTALL_HINT}")


def test_seed_documents_are_read_not_copied():
    """The repository holds none of the source text (it is read from ../shared/seeds at test time)."""
    docs = _seed_documents()
    sample = next(s for text in docs.values() for s in executable_statements(text)
                  if s.code.startswith("db.runCommand"))
    needle = sample.code.splitlines()[0] + "\n" + sample.code.splitlines()[1]
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    for rel in tracked:
        path = ROOT / rel
        if path.suffix in {".py", ".md", ".ipynb", ".js", ".json", ".txt"} and path.is_file():
            assert needle not in path.read_text(encoding="utf-8", errors="replace"), rel

