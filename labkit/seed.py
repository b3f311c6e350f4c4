"""Deterministic dataset seeders for the Schema Lab notebooks.

Two seeders write lesson data into an empty pymongo-compatible ``Database``:

* :func:`social` -- users with embedded roles, posts that reference their author, and a
  ``follows`` relationship collection (the relationship-modeling lesson). The canonical
  records of that lesson (Sam ``user:112``, Fred ``user:234``, ``post:234``, ``post:432``,
  ``follow:234:112``) are always included verbatim, and Sam is the busiest account.
* :func:`sensors` -- temperature readings stored one document per reading (``readings``)
  and bucketed per sensor and time span (``reading_buckets``), for the bucket-pattern lesson.

Everything is derived from ``random.Random(seed)`` and fixed base dates, so the same
arguments always produce the same documents in the same insertion order. Nothing printed
(``SeedSummary`` repr / HTML) contains timings, so stored notebook outputs stay stable.
"""
from __future__ import annotations

import itertools
import math
import numbers
import random
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import bson
from bson import json_util
from bson.json_util import JSONMode, JSONOptions

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = [
    "SeedSummary",
    "SeedArgumentError",
    "SeedArgumentTypeError",
    "load_canonical",
    "social",
    "sensors",
    "CANONICAL_PATH",
    "MAX_DOCUMENTS",
]

#: Where the canonical lesson records live (MongoDB Extended JSON).
CANONICAL_PATH = Path(__file__).resolve().parent.parent / "data" / "canonical.json"

#: Hard cap on the documents (or, for :func:`sensors`, readings) one seeder call may create.
MAX_DOCUMENTS = 5_000_000
MAX_USERS = 1_000_000
#: ``social(celebrity_followers=None)`` means this many, capped at ``users - 1``.
DEFAULT_CELEBRITY_FOLLOWERS = 1000
BATCH_SIZE = 5_000
#: ...or fewer, once a batch holds this many BSON bytes (big buckets), to bound memory.
BATCH_BYTES = 16 * 1024 * 1024
#: ``progress=None`` shows a bar only above this many documents.
AUTO_PROGRESS_DOCS = 20_000

_EPOCH = datetime(1970, 1, 1)
_BASE = datetime(2026, 1, 1)  # generated social data lives in 2026
_YEAR_S = 365 * 86_400
_USER_SIGNUP_S = (datetime(2026, 10, 1) - _BASE) // timedelta(seconds=1)  # before Sam joined

_FIRST_NAMES = (
    "Ava", "Ben", "Chloe", "Dev", "Elena", "Farah", "Gus", "Hana",
    "Ivan", "Jada", "Kenji", "Lena", "Mateo", "Nia", "Omar", "Priya",
    "Quinn", "Rosa", "Theo", "Uma", "Vikram", "Wren", "Yara", "Zoe",
)
#: The eight assignable role titles and whether each one grants editing.
_ROLE_CAN_EDIT = {
    "admin": True,
    "customer": False,
    "editor": True,
    "moderator": True,
    "author": True,
    "subscriber": False,
    "support": False,
    "billing": False,
}
_ROLE_TITLES = tuple(_ROLE_CAN_EDIT)
#: Relative weights for having 0, 1, ..., 8 role assignments (one-to-few, mostly one).
_ROLE_COUNT_WEIGHTS = (10.0, 50.0, 20.0, 9.0, 5.0, 3.0, 1.5, 1.0, 0.5)
_CITIES = (
    "Los Angeles", "Sacramento", "San Francisco", "San Diego", "San Jose", "Oakland",
    "Fresno", "Long Beach", "Portland", "Seattle", "Denver", "Austin",
)
_POST_TITLES = (
    "favorite pizza", "need a break?", "weekend hike", "new coffee spot", "road trip plans",
    "sunset photos", "book recommendations", "game night", "farmers market haul",
    "first marathon", "rainy day playlist", "home office setup", "taco tuesday",
    "beach day", "learning guitar", "late-night coding",
)
_SAM, _FRED = 112, 234  # canonical user numbers
_CANONICAL_POST_NUMS = frozenset({234, 432})

_LAYOUT_COLLECTIONS = {"readings": "readings", "buckets": "reading_buckets"}


class SeedArgumentError(ValueError):
    """A seeder argument is out of range or of the wrong type (raised before any write)."""


class SeedArgumentTypeError(SeedArgumentError, TypeError):
    """Wrong type for a seeder knob; also a ``TypeError`` for callers that expect one."""


# --------------------------------------------------------------------------- summary


