"""labkit.seed: canonical records, determinism, distributions, validation, indexes, sensors."""
from __future__ import annotations

import hashlib
import math
import os
import re
import statistics
import subprocess
import sys
from collections import Counter
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import bson
import mongomock
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # allow `pytest tests/test_seed.py` without an install
    sys.path.insert(0, str(ROOT))

from labkit import seed  # noqa: E402
from labkit.seed import SeedSummary, load_canonical, sensors, social  # noqa: E402

SOCIAL = dict(users=600, celebrities=2, celebrity_followers=300, celebrity_posts=150)
SMALL = dict(users=150, celebrity_followers=60, celebrity_posts=40)
YEAR_START, YEAR_END = datetime(2026, 1, 1), datetime(2027, 1, 1)


def new_db(name: str = "lab"):
    return mongomock.MongoClient()[name]


def docs(db, name: str) -> list[dict]:
    return list(db[name].find())


@pytest.fixture(scope="module")
def seeded():
    """One social seed shared by the read-only tests: (db, summary, documents read once)."""
    db = new_db()
    summary = social(db, **SOCIAL)
    data = {name: docs(db, name) for name in ("users", "posts", "follows")}
    return db, summary, data


@pytest.fixture(scope="module")
def seeded_sensors():
    db = new_db()
    summary = sensors(db, sensors=3, hours=25)
    return db, summary


# ----------------------------------------------------------------------------- canonical


def test_load_canonical_holds_the_source_records_exactly():
    c = load_canonical()
    assert set(c) == {"users", "posts", "follows"}
    sam, fred = c["users"]
    assert sam == {
        "_id": "user:112", "name": "Sam", "email": "sam@example.com",
        "createdAt": datetime(2026, 10, 1, 12), "updatedAt": datetime(2026, 10, 1, 12),
        "roles": [{"title": "admin", "canEdit": True}, {"title": "customer", "canEdit": False}],
    }
    assert fred == {"_id": "user:234", "name": "Fred", "roles": []}
    assert c["posts"] == [
        {"_id": "post:234", "authorId": "user:112", "title": "favorite pizza",
         "location": "Los Angeles", "createdAt": datetime(2026, 10, 2, 12)},
        {"_id": "post:432", "authorId": "user:112", "title": "need a break?",
         "location": "Sacramento", "createdAt": datetime(2026, 10, 3, 12)},
    ]
    assert c["follows"] == [
        {"_id": "follow:234:112", "followerId": "user:234", "followingId": "user:112",
         "createdAt": datetime(2026, 10, 4, 12)},
    ]
    assert sam["createdAt"].tzinfo is None  # naive UTC, like pymongo's default


def test_load_canonical_returns_fresh_copies():
    load_canonical()["users"][0]["roles"].clear()
    assert len(load_canonical()["users"][0]["roles"]) == 2


def test_load_canonical_accepts_canonical_extended_json(tmp_path, monkeypatch):
    from bson import json_util

    strict = tmp_path / "canonical.json"
    strict.write_text(json_util.dumps(load_canonical(), json_options=json_util.CANONICAL_JSON_OPTIONS))
    assert '"$numberLong"' in strict.read_text()
    expected = load_canonical()
    monkeypatch.setattr(seed, "CANONICAL_PATH", strict)
    assert load_canonical() == expected


def test_canonical_records_are_seeded_verbatim(seeded):
    db, _, _ = seeded
    for name, records in load_canonical().items():
        for record in records:
            stored = db[name].find_one({"_id": record["_id"]})
            assert list(stored.items()) == list(record.items())  # same fields, same order


# ----------------------------------------------------------------------------- determinism


def _dump(db) -> dict[str, list[bytes]]:
    return {name: [bson.encode(d) for d in db[name].find()] for name in ("users", "posts", "follows")}


def test_same_arguments_same_documents_different_seed_different():
    a, b, c = new_db("a"), new_db("b"), new_db("c")
    sa, sb = social(a, **SMALL), social(b, **SMALL)
    sc = social(c, seed=43, **SMALL)
    assert _dump(a) == _dump(b)  # same ids, dates, values and insertion order
    assert sa == sb and repr(sa) == repr(sb)
    assert sa.seconds > 0  # timing is kept, but not compared or printed
    dump_c = _dump(c)
    for name in ("users", "posts", "follows"):
        assert _dump(a)[name] != dump_c[name]
    assert sc != sa