@dataclass(repr=False)
class SeedSummary:
    """What a seeder wrote: documents and BSON bytes per collection.

    ``seconds`` is informational only: it is excluded from ``repr``, HTML and equality
    so that notebook outputs stay deterministic.
    """

    counts: dict[str, int]
    bytes: dict[str, int]
    seconds: float = field(default=0.0, compare=False)

    @property
    def total_documents(self) -> int:
        """Documents written across all collections."""
        return sum(self.counts.values())

    @property
    def total_bytes(self) -> int:
        """BSON bytes written across all collections."""
        return sum(self.bytes.values())

    def to_frame(self) -> "pandas.DataFrame":
        """One row per collection: collection, documents, bytes, avg bytes."""
        import pandas as pd

        rows = [
            {
                "collection": name,
                "documents": count,
                "bytes": self.bytes.get(name, 0),
                "avg bytes": round(self.bytes.get(name, 0) / count, 1) if count else 0.0,
            }
            for name, count in self.counts.items()
        ]
        return pd.DataFrame(rows, columns=["collection", "documents", "bytes", "avg bytes"])

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{name}: {count:,} docs, {_human_bytes(self.bytes.get(name, 0))}"
            for name, count in self.counts.items()
        )
        return f"SeedSummary({parts})"

    def _repr_html_(self) -> str:
        return self.to_frame().to_html(index=False)