GOLDEN_SMALL_SHA256 = "15240f0197b5aebd1dadd313f2b40a266d8bbb9affc44921ab0b30b4c1713b51"


def _digest(db) -> str:
    h = hashlib.sha256()
    for name in ("users", "posts", "follows"):
        for d in db[name].find():
            h.update(bson.encode(d))
    return h.hexdigest()


def test_documents_do_not_depend_on_the_process():
    """Same digest in another process with another hash seed, and the pinned one."""
    code = (
        "import sys, mongomock; sys.path.insert(0, %r)\n"
        "from labkit.seed import social\n"
        "import hashlib, bson\n"
        "db = mongomock.MongoClient()['x']; social(db, **%r)\n"
        "h = hashlib.sha256()\n"
        "for name in ('users', 'posts', 'follows'):\n"
        "    for d in db[name].find(): h.update(bson.encode(d))\n"
        "print(h.hexdigest())\n" % (str(ROOT), SMALL)
    )
    hash_seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    env = dict(os.environ, PYTHONHASHSEED=hash_seed)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=ROOT)
    db = new_db()
    social(db, **SMALL)
    assert out.stdout.strip() == _digest(db)
    assert _digest(db) == GOLDEN_SMALL_SHA256, (
        "the social dataset changed: if that was intended, update GOLDEN_SMALL_SHA256 and "
        "rebuild the notebooks' stored outputs (python3 dev.py build-notebooks)"
    )


def test_users_do_not_change_when_only_post_knobs_change():
    a, b = new_db("a"), new_db("b")
    social(a, **SMALL)
    social(b, **{**SMALL, "posts_per_user": 2.0, "follows_per_user": 3.0})
    assert docs(a, "users") == docs(b, "users")


# ----------------------------------------------------------------------------- shape of the data


def test_counts_and_bytes_match_the_summary(seeded):
    db, summary, data = seeded
    assert list(summary.counts) == ["users", "posts", "follows"]
    for name, count in summary.counts.items():
        assert db[name].count_documents({}) == count
        stored = data[name]
        assert len(stored) == count
        assert summary.bytes[name] == sum(len(bson.encode(d)) for d in stored)
    assert summary.counts["users"] == SOCIAL["users"]
    assert summary.total_documents == sum(summary.counts.values())
    assert summary.total_bytes == sum(summary.bytes.values())


def test_averages_are_about_the_requested_ones(seeded):
    _, summary, _ = seeded
    users = SOCIAL["users"]
    assert summary.counts["posts"] == pytest.approx(users * 5.0, rel=0.05)
    assert summary.counts["follows"] == pytest.approx(users * 10.0, rel=0.05)


def test_sam_is_the_busiest_account(seeded):
    db, _, data = seeded
    posts = Counter(d["authorId"] for d in data["posts"])
    followers = Counter(d["followingId"] for d in data["follows"])
    assert db.follows.count_documents({"followingId": "user:112"}) == SOCIAL["celebrity_followers"]
    # Celebrities: Sam first, then user:1.
    for celebrity in ("user:112", "user:1"):
        assert posts[celebrity] == SOCIAL["celebrity_posts"]
        assert followers[celebrity] == SOCIAL["celebrity_followers"]
    assert max(posts.values()) == posts["user:112"]
    assert max(followers.values()) == followers["user:112"]
    ordinary = {u["_id"] for u in data["users"]} - {"user:112", "user:1"}
    assert max(posts[u] for u in ordinary) < SOCIAL["celebrity_posts"]
    assert max(followers[u] for u in ordinary) < SOCIAL["celebrity_followers"]


def test_posts_and_followers_are_heavy_tailed(seeded):
    _, _, data = seeded
    posts = Counter(d["authorId"] for d in data["posts"])
    followers = Counter(d["followingId"] for d in data["follows"])
    ordinary = sorted({u["_id"] for u in data["users"]} - {"user:112", "user:1"})
    for counter in (posts, followers):
        values = [counter[u] for u in ordinary]
        assert max(values) >= 10 * max(1, statistics.median(values))


def _gini(values: list[int]) -> float:
    values = sorted(values)
    n, total = len(values), sum(values)
    return sum((2 * i - n + 1) * v for i, v in enumerate(values)) / (n * total)


def test_higher_skew_is_more_unequal():
    import random

    ginis = []
    for skew in (0.3, 1.2, 4.0):
        counts = seed._heavy_tail_counts(random.Random(1), 5000, 25_000, 499, skew)
        assert sum(counts) == pytest.approx(25_000, rel=0.02)
        assert max(counts) <= 499
        ginis.append(_gini(counts))
    assert ginis == sorted(ginis) and ginis[0] < ginis[-1] - 0.2


def test_users_have_valid_ids_names_dates_and_roles(seeded):
    _, _, data = seeded
    users = data["users"]
    ids = [u["_id"] for u in users]
    assert len(set(ids)) == len(ids)
    assert ids[:2] == ["user:112", "user:234"]
    titles = set(seed._ROLE_TITLES)
    assert len(titles) == 8
    for u in users[2:]:
        assert re.fullmatch(r"user:\d+", u["_id"])
        assert list(u) == ["_id", "name", "email", "createdAt", "updatedAt", "roles"]
        num = u["_id"].split(":")[1]
        assert u["name"].endswith(" " + num) and u["email"].endswith(num + "@example.com")
        assert YEAR_START <= u["createdAt"] <= u["updatedAt"] < YEAR_END
        assert len(u["roles"]) <= 8
        role_titles = [r["title"] for r in u["roles"]]
        assert len(set(role_titles)) == len(role_titles) and set(role_titles) <= titles
        assert all(isinstance(r["canEdit"], bool) and list(r) == ["title", "canEdit"]
                   for r in u["roles"])
    # one-to-few: most users have one role, some none, a few many
    sizes = Counter(len(u["roles"]) for u in users[2:])
    assert sizes.most_common(1)[0][0] == 1 and sizes[0] > 0


def test_roles_max_bounds_roles():
    db = new_db()
    social(db, **SMALL, roles_max=0)
    assert all(u["roles"] == [] for u in db.users.find({"_id": {"$nin": ["user:112"]}}))
    db = new_db()
    social(db, **SMALL, roles_max=2)
    assert max(len(u["roles"]) for u in db.users.find()) == 2


def test_posts_reference_existing_authors_within_2026(seeded):
    _, _, data = seeded
    created = {u["_id"]: u.get("createdAt", YEAR_START) for u in data["users"]}
    posts = data["posts"]
    ids = [p["_id"] for p in posts]
    assert len(set(ids)) == len(ids)
    assert [p["_id"] for p in posts if p["_id"] in ("post:234", "post:432")] == ["post:234", "post:432"]
    cities = set()
    for p in posts:
        assert re.fullmatch(r"post:\d+", p["_id"])
        assert list(p) == ["_id", "authorId", "title", "location", "createdAt"]
        assert created[p["authorId"]] <= p["createdAt"] < YEAR_END
        cities.add(p["location"])
    assert {"Los Angeles", "Sacramento"} <= cities


def test_follows_are_unique_directed_pairs_without_self_follows(seeded):
    _, _, data = seeded
    created = {u["_id"]: u.get("createdAt", YEAR_START) for u in data["users"]}
    pairs = set()
    for f in data["follows"]:
        follower, following = f["followerId"], f["followingId"]
        assert f["_id"] == f"follow:{follower[5:]}:{following[5:]}"
        assert list(f) == ["_id", "followerId", "followingId", "createdAt"]
        assert follower != following and follower in created and following in created
        assert max(created[follower], created[following]) <= f["createdAt"] < YEAR_END
        pairs.add((follower, following))
    assert len(pairs) == len(data["follows"])
    assert ("user:234", "user:112") in pairs