def _human_bytes(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- canonical records


def _canonical_path() -> Path:
    """The checkout's data/canonical.json (editable installs), else the copy a wheel installs as
    ``share/schema-lab/data/canonical.json`` (pyproject's data-files) under the environment's prefix (or,
    for ``pip install --target DIR``, under DIR)."""
    if CANONICAL_PATH.exists():
        return CANONICAL_PATH
    installed = Path("share") / "schema-lab" / "data" / "canonical.json"
    for root in (Path(sys.prefix), Path(__file__).resolve().parent.parent):
        if (root / installed).exists():
            return root / installed
    return CANONICAL_PATH


def load_canonical() -> dict[str, list[dict]]:
    """Return the lesson's canonical records (fresh copies) keyed by collection name.

    Reads ``data/canonical.json`` (relaxed or canonical Extended JSON); dates come back as
    timezone-naive UTC ``datetime`` objects, as pymongo returns them by default.
    """
    options = JSONOptions(json_mode=JSONMode.RELAXED, tz_aware=False)
    path = _canonical_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(
            f"labkit.seed: {path} is missing; it ships in the repository's data/ folder (and in "
            "share/schema-lab/data/ of an installed wheel): reinstall labkit from a full clone"
        ) from None
    data = json_util.loads(text, json_options=options)
    return {name: list(docs) for name, docs in data.items()}


# --------------------------------------------------------------------------- validation


def _bad(fn: str, name: str, value: Any, message: str, *, type_error: bool = False) -> SeedArgumentError:
    cls = SeedArgumentTypeError if type_error else SeedArgumentError
    return cls(f"{fn}({name}={value!r}): {message}")


def _int_arg(fn: str, name: str, value: Any, lo: int, hi: int, why: str = "") -> int:
    """Validate an int knob in ``[lo, hi]``; bools and floats are rejected."""
    allowed = f"{name} must be an int between {lo:_} and {hi:_}{why}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _bad(fn, name, value, f"{allowed} (got {type(value).__name__})", type_error=True)
    value = int(value)
    if not lo <= value <= hi:
        raise _bad(fn, name, value, allowed)
    return value


def _real_arg(
    fn: str, name: str, value: Any, lo: float, hi: float, *, lo_open: bool = False,
    hi_name: str = "", why: str = "",
) -> float:
    """Validate a finite number knob in ``[lo, hi]`` (or ``(lo, hi]``); bools are rejected."""
    low = f"greater than {lo:g}" if lo_open else f"at least {lo:g}"
    high = f"{int(hi):_}" if hi.is_integer() else f"{hi:g}"
    if hi_name:
        high = f"{hi_name} ({high})"
    allowed = f"{name} must be a number {low} and at most {high}{why}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _bad(fn, name, value, f"{allowed} (got {type(value).__name__})", type_error=True)
    number = float(value)
    if not math.isfinite(number) or number < lo or (lo_open and number == lo) or number > hi:
        raise _bad(fn, name, value, allowed)
    return number


def _bool_arg(fn: str, name: str, value: Any, *, optional: bool = False) -> bool | None:
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        allowed = "True, False or None (auto)" if optional else "True or False"
        raise _bad(fn, name, value, f"{name} must be {allowed}", type_error=True)
    return value


DEFAULT_FOLLOWS_PER_USER = 10.0
SYSTEM_DATABASES = ("admin", "local", "config")


def _check_db(fn: str, db: Any) -> None:
    """Require something Database-shaped: ``db[name]`` and a str ``name``; not a client/collection."""
    cls = type(db)  # type-level checks: clients and databases invent attributes on access
    is_client = callable(getattr(cls, "list_database_names", None))
    is_collection = callable(getattr(cls, "insert_many", None))
    looks_like_db = hasattr(cls, "__getitem__") and isinstance(getattr(db, "name", None), str)
    if is_client or is_collection or not looks_like_db:
        hint = ""
        if is_client:
            hint = " -- that is a client; pass one of its databases, e.g. client['schema_lab']"
        elif is_collection:
            hint = " -- that is a collection; pass its database, e.g. collection.database"
        raise TypeError(
            f"{fn}(db=<{cls.__name__}>): db must be a pymongo-compatible Database "
            f"(e.g. labkit.fresh_db()){hint}"
        )
    if db.name.lower() in SYSTEM_DATABASES:
        raise SeedArgumentError(
            f"{fn}(db=<database {db.name!r}>): '{db.name}' is a MongoDB system database; seeders never write "
            f"there. Use a lesson database, e.g. labkit.fresh_db('{fn}')"
        )


def _refuse_existing(fn: str, db: Any, names: Sequence[str]) -> None:
    """Never overwrite: raise if any target collection already holds documents."""
    busy = [name for name in names if db[name].find_one({}, projection={"_id": 1}) is not None]
    if busy:
        raise ValueError(
            f"{fn}(db): collection(s) {', '.join(busy)} in database {db.name!r} already contain "
            "documents; seeders never overwrite data -- seed into an empty database from "
            "labkit.fresh_db()"
        )


# --------------------------------------------------------------------------- writing


class _Writer:
    """Buffers documents per collection, sums their BSON sizes, inserts ordered batches."""

    def __init__(self, db: Any, names: Sequence[str], bar: Any, batch_size: int | None = None) -> None:
        self._collections = {name: db[name] for name in names} if db is not None else None
        self._buffers: dict[str, list[dict]] = {name: [] for name in names}
        self._bar = bar
        self._batch_size = batch_size or BATCH_SIZE
        self.counts: dict[str, int] = dict.fromkeys(names, 0)
        self.bytes: dict[str, int] = dict.fromkeys(names, 0)

    def write_all(self, docs: Iterator[tuple[str, dict, int]]) -> None:
        """Consume ``(collection, document, bson_size)`` triples, then flush everything.

        A batch is sent when it reaches ``BATCH_SIZE`` documents or ``BATCH_BYTES`` bytes.
        """
        buffers, sizes, batch_size = self._buffers, self.bytes, self._batch_size
        pending = dict.fromkeys(buffers, 0)
        for name, doc, size in docs:
            sizes[name] += size
            buffer = buffers[name]
            buffer.append(doc)
            pending[name] += size
            if len(buffer) >= batch_size or pending[name] >= BATCH_BYTES:
                self.flush(name)
                pending[name] = 0
        for name in buffers:
            self.flush(name)

    def flush(self, name: str) -> None:
        buffer = self._buffers[name]
        if not buffer:
            return
        if self._collections is not None:
            self._collections[name].insert_many(buffer, ordered=True)
        self.counts[name] += len(buffer)
        if self._bar is not None:
            self._bar.update(len(buffer))
        self._buffers[name] = []


def _progress_bar(progress: bool | None, total: int, desc: str) -> Any:
    """A tqdm.auto bar on stderr, disabled unless forced or the seed is large."""
    from tqdm.auto import tqdm

    show = total > AUTO_PROGRESS_DOCS if progress is None else progress
    return tqdm(
        total=total, desc=desc, unit="doc", unit_scale=True, file=sys.stderr,
        leave=False, disable=not show,
    )


def _run(
    db: Any,
    names: Sequence[str],
    docs: Iterator[tuple[str, dict, int]],
    total: int,
    progress: bool | None,
    desc: str,
    index_specs: Sequence[tuple[str, list[tuple[str, int]], dict]],
    started: float,
) -> SeedSummary:
    bar = _progress_bar(progress, total, desc)
    try:
        writer = _Writer(db, names, bar)
        writer.write_all(docs)
        # Indexes after the bulk load: cheaper on a server, and mongomock checks unique
        # indexes with a scan per insert.
        for name, keys, options in index_specs:
            db[name].create_index(keys, **options)
    finally:
        bar.close()
    return SeedSummary(dict(writer.counts), dict(writer.bytes), time.perf_counter() - started)


# --------------------------------------------------------------------------- social


def _user_numbers(n: int) -> list[int]:
    """Sam, Fred, then 1, 2, 3, ... skipping the canonical numbers."""
    nums = [_SAM, _FRED]
    k = 0
    while len(nums) < n:
        k += 1
        if k not in (_SAM, _FRED):
            nums.append(k)
    return nums


def _heavy_tail_counts(rng: random.Random, m: int, total: int, cap: int, skew: float) -> list[int]:
    """``m`` non-negative ints, each <= cap, summing to about ``total``, Pareto(II)-distributed.

    Raw weights follow a Lomax law with shape ``1 + 1/skew`` (Gini = skew / (skew + 2), so a
    higher skew is more unequal); they are scaled so the capped values sum to ``total`` and
    rounded stochastically.
    """
    if m == 0:
        return []
    inv = -1.0 / (1.0 + 1.0 / skew)
    raw = [(1.0 - rng.random()) ** inv - 1.0 for _ in range(m)]
    if total <= 0 or cap <= 0:
        return [0] * m
    if total >= cap * m:
        return [cap] * m
    # Water-filling: find scale s with sum(min(cap, s * r)) == total.
    ordered = sorted(raw, reverse=True)
    rest = math.fsum(ordered)
    scale = 0.0
    for k in range(m):
        if rest <= 0.0:
            break
        scale = (total - k * cap) / rest
        if ordered[k] * scale <= cap:
            break
        rest -= ordered[k]
    rand = rng.random
    out = []
    for r in raw:
        x = r * scale
        if x >= cap:
            out.append(cap)
            continue
        whole = int(x)
        out.append(whole + 1 if rand() < x - whole else whole)
    return out


def social(
    db: Any,
    *,
    users: int,
    seed: int = 42,
    posts_per_user: float = 5.0,
    celebrities: int = 1,
    celebrity_followers: int | None = None,
    celebrity_posts: int = 500,
    skew: float = 1.2,
    follows_per_user: float | None = None,
    roles_max: int = 8,
    indexes: bool = True,
    progress: bool | None = None,
) -> SeedSummary:
    """Seed ``users``, ``posts`` and ``follows`` for the relationship-modeling lessons.

    ``users`` accounts in total, including the canonical Sam (``user:112``) and Fred
    (``user:234``). Posts and follower counts are heavy-tailed (``skew``: higher = more
    unequal) with overall averages of about ``posts_per_user`` / ``follows_per_user``
    (``follows_per_user`` defaults to 10, clamped to ``celebrity_followers`` for small
    networks: nobody follows more often on average than the most followed account).
    The ``celebrities`` busiest accounts -- Sam first, then ``user:1``, ``user:2``, ... --
    get exactly ``celebrity_posts`` posts and ``celebrity_followers`` followers (default
    ``None``: 1000, or ``users - 1`` when there are fewer other users); everyone else gets
    fewer. Each user has 0..``roles_max`` embedded ``{title, canEdit}`` roles.
    Indexes (when ``indexes``) are the lesson's: posts ``{authorId: 1, createdAt: -1,
    _id: -1}``; follows ``{followerId: 1, followingId: 1}`` (unique) and ``{followingId: 1,
    followerId: 1}``. Raises ``ValueError`` before writing anything if a knob is invalid or
    a target collection already has documents.

    Insertion order (what an unsorted ``find()`` shows): canonical records first; then users
    by number; posts author by author (ids ascending, chronological per author); follows
    followed-user by followed-user, followers by number.
    """
    started = time.perf_counter()
    fn = "social"
    _check_db(fn, db)
    users = _int_arg(fn, "users", users, 2, MAX_USERS)
    seed = _int_arg(fn, "seed", seed, 0, 2**64 - 1)
    celebrities = _int_arg(
        fn, "celebrities", celebrities, 1, users - 1,
        " (Sam is always the first; Fred never is, so at most users - 1)",
    )
    if celebrity_followers is None:
        celebrity_followers = min(DEFAULT_CELEBRITY_FOLLOWERS, users - 1)
    celebrity_followers = _int_arg(
        fn, "celebrity_followers", celebrity_followers, 1, users - 1,
        f" (a user can't have more followers than the {users - 1:_} other users; "
        "Fred always follows Sam)",
    )
    celebrity_posts = _int_arg(
        fn, "celebrity_posts", celebrity_posts, 2, MAX_DOCUMENTS,
        " (Sam's two canonical posts count towards it)",
    )
    posts_per_user = _real_arg(
        fn, "posts_per_user", posts_per_user, 0.0, float(celebrity_posts),
        hi_name="celebrity_posts", why=": celebrities are the busiest accounts",
    )
    if follows_per_user is None:
        follows_per_user = min(DEFAULT_FOLLOWS_PER_USER, float(celebrity_followers))
    follows_per_user = _real_arg(
        fn, "follows_per_user", follows_per_user, 0.0, float(celebrity_followers),
        hi_name="celebrity_followers", why=": celebrities are the most followed accounts",
    )
    skew = _real_arg(fn, "skew", skew, 0.0, 10.0, lo_open=True)
    roles_max = _int_arg(fn, "roles_max", roles_max, 0, len(_ROLE_TITLES),
                         f" (there are {len(_ROLE_TITLES)} role titles)")
    indexes = _bool_arg(fn, "indexes", indexes)
    progress = _bool_arg(fn, "progress", progress, optional=True)

    ordinary = users - celebrities
    post_target = max(0, round(users * posts_per_user) - celebrities * celebrity_posts)
    follow_target = max(0, round(users * follows_per_user) - celebrities * celebrity_followers)
    implied_posts = celebrities * celebrity_posts + min(post_target, ordinary * (celebrity_posts - 1))
    implied_follows = celebrities * celebrity_followers + min(
        follow_target, ordinary * (celebrity_followers - 1))
    implied = users + implied_posts + implied_follows
    if implied > MAX_DOCUMENTS:
        raise SeedArgumentError(
            f"social(users={users}, posts_per_user={posts_per_user:g}, "
            f"follows_per_user={follows_per_user:g}, celebrities={celebrities}, "
            f"celebrity_posts={celebrity_posts}, celebrity_followers={celebrity_followers}): "
            f"these knobs imply about {implied:,} documents ({users:,} users, "
            f"{implied_posts:,} posts, {implied_follows:,} follows); the limit is "
            f"{MAX_DOCUMENTS:,}"
        )

    names = ("users", "posts", "follows")
    _refuse_existing(fn, db, names)

    plan = _plan_social(users, seed, celebrities, celebrity_posts, celebrity_followers,
                        post_target, follow_target, skew)
    total = users + sum(plan["post_counts"]) + sum(plan["follower_counts"])
    index_specs = []
    if indexes:
        index_specs = [
            ("posts", [("authorId", 1), ("createdAt", -1), ("_id", -1)], {}),
            ("follows", [("followerId", 1), ("followingId", 1)], {"unique": True}),
            ("follows", [("followingId", 1), ("followerId", 1)], {}),
        ]
    docs = _social_docs(plan, roles_max)
    return _run(db, names, docs, total, progress, "social", index_specs, started)


def _plan_social(
    users: int, seed: int, celebrities: int, celebrity_posts: int, celebrity_followers: int,
    post_target: int, follow_target: int, skew: float,
) -> dict[str, Any]:
    """Per-user numbers, signup offsets, post counts and follower counts, plus sub-RNGs.

    Independent sub-streams (users / post counts / posts / follower counts / follows) mean
    e.g. the users collection does not change when only the post knobs change.
    """
    master = random.Random(seed)
    rngs = [random.Random(master.getrandbits(64)) for _ in range(5)]
    rng_users, rng_post_counts, rng_posts, rng_follow_counts, rng_follows = rngs

    canonical = load_canonical()
    sam_created = canonical["users"][0]["createdAt"]
    nums = _user_numbers(users)
    created = [(sam_created - _BASE) // timedelta(seconds=1), 0]  # Fred: no createdAt -> base
    random_ = rng_users.random
    created.extend([int(random_() * _USER_SIGNUP_S) for _ in range(users - 2)])

    # Celebrities: Sam (index 0) and the first generated users; Fred (index 1) is ordinary.
    celebrity_idx = [0, *range(2, celebrities + 1)]
    ordinary_idx = [1, *range(celebrities + 1, users)]
    post_counts = [0] * users
    follower_counts = [0] * users
    for i in celebrity_idx:
        post_counts[i] = celebrity_posts
        follower_counts[i] = celebrity_followers
    drawn_posts = _heavy_tail_counts(rng_post_counts, len(ordinary_idx), post_target,
                                     celebrity_posts - 1, skew)
    drawn_followers = _heavy_tail_counts(rng_follow_counts, len(ordinary_idx), follow_target,
                                         celebrity_followers - 1, skew)
    for i, p, f in zip(ordinary_idx, drawn_posts, drawn_followers):
        post_counts[i] = p
        follower_counts[i] = f
    return {
        "canonical": canonical, "nums": nums, "created": created,
        "post_counts": post_counts, "follower_counts": follower_counts,
        "rng_users": rng_users, "rng_posts": rng_posts, "rng_follows": rng_follows,
    }


def _bson_size(template: dict) -> int:
    """BSON size of a template whose str fields are empty (add UTF-8 lengths to get sizes)."""
    return len(bson.encode(template))


def _social_docs(plan: dict[str, Any], roles_max: int) -> Iterator[tuple[str, dict, int]]:
    """Yield ``(collection, document, bson_size)`` in insertion order: users, posts, follows.

    Sizes of generated documents are computed arithmetically (all their strings are ASCII):
    the BSON size of the same shape with empty strings plus the string lengths. The tests
    check every size against ``bson.encode``.
    """
    canonical = plan["canonical"]
    nums: list[int] = plan["nums"]
    created: list[int] = plan["created"]
    n = len(nums)
    end_s = _YEAR_S
    second = timedelta(seconds=1)
    base = _BASE

    # Users: canonical first, then generated in number order.
    for doc in canonical["users"]:
        yield "users", doc, len(bson.encode(doc))
    user_size = _bson_size(
        {"_id": "", "name": "", "email": "", "createdAt": base, "updatedAt": base, "roles": []})
    # One role at a single-digit array index ("0".."7"): element header + sub-document.
    role_size = {
        title: _bson_size({"0": {"title": title, "canEdit": can}}) - 5
        for title, can in _ROLE_CAN_EDIT.items()
    }
    rng = plan["rng_users"]
    random_, choices, sample = rng.random, rng.choices, rng.sample
    cum_weights = list(itertools.accumulate(_ROLE_COUNT_WEIGHTS[: roles_max + 1]))
    role_counts = range(roles_max + 1)
    n_names = len(_FIRST_NAMES)
    for i in range(2, n):
        num = nums[i]
        first = _FIRST_NAMES[int(random_() * n_names)]
        c = created[i]
        k = choices(role_counts, cum_weights=cum_weights)[0]
        _id, name, email = f"user:{num}", f"{first} {num}", f"{first.lower()}{num}@example.com"
        size = user_size + len(_id) + len(name) + len(email)
        roles = []
        if k:
            for title in sample(_ROLE_TITLES, k):
                roles.append({"title": title, "canEdit": _ROLE_CAN_EDIT[title]})
                size += role_size[title]
        yield "users", {
            "_id": _id,
            "name": name,
            "email": email,
            "createdAt": base + c * second,
            "updatedAt": base + (c + int(random_() * (end_s - c))) * second,
            "roles": roles,
        }, size

    # Posts: canonical first, then per author in user order, chronological per author.
    for doc in canonical["posts"]:
        yield "posts", doc, len(bson.encode(doc))
    post_size = _bson_size({"_id": "", "authorId": "", "title": "", "location": "", "createdAt": base})
    rng = plan["rng_posts"]
    random_ = rng.random
    post_counts: list[int] = plan["post_counts"]
    post_num = 0
    titles = [(t, len(t)) for t in _POST_TITLES]
    cities = [(c, len(c)) for c in _CITIES]
    n_titles, n_cities = len(titles), len(cities)
    for i in range(n):
        count = post_counts[i] - (len(canonical["posts"]) if i == 0 else 0)
        if count <= 0:
            continue
        c = created[i]
        span = end_s - c
        author = f"user:{nums[i]}"
        author_size = post_size + len(author)
        for s in sorted([c + int(random_() * span) for _ in range(count)]):
            post_num += 1
            while post_num in _CANONICAL_POST_NUMS:
                post_num += 1
            _id = f"post:{post_num}"
            title, title_len = titles[int(random_() * n_titles)]
            city, city_len = cities[int(random_() * n_cities)]
            yield "posts", {
                "_id": _id,
                "authorId": author,
                "title": title,
                "location": city,
                "createdAt": base + s * second,
            }, author_size + len(_id) + title_len + city_len

    # Follows: canonical first, then per followed user, followers in user order.
    for doc in canonical["follows"]:
        yield "follows", doc, len(bson.encode(doc))
    follow_size = _bson_size({"_id": "", "followerId": "", "followingId": "", "createdAt": base})
    rng = plan["rng_follows"]
    random_, sample = rng.random, rng.sample
    follower_counts: list[int] = plan["follower_counts"]
    user_ids = [f"user:{num}" for num in nums]
    for t in range(n):
        k = follower_counts[t]
        if k <= 0:
            continue
        if t == 0:  # Sam: Fred's canonical follow already counts; pick the rest from index 2+
            picks = sorted([j + 2 for j in sample(range(n - 2), k - 1)])
        else:
            picks = sorted([j if j < t else j + 1 for j in sample(range(n - 1), k)])
        t_num, t_created, following = nums[t], created[t], user_ids[t]
        t_size = follow_size + len(following)
        for f in picks:
            lo = created[f] if created[f] > t_created else t_created
            _id, follower = f"follow:{nums[f]}:{t_num}", user_ids[f]
            yield "follows", {
                "_id": _id,
                "followerId": follower,
                "followingId": following,
                "createdAt": base + (lo + int(random_() * (end_s - lo))) * second,
            }, t_size + len(_id) + len(follower)


# --------------------------------------------------------------------------- sensors


def sensors(
    db: Any,
    *,
    sensors: int,
    hours: int,
    seed: int = 7,
    interval_s: int = 60,
    start: datetime = datetime(2026, 10, 1),
    bucket_span_s: int = 3600,
    layouts: tuple[str, ...] = ("readings", "buckets"),
    indexes: bool = True,
    progress: bool | None = None,
) -> SeedSummary:
    """Seed temperature readings for the bucket-pattern lesson, in one or both layouts.

    Each of ``sensors`` sensors (``sensor:1``...) reports every ``interval_s`` seconds for
    ``hours`` hours from ``start`` (naive UTC; aware datetimes are converted): a seeded,
    mean-reverting random walk around 20 degC rounded to 0.01. Layout ``"readings"`` writes
    one document per reading to ``readings``; ``"buckets"`` writes one document per sensor
    per ``bucket_span_s`` window (aligned to the epoch, e.g. clock hours; ``end`` is
    exclusive) with embedded ``readings`` and ``count``/``sum``/``min``/``max`` to
    ``reading_buckets``. Both layouts hold the same values whatever ``layouts`` selects.
    Indexes (when ``indexes``): readings ``{sensorId: 1, ts: 1}``, reading_buckets
    ``{sensorId: 1, start: 1}`` (unique).
    """
    started = time.perf_counter()
    fn = "sensors"
    _check_db(fn, db)
    n_sensors = _int_arg(fn, "sensors", sensors, 1, 100_000)
    hours = _int_arg(fn, "hours", hours, 1, 366 * 24)
    seed = _int_arg(fn, "seed", seed, 0, 2**64 - 1)
    bucket_span_s = _int_arg(fn, "bucket_span_s", bucket_span_s, 1, 86_400, " (one day)")
    interval_s = _int_arg(fn, "interval_s", interval_s, 1, 86_400, " (one day)")
    if interval_s > bucket_span_s:
        raise SeedArgumentError(
            f"sensors(interval_s={interval_s}, bucket_span_s={bucket_span_s}): interval_s must be "
            "at most bucket_span_s (every bucket holds at least one reading)"
        )
    if not isinstance(start, datetime):
        raise _bad(fn, "start", start, "start must be a datetime (naive = UTC)", type_error=True)
    if start.tzinfo is not None:
        start = start.astimezone(timezone.utc).replace(tzinfo=None)
    if start.microsecond or not 1970 <= start.year <= 2100:
        raise _bad(fn, "start", start,
                   "start must be a whole-second datetime between 1970 and 2100")
    if isinstance(layouts, str) or not isinstance(layouts, (tuple, list)):
        raise _bad(fn, "layouts", layouts,
                   "layouts must be a tuple of 'readings' and/or 'buckets', e.g. ('readings',)",
                   type_error=True)
    if (not layouts or len(set(layouts)) != len(layouts)
            or any(not isinstance(x, str) or x not in _LAYOUT_COLLECTIONS for x in layouts)):
        raise _bad(fn, "layouts", layouts,
                   "layouts must be a non-empty tuple of distinct values from "
                   "('readings', 'buckets')")
    indexes = _bool_arg(fn, "indexes", indexes)
    progress = _bool_arg(fn, "progress", progress, optional=True)

    steps = -(-hours * 3600 // interval_s)
    n_readings = n_sensors * steps
    if n_readings > MAX_DOCUMENTS:
        raise SeedArgumentError(
            f"sensors(sensors={n_sensors}, hours={hours}, interval_s={interval_s}): these knobs "
            f"imply {n_readings:,} readings; the limit is {MAX_DOCUMENTS:,} -- use fewer "
            "sensors or hours, or a longer interval_s"
        )
    t0 = (start - _EPOCH) // timedelta(seconds=1)
    t_last = t0 + (steps - 1) * interval_s
    n_buckets = n_sensors * (t_last // bucket_span_s - t0 // bucket_span_s + 1)

    want = set(layouts)
    names = tuple(_LAYOUT_COLLECTIONS[x] for x in ("readings", "buckets") if x in want)
    _refuse_existing(fn, db, names)
    total = (n_readings if "readings" in want else 0) + (n_buckets if "buckets" in want else 0)
    index_specs = []
    if indexes:
        if "readings" in want:
            index_specs.append(("readings", [("sensorId", 1), ("ts", 1)], {}))
        if "buckets" in want:
            index_specs.append(("reading_buckets", [("sensorId", 1), ("start", 1)], {"unique": True}))
    docs = _sensor_docs(n_sensors, steps, seed, interval_s, start, bucket_span_s,
                        "readings" in want, "buckets" in want)
    return _run(db, names, docs, total, progress, "sensors", index_specs, started)


def _iso(ts: datetime) -> str:
    return ts.isoformat() + "Z"


def _index_key_bytes(n: int) -> int:
    """Total length of the array keys "0", "1", ..., str(n - 1)."""
    total, digits, lo = 0, 1, 0
    while lo < n:
        hi = min(n, 10**digits)
        total += (hi - lo) * digits
        lo, digits = hi, digits + 1
    return total


def _sensor_docs(
    n_sensors: int, steps: int, seed: int, interval_s: int, start: datetime,
    bucket_span_s: int, want_readings: bool, want_buckets: bool,
) -> Iterator[tuple[str, dict, int]]:
    """Yield readings in (ts, sensor) order; each bucket batch as soon as its window closes.

    Values come from the same random walk whatever the layouts, so both layouts agree.
    BSON sizes are computed arithmetically (see :func:`_social_docs`).
    """
    rng = random.Random(seed)
    gauss = rng.gauss
    ids = [f"sensor:{s + 1}" for s in range(n_sensors)]
    bases = [20.0 + rng.uniform(-2.0, 2.0) for _ in range(n_sensors)]
    temps = list(bases)
    span = timedelta(seconds=bucket_span_s)
    t0 = (start - _EPOCH) // timedelta(seconds=1)
    reading_size = _bson_size({"_id": "", "sensorId": "", "ts": start, "temperature": 0.0})
    bucket_size = _bson_size({
        "_id": "", "sensorId": "", "start": start, "end": start, "count": 0, "readings": [],
        "sum": 0.0, "min": 0.0, "max": 0.0,
    })
    item_size = _bson_size({"ts": start, "temperature": 0.0}) + 2  # + type byte, key NUL
    open_key: int | None = None
    open_lists: list[list[dict]] = []

    def close_buckets() -> Iterator[tuple[str, dict, int]]:
        b_start = _EPOCH + timedelta(seconds=open_key)
        b_iso = _iso(b_start)
        b_end = b_start + span
        count = len(open_lists[0])
        items_size = count * item_size + _index_key_bytes(count)
        for sid, items in zip(ids, open_lists):
            values = [r["temperature"] for r in items]
            _id = f"{sid}:{b_iso}"
            yield "reading_buckets", {
                "_id": _id,
                "sensorId": sid,
                "start": b_start,
                "end": b_end,
                "count": count,
                "readings": items,
                "sum": round(math.fsum(values), 2),
                "min": min(values),
                "max": max(values),
            }, bucket_size + len(_id) + len(sid) + items_size

    for i in range(steps):
        offset = i * interval_s
        epoch_s = t0 + offset
        key = epoch_s - epoch_s % bucket_span_s
        if want_buckets and key != open_key:
            if open_key is not None:
                yield from close_buckets()
            open_key = key
            open_lists = [[] for _ in range(n_sensors)]
        ts = start + timedelta(seconds=offset)
        ts_iso = _iso(ts)
        for s in range(n_sensors):
            t = temps[s]
            t += 0.05 * (bases[s] - t) + gauss(0.0, 0.08)
            temps[s] = t
            value = round(t, 2)
            if want_readings:
                _id = f"{ids[s]}:{ts_iso}"
                yield "readings", {
                    "_id": _id,
                    "sensorId": ids[s],
                    "ts": ts,
                    "temperature": value,
                }, reading_size + len(_id) + len(ids[s])
            if want_buckets:
                open_lists[s].append({"ts": ts, "temperature": value})
    if want_buckets and open_key is not None:
        yield from close_buckets()