def test_ids_skip_the_canonical_numbers_for_tiny_and_large_seeds():
    db = new_db()
    social(db, users=2, celebrity_followers=1, celebrity_posts=2, posts_per_user=1.0,
           follows_per_user=0.5)
    assert [u["_id"] for u in db.users.find()] == ["user:112", "user:234"]
    assert [f["_id"] for f in db.follows.find()] == ["follow:234:112"]
    assert seed._user_numbers(240)[:2] == [112, 234]
    assert len(set(seed._user_numbers(240))) == 240


# ----------------------------------------------------------------------------- indexes


def test_social_indexes(seeded):
    db, _, _ = seeded
    posts = db.posts.index_information()
    follows = db.follows.index_information()
    assert [("authorId", 1), ("createdAt", -1), ("_id", -1)] in [i["key"] for i in posts.values()]
    by_key = {tuple(i["key"]): i for i in follows.values()}
    assert by_key[(("followerId", 1), ("followingId", 1))].get("unique") is True
    assert not by_key[(("followingId", 1), ("followerId", 1))].get("unique", False)


def test_indexes_false_creates_none():
    db = new_db()
    social(db, **SMALL, indexes=False)
    assert list(db.posts.index_information()) == ["_id_"]
    assert list(db.follows.index_information()) == ["_id_"]


# ----------------------------------------------------------------------------- validation

BAD_SOCIAL = [
    ("users", -1), ("users", 0), ("users", 1), ("users", 1.5), ("users", 10.0), ("users", True),
    ("users", "10"), ("users", None), ("users", 1_000_001),
    ("seed", -1), ("seed", 1.0), ("seed", False), ("seed", 2**64),
    ("posts_per_user", -1), ("posts_per_user", math.nan), ("posts_per_user", math.inf),
    ("posts_per_user", "5"), ("posts_per_user", True), ("posts_per_user", 41),
    ("celebrities", 0), ("celebrities", -1), ("celebrities", 150), ("celebrities", 1.0),
    ("celebrity_followers", 0), ("celebrity_followers", 150), ("celebrity_followers", 1000),
    ("celebrity_followers", 10.0), ("celebrity_followers", "auto"),
    ("celebrity_posts", 1), ("celebrity_posts", 0), ("celebrity_posts", 2.5),
    ("celebrity_posts", 5_000_001),
    ("skew", 0), ("skew", -1.0), ("skew", math.nan), ("skew", 11), ("skew", "1.2"),
    ("follows_per_user", -0.5), ("follows_per_user", 61), ("follows_per_user", math.inf),
    ("roles_max", -1), ("roles_max", 9), ("roles_max", 2.0),
    ("indexes", "yes"), ("indexes", 1), ("indexes", None),
    ("progress", "auto"), ("progress", 1),
]


@pytest.mark.parametrize("arg, value", BAD_SOCIAL)
def test_bad_social_knobs_raise_before_writing(arg, value):
    db = new_db()
    with pytest.raises(ValueError) as info:
        social(db, **{**SMALL, arg: value})
    message = str(info.value)
    assert f"{arg}=" in message and f"{arg} must be" in message
    assert db.list_collection_names() == []


@pytest.mark.parametrize("users, expected", [(500, 499), (1001, 1000), (1200, 1000)])
def test_default_celebrity_followers_fits_the_user_count(users, expected):
    db = new_db()
    social(db, users=users, posts_per_user=0.0, follows_per_user=0.0, celebrity_posts=2)
    assert db.follows.count_documents({"followingId": "user:112"}) == expected


def test_error_message_format():
    with pytest.raises(ValueError, match=re.escape(
            "social(users=-1): users must be an int between 2 and 1_000_000")):
        social(new_db(), users=-1)
    with pytest.raises(TypeError):  # wrong types are ValueError and TypeError at once
        social(new_db(), users=2.0)


def test_too_many_documents_is_refused_with_the_implied_count():
    db = new_db()
    with pytest.raises(ValueError, match=r"imply about [\d,]+ documents.*limit is 5,000,000"):
        social(db, users=1_000_000)
    with pytest.raises(ValueError, match=r"imply [\d,]+ readings"):
        sensors(db, sensors=100_000, hours=24)
    assert db.list_collection_names() == []


@pytest.mark.parametrize("bad", [None, {}, "lab", mongomock.MongoClient(),
                                 mongomock.MongoClient()["lab"]["users"]])
def test_db_must_be_a_database(bad):
    with pytest.raises(TypeError, match=r"db must be a pymongo-compatible Database"):
        social(bad, users=10, celebrity_followers=5)
    with pytest.raises(TypeError, match=r"db must be a pymongo-compatible Database"):
        sensors(bad, sensors=1, hours=1)


def test_existing_data_is_never_overwritten():
    db = new_db()
    db.posts.insert_one({"_id": "mine"})
    db.readings.insert_one({"_id": "mine"})
    with pytest.raises(ValueError, match=r"posts.*fresh_db"):
        social(db, **SMALL)
    with pytest.raises(ValueError, match=r"readings.*fresh_db"):
        sensors(db, sensors=1, hours=1)
    assert db.users.count_documents({}) == 0 and db.follows.count_documents({}) == 0
    assert db.reading_buckets.count_documents({}) == 0
    assert db.posts.count_documents({}) == 1
    social(new_db(), **SMALL)  # a fresh database is fine
    sensors(db, sensors=1, hours=1, layouts=("buckets",))  # untouched collections are fine


BAD_SENSORS = [
    ("sensors", 0), ("sensors", -1), ("sensors", 1.5), ("sensors", True), ("sensors", 100_001),
    ("hours", 0), ("hours", 1.0), ("hours", 10_000),
    ("seed", -1), ("seed", "7"),
    ("interval_s", 0), ("interval_s", 3601), ("interval_s", 60.0),
    ("bucket_span_s", 0), ("bucket_span_s", 86_401), ("bucket_span_s", 30),
    ("start", "2026-10-01"), ("start", date(2026, 10, 1)), ("start", datetime(2026, 10, 1, 0, 0, 0, 5)),
    ("start", datetime(1960, 1, 1)),
    ("layouts", "readings"), ("layouts", ()), ("layouts", ("readings", "readings")),
    ("layouts", ("rows",)), ("layouts", None),
    ("indexes", "no"), ("progress", 0),
]


@pytest.mark.parametrize("arg, value", BAD_SENSORS)
def test_bad_sensor_knobs_raise_before_writing(arg, value):
    db = new_db()
    with pytest.raises(ValueError) as info:
        sensors(db, **{"sensors": 2, "hours": 2, arg: value})
    assert f"{arg}=" in str(info.value) and " must be " in str(info.value)
    assert db.list_collection_names() == []


# ----------------------------------------------------------------------------- summary and progress


def test_summary_display_is_deterministic_and_has_no_timing(seeded):
    _, summary, _ = seeded
    text = repr(summary)
    assert text.startswith("SeedSummary(users: 600 docs, ")
    assert "second" not in text and str(round(summary.seconds, 3)) not in text
    frame = summary.to_frame()
    assert list(frame.columns) == ["collection", "documents", "bytes", "avg bytes"]
    assert list(frame["collection"]) == ["users", "posts", "follows"]
    assert frame["documents"].sum() == summary.total_documents
    assert "<table" in summary._repr_html_()
    other = SeedSummary(dict(summary.counts), dict(summary.bytes), seconds=123.0)
    assert other == summary and repr(other) == text


def test_inserts_ordered_batches_bounded_by_count_and_bytes(monkeypatch):
    calls = []
    real = mongomock.collection.Collection.insert_many

    def spy(self, documents, ordered=True, **kwargs):
        calls.append((self.name, len(documents), ordered))
        return real(self, documents, ordered=ordered, **kwargs)

    monkeypatch.setattr(mongomock.collection.Collection, "insert_many", spy)
    monkeypatch.setattr(seed, "BATCH_SIZE", 300)
    monkeypatch.setattr(seed, "BATCH_BYTES", 50_000)  # about 19 one-hour buckets of 60 readings
    reference = new_db("ref")
    sensors(reference, sensors=4, hours=12, layouts=("readings", "buckets"))
    assert all(ordered for _, _, ordered in calls)
    assert max(n for name, n, _ in calls if name == "readings") == 300
    assert 10 < max(n for name, n, _ in calls if name == "reading_buckets") < 48
    monkeypatch.setattr(seed, "BATCH_SIZE", 5_000)
    monkeypatch.setattr(seed, "BATCH_BYTES", 16 * 1024 * 1024)
    other = new_db("other")
    sensors(other, sensors=4, hours=12)
    for name in ("readings", "reading_buckets"):
        assert docs(reference, name) == docs(other, name)  # batching never changes the data


def test_progress_bar_only_on_stderr_and_only_when_asked(capsys):
    social(new_db(), **SMALL)  # small seed: auto means off
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    sensors(new_db(), sensors=1, hours=1, progress=True)
    out = capsys.readouterr()
    assert out.out == "" and "sensors" in out.err
    sensors(new_db(), sensors=1, hours=1, progress=False)
    assert capsys.readouterr().err == ""


def test_progress_auto_turns_on_for_large_seeds(capsys, monkeypatch):
    monkeypatch.setattr(seed, "AUTO_PROGRESS_DOCS", 100)  # instead of seeding 20,000+ documents
    sensors(new_db(), sensors=1, hours=2)
    out = capsys.readouterr()
    assert out.out == "" and "sensors" in out.err
    sensors(new_db(), sensors=1, hours=1)  # 60 + 1 documents: below the threshold
    assert capsys.readouterr().err == ""


# ----------------------------------------------------------------------------- sensors


def test_sensor_readings_and_buckets_agree(seeded_sensors):
    db, summary = seeded_sensors
    readings = docs(db, "readings")
    buckets = docs(db, "reading_buckets")
    assert summary.counts == {"readings": 3 * 25 * 60, "reading_buckets": 3 * 25}
    assert sum(b["count"] for b in buckets) == len(readings)
    by_sensor: dict[str, list[dict]] = {}
    for r in readings:
        assert r["_id"] == f"{r['sensorId']}:{r['ts'].isoformat()}Z"
        assert list(r) == ["_id", "sensorId", "ts", "temperature"]
        by_sensor.setdefault(r["sensorId"], []).append(r)
    assert sorted(by_sensor) == ["sensor:1", "sensor:2", "sensor:3"]
    for b in buckets:
        assert b["_id"] == f"{b['sensorId']}:{b['start'].isoformat()}Z"
        assert b["end"] - b["start"] == timedelta(hours=1) and b["start"].minute == 0
        inside = [{"ts": r["ts"], "temperature": r["temperature"]}
                  for r in by_sensor[b["sensorId"]] if b["start"] <= r["ts"] < b["end"]]
        assert b["readings"] == inside and b["count"] == len(inside) == 60
        values = [x["temperature"] for x in inside]
        assert b["min"] == min(values) and b["max"] == max(values)
        assert b["sum"] == round(math.fsum(values), 2)
    for name, count in summary.counts.items():
        assert summary.bytes[name] == sum(len(bson.encode(d)) for d in db[name].find())


def test_sensor_values_are_plausible_temperatures(seeded_sensors):
    db, _ = seeded_sensors
    temps = [r["temperature"] for r in db.readings.find()]
    assert all(isinstance(t, float) and round(t, 2) == t for t in temps)
    assert 15 < min(temps) and max(temps) < 25
    assert len(set(temps)) > 100


@pytest.mark.parametrize("interval_s, hours", [(60, 24), (30, 24), (7, 24), (1, 1)])
def test_readings_per_sensor_per_day(interval_s, hours):
    """86,400 / interval_s readings per sensor per day (1-second readings checked per hour)."""
    db = new_db()
    summary = sensors(db, sensors=1, hours=hours, interval_s=interval_s, layouts=("buckets",),
                      indexes=False)
    assert summary.counts == {"reading_buckets": hours}
    total = sum(b["count"] for b in db.reading_buckets.find())
    assert total == math.ceil(86_400 / interval_s * hours / 24)


def test_unaligned_start_gives_partial_buckets_on_clock_hours():
    db = new_db()
    sensors(db, sensors=2, hours=2, start=datetime(2026, 10, 1, 10, 30))
    starts = [b["start"] for b in db.reading_buckets.find({"sensorId": "sensor:1"})]
    assert starts == [datetime(2026, 10, 1, h) for h in (10, 11, 12)]
    counts = [b["count"] for b in db.reading_buckets.find({"sensorId": "sensor:1"})]
    assert counts == [30, 60, 30]
    assert db.readings.find_one(sort=[("ts", 1)])["ts"] == datetime(2026, 10, 1, 10, 30)


def test_aware_start_is_converted_to_naive_utc():
    a, b = new_db("a"), new_db("b")
    sensors(a, sensors=1, hours=1, start=datetime(2026, 10, 1, 2, tzinfo=timezone(timedelta(hours=2))))
    sensors(b, sensors=1, hours=1, start=datetime(2026, 10, 1))
    assert docs(a, "readings") == docs(b, "readings")


def test_layouts_hold_the_same_values_and_sensors_are_deterministic(seeded_sensors):
    db, _ = seeded_sensors
    only_buckets, only_readings = new_db("b"), new_db("r")
    s1 = sensors(only_buckets, sensors=3, hours=25, layouts=("buckets",))
    s2 = sensors(only_readings, sensors=3, hours=25, layouts=["readings"])
    assert only_buckets.list_collection_names() == ["reading_buckets"]
    assert docs(only_buckets, "reading_buckets") == docs(db, "reading_buckets")
    assert docs(only_readings, "readings") == docs(db, "readings")
    assert list(s1.counts) == ["reading_buckets"] and list(s2.counts) == ["readings"]
    same, other = new_db("s"), new_db("o")
    sensors(same, sensors=3, hours=2, layouts=("readings",))
    sensors(other, sensors=3, hours=2, seed=8, layouts=("readings",))
    first_two_hours = docs(db, "readings")[: 3 * 120]  # readings are in (ts, sensor) order
    assert docs(same, "readings") == first_two_hours
    assert docs(other, "readings") != first_two_hours


def test_sensor_indexes(seeded_sensors):
    db, _ = seeded_sensors
    readings = {tuple(i["key"]): i for i in db.readings.index_information().values()}
    buckets = {tuple(i["key"]): i for i in db.reading_buckets.index_information().values()}
    assert (("sensorId", 1), ("ts", 1)) in readings
    assert buckets[(("sensorId", 1), ("start", 1))].get("unique") is True
    db2 = new_db()
    sensors(db2, sensors=1, hours=1, indexes=False)
    assert list(db2.readings.index_information()) == ["_id_"]


# ----------------------------------------------------------------------------- hostile input (issue 17 item 5)

@pytest.mark.parametrize("name", ["admin", "local", "config", "Admin"])
def test_seeders_refuse_system_databases(name):
    db = new_db(name)
    with pytest.raises(seed.SeedArgumentError, match="system database"):
        social(db, users=10)
    with pytest.raises(seed.SeedArgumentError, match="system database"):
        sensors(db, sensors=1, hours=1)
    assert db.list_collection_names() == []


@pytest.mark.parametrize("users", [2, 3, 10, 11])
def test_small_social_works_with_default_follows(users):
    db = new_db()
    summary = social(db, users=users)
    cap = min(10.0, users - 1)  # the documented clamp: follows_per_user <= celebrity_followers
    assert summary.counts["follows"] <= round(users * cap)
    assert summary.counts["users"] == users


def test_explicit_follows_over_the_cap_still_refused():
    with pytest.raises(seed.SeedArgumentError, match="follows_per_user"):
        social(new_db(), users=10, follows_per_user=10.0)


def test_cli_seed_on_embedded_says_data_vanish(monkeypatch, capsys):
    from labkit.__main__ import main
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert main(["seed", "social", "--users", "10", "--db", "vanishing"]) == 0
    out = capsys.readouterr().out
    assert "embedded engine" in out and "gone" in out and "labkit serve" in out


def test_cli_seed_refuses_admin(monkeypatch, capsys):
    from labkit.__main__ import main
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert main(["seed", "social", "--users", "10", "--db", "admin"]) == 1
    assert "system database" in capsys.readouterr().err
