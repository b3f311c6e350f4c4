"""Schema decision helper: from a workload table and relationship cardinalities to a recommended model.

``recommend(access_patterns, relationships)`` is pure (no database, no widgets) and deterministic; every
recommendation carries the reasons, with the numbers it used, and links to the lessons that teach it.
``decision_widget()`` wraps it in a small form for learners.

Inputs
------
An **access pattern** is one row of the workload table (notebook 00)::

    {"operation": "Show profile", "type": "read", "per_second": 400,
     "entities": ["users", "posts"],            # first = the document that is read; the others come with it
     "fields": ["name", "posts.title"],         # "entity.field"; a bare name belongs to the first entity;
                                                # "avg(reviews.rating)", "count(reviews)" ... are aggregates
     # optional:
     "filter": ["status"],                      # extra equality filters on the child
     "sort": {"createdAt": -1},                 # order in which children are shown
     "limit": 20}                               # only the first N children are shown

A **relationship** says how many ``child`` records one ``parent`` has::

    {"parent": "users", "child": "posts",
     "cardinality": [0, 50, None],              # [min, likely, max]; max None (or math.inf) = unbounded
     "child_queried_alone": True,               # children are read without their parent
     "changes_with_parent": False,              # children are written together with the parent
     "child_doc_bytes": 400,                    # BSON size of one child
     # optional:
     "reference_field": "authorId",             # field on the child holding the parent _id (default userId)
     "parents_per_child": [0, 80, None],        # > 1 makes it many-to-many (default [1, 1, 1])
     "name": "follows",                         # the relationship collection's name (many-to-many)
     "link_fields": ["followerId", "followingId"],
     "time_series": False}                      # children are measurements arriving over time

Rules (thresholds are module constants)
---------------------------------------
The rules follow the course's source material: "data that is accessed together is stored together"; embed small,
bounded relationships read and changed with the parent; reference from the child when children grow without a
useful bound or are queried on their own; use a relationship collection with an index per direction for
many-to-many graphs such as follows; treat 16 MiB as a wall, not a target.

1. **Many-to-many** (``parents_per_child`` max > 1): if one side's list is bounded (max < ``EMBED_BOUND``),
   keep an array of references on that side with a multikey index; otherwise a relationship collection, one
   document per pair, a unique index ``{a: 1, b: 1}`` and the reverse index ``{b: 1, a: 1}``.
2. **Embed** when the relationship is bounded (max < ``EMBED_BOUND``), small (max x child_doc_bytes <
   ``EMBED_MAX_BYTES``, 1 MiB: far below the 16 MiB document limit), the children are not queried alone, and they
   are read with the parent (an access pattern names both) or change with it. max 1 = a subdocument.
3. **Child reference** otherwise: the parent's ``_id`` on each child and a compound index matching the hottest
   read of the children: equality fields first, then the sort, then ``_id`` to break ties
   (``{authorId: 1, createdAt: -1, _id: -1}``).

Patterns suggested on top:

- **subset**: a read shows the parent with only its N newest children (``limit``), and the children are not
  embedded: keep those N inside the parent (``$push`` with ``$sort`` in display order and ``$slice: N``, which keeps the first N), the rest in the child collection.
  Not when the children are written more often than that read runs (write-heavy): each new child would cost an
  extra update to save less than one query per write.
- **computed**: a read needs an aggregate of the children and runs >= ``COMPUTED_MIN_READS_PER_WRITE`` times per
  write to them: maintain the aggregate in the parent on each write.
- **outlier**: the likely count fits in the parent but the max does not (max >= ``OUTLIER_RATIO`` x likely):
  embed up to a cap and move the overflow of the few large parents to their own collection, flagged in the parent.
- **time-series collection**: time-series children without a useful bound: a MongoDB time-series collection
  (``timeseries={timeField, metaField}``) buckets them itself.
- **bucket**: the same children bucketed by hand per parent and time window, when buckets need custom fields.
- **extended reference**: a hot read (>= ``HOT_READS_PER_SECOND``) needs at most ``EXTENDED_MAX_FIELDS`` fields
  of a referenced parent: copy those fields into the document read, with a stated consistency policy.
"""
from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labkit.plots import ShowsText

EMBED_BOUND = 100                     # "bounded": fewer than 100 elements in an array (the source material's
                                      # embed rule: "The array is bounded (< 100 items)"), for embedded children
                                      # and for arrays of references alike
EMBED_MAX_BYTES = 1024 * 1024         # "small": max x child size must stay under 1 MiB (1/16 of the 16 MiB limit)
BSON_LIMIT_BYTES = 16 * 1024 * 1024
COMPUTED_MIN_READS_PER_WRITE = 10     # reads per write on an aggregate that justify maintaining it on write
OUTLIER_RATIO = 10                    # max >= 10 x likely: a few parents are far above the typical one
HOT_READS_PER_SECOND = 100            # a read this frequent is worth copying fields for
EXTENDED_MAX_FIELDS = 3               # "a few fields" of another entity

PLANNED_LESSONS = {
    "embed": "01_embed_one_to_few",
    "child reference": "02_one_to_many",
    "lookup": "03_lookup",
    "relationship collection": "04_follows",
    "array of references": "05_two_way",
    "two-way": "05_two_way",
    "denormalization": "06_denormalization",
    "validation": "07_validation",
    "bucket": "10_bucket",
    "outlier": "11_outlier",
    "computed": "12_computed",
    "schema versioning": "13_schema_versioning",
    "polymorphic": "14_polymorphic",
    "attribute": "15_attribute",
    "extended reference": "16_extended_reference_subset",
    "subset": "16_extended_reference_subset",
}
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"

_TYPES = ("read", "write")
_AP_REQUIRED = ("operation", "type", "per_second", "fields", "entities")
_AP_OPTIONAL = ("filter", "sort", "limit")
_REL_REQUIRED = ("parent", "child", "cardinality", "child_queried_alone", "changes_with_parent", "child_doc_bytes")
_REL_OPTIONAL = ("reference_field", "parents_per_child", "name", "link_fields", "time_series")
_AGGREGATE = re.compile(r"^(avg|sum|count|min|max)\((.*)\)$")


# --- results -----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Index:
    """An index to create: ``collection``, ordered ``keys`` and whether it is unique."""

    collection: str
    keys: tuple[tuple[str, int], ...]
    unique: bool = False

    @property
    def spec(self) -> dict[str, int]:
        """The key document, e.g. ``{"authorId": 1, "createdAt": -1, "_id": -1}`` (ordered)."""
        return dict(self.keys)

    def __str__(self) -> str:
        keys = ", ".join(f"{k}: {d}" for k, d in self.keys)
        return f"{self.collection}: {{{keys}}}" + (" unique" if self.unique else "")


@dataclass(frozen=True)
class Advice:
    """One recommendation: a model for a relationship, or a pattern to apply on top."""

    kind: str                      # "model" or "pattern"
    name: str                      # "embed", "child reference", "relationship collection", "subset", ...
    parent: str
    child: str
    shape: str                     # what the documents look like
    reasons: tuple[str, ...]       # each with the numbers used
    indexes: tuple[Index, ...] = ()
    lessons: tuple[str, ...] = ()  # notebook names, e.g. "02_one_to_many"


@dataclass(frozen=True)
class Recommendation:
    """What :func:`recommend` found: one model per relationship and the patterns that apply."""

    models: tuple[Advice, ...]
    patterns: tuple[Advice, ...] = field(default=())

    def model_for(self, parent: str, child: str) -> Advice:
        """The model advice for the ``parent`` -> ``child`` relationship (KeyError if there is none)."""
        for advice in self.models:
            if (advice.parent, advice.child) == (parent, child):
                return advice
        raise KeyError(f"no relationship {parent} -> {child}; have {[(a.parent, a.child) for a in self.models]}")

    @property
    def pattern_names(self) -> list[str]:
        """Names of the suggested patterns, in order."""
        return [p.name for p in self.patterns]

    @property
    def indexes(self) -> list[Index]:
        """Every index the recommendation asks for."""
        return [ix for a in (*self.models, *self.patterns) for ix in a.indexes]

    def text(self) -> str:
        """Deterministic plain-text summary."""
        lines = []
        for a in (*self.models, *self.patterns):
            lines.append(f"{a.parent} -> {a.child}: {a.name}" + (" (pattern)" if a.kind == "pattern" else ""))
            lines += [f"  index {ix}" for ix in a.indexes]
            lines += [f"  - {r}" for r in a.reasons]
        return "\n".join(lines)

    def to_html(self) -> str:
        """An HTML table: relationship, recommendation, shape, indexes, reasons and lesson links."""
        head = "".join(f"<th style='text-align:left'>{h}</th>" for h in
                       ("relationship", "recommendation", "shape", "indexes", "why", "lessons"))
        rows = []
        for a in (*self.models, *self.patterns):
            esc = html.escape
            label = f"{a.name} pattern" if a.kind == "pattern" else a.name
            rows.append(
                "<tr>"
                f"<td>{esc(a.parent)} &rarr; {esc(a.child)}</td>"
                f"<td class='labkit-{a.kind}'><b>{esc(label)}</b></td>"
                f"<td><code>{esc(a.shape)}</code></td>"
                f"<td>{'<br>'.join(f'<code>{esc(str(ix))}</code>' for ix in a.indexes)}</td>"
                f"<td><ul style='margin:0'>{''.join(f'<li>{esc(r)}</li>' for r in a.reasons)}</ul></td>"
                f"<td>{'<br>'.join(f'<a href={chr(34)}{esc(s)}.ipynb{chr(34)}>{esc(s)}</a>' for s in a.lessons)}</td>"
                "</tr>"
            )
        return f"<table class='labkit-decision'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        return self.text()


# --- lesson links ------------------------------------------------------------------------------------------

def lesson_for(keyword: str, notebooks: Path = NOTEBOOKS) -> str:
    """The notebook name teaching ``keyword`` (e.g. "subset"): the existing ``NN_*.ipynb`` with the planned number,
    else the planned name (so links work before the lesson is written)."""
    planned = PLANNED_LESSONS[keyword]
    existing = sorted(Path(notebooks).glob(planned[:3] + "*.ipynb")) if Path(notebooks).is_dir() else []
    return existing[0].stem if existing else planned


def _lessons(*keywords: str) -> tuple[str, ...]:
    seen: list[str] = []
    for k in keywords:
        stem = lesson_for(k)
        if stem not in seen:
            seen.append(stem)
    return tuple(seen)


# --- validation --------------------------------------------------------------------------------------------

def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and not (isinstance(x, float) and math.isnan(x))


def _check_keys(row: Any, where: str, required: tuple[str, ...], optional: tuple[str, ...]) -> None:
    if not isinstance(row, dict):
        raise ValueError(f"{where} must be a dict with keys {', '.join(required)}; got {type(row).__name__}")
    missing = [k for k in required if k not in row]
    if missing:
        raise ValueError(f"{where} is missing {', '.join(missing)} (required: {', '.join(required)})")
    unknown = sorted(set(row) - set(required) - set(optional))
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {', '.join(unknown)}; allowed: "
                         f"{', '.join(required + optional)}")


def _str_list(value: Any, where: str, allow_empty: bool) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) \
            or not all(isinstance(x, str) and x.strip() for x in value) or (not value and not allow_empty):
        need = "a list of field names" + ("" if allow_empty else " (at least one)")
        raise ValueError(f"{where}={value!r} must be {need}, e.g. ['users', 'posts']")
    return [x.strip() for x in value]


def _cardinality(value: Any, where: str) -> tuple[float, float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise ValueError(f"{where}={value!r} must be [min, likely, max]; max may be None or math.inf for unbounded")
    lo, likely, hi = value
    hi = math.inf if hi is None else hi
    for name, x in (("min", lo), ("likely", likely), ("max", hi)):
        if not _is_number(x) or x < 0 or (name != "max" and math.isinf(x)):
            allowed = "a number >= 0, or None/math.inf" if name == "max" else "a finite number >= 0"
            raise ValueError(f"{where} {name}={x!r} must be {allowed}")
    if not lo <= likely <= hi:
        raise ValueError(f"{where}={value!r}: need min <= likely <= max")
    return float(lo), float(likely), float(hi)


def _access_pattern(row: Any, i: int) -> dict[str, Any]:
    where = f"access_patterns[{i}]"
    _check_keys(row, where, _AP_REQUIRED, _AP_OPTIONAL)
    if not isinstance(row["operation"], str) or not row["operation"].strip():
        raise ValueError(f"{where}.operation={row['operation']!r} must be a non-empty string")
    if row["type"] not in _TYPES:
        raise ValueError(f"{where}.type={row['type']!r} is not allowed; allowed values: 'read', 'write'")
    if not _is_number(row["per_second"]) or row["per_second"] < 0 or math.isinf(row["per_second"]):
        raise ValueError(f"{where}.per_second={row['per_second']!r} must be a finite number >= 0")
    out = dict(row, operation=row["operation"].strip(),
               fields=_str_list(row["fields"], f"{where}.fields", True),
               entities=_str_list(row["entities"], f"{where}.entities", False),
               filter=_str_list(row.get("filter", []), f"{where}.filter", True))
    sort = row.get("sort") or {}
    if not isinstance(sort, dict) or not all(isinstance(k, str) and v in (1, -1) and not isinstance(v, bool)
                                             for k, v in sort.items()):
        raise ValueError(f"{where}.sort={sort!r} must map field names to 1 or -1, e.g. {{'createdAt': -1}}")
    out["sort"] = dict(sort)
    limit = row.get("limit")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ValueError(f"{where}.limit={limit!r} must be a whole number >= 1 or None")
    out["limit"] = limit
    return out


def _relationship(row: Any, i: int) -> dict[str, Any]:
    where = f"relationships[{i}]"
    _check_keys(row, where, _REL_REQUIRED, _REL_OPTIONAL)
    for key in ("parent", "child"):
        if not isinstance(row[key], str) or not row[key].strip():
            raise ValueError(f"{where}.{key}={row[key]!r} must be a non-empty collection/entity name")
    for key in ("child_queried_alone", "changes_with_parent", "time_series"):
        if key in row and not isinstance(row[key], bool):
            raise ValueError(f"{where}.{key}={row[key]!r} is not allowed; allowed values: True, False")
    size = row["child_doc_bytes"]
    if not _is_number(size) or size <= 0 or math.isinf(size):
        raise ValueError(f"{where}.child_doc_bytes={size!r} must be a number of bytes > 0")
    out = dict(row, parent=row["parent"].strip(), child=row["child"].strip(),
               cardinality=_cardinality(row["cardinality"], f"{where}.cardinality"),
               parents_per_child=_cardinality(row.get("parents_per_child", [1, 1, 1]), f"{where}.parents_per_child"),
               time_series=row.get("time_series", False))
    for key in ("reference_field", "name"):
        if key in row and (not isinstance(row[key], str) or not row[key].strip()):
            raise ValueError(f"{where}.{key}={row[key]!r} must be a non-empty string")
    if "link_fields" in row:
        links = _str_list(row["link_fields"], f"{where}.link_fields", False)
        if len(links) != 2 or links[0] == links[1]:
            raise ValueError(f"{where}.link_fields={row['link_fields']!r} must be two different field names")
    return out


# --- the rules ---------------------------------------------------------------------------------------------

def _singular(name: str) -> str:
    if name.endswith("ies"):
        return name[:-3] + "y"
    if name.endswith("s") and not name.endswith("ss"):
        return name[:-1]
    return name


def _n(x: float) -> str:
    if math.isinf(x):
        return "unbounded"
    return f"{int(x):,}" if x == int(x) else f"{x:,.1f}"


def _bytes(n: float) -> str:
    if math.isinf(n):
        return "unbounded"
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{int(n):,} B"


def _rate(x: float) -> str:
    return f"{x:,.0f}/s" if x >= 1 else f"{x:,.4g}/s"


def _mentions(pattern: dict[str, Any], entity: str) -> bool:
    return entity in pattern["entities"]


def _fields_of(pattern: dict[str, Any], entity: str) -> list[str]:
    """Plain (non-aggregate) fields ``pattern`` needs from ``entity``."""
    out = []
    for f in pattern["fields"]:
        if _AGGREGATE.match(f):
            continue
        owner, _, rest = f.partition(".") if "." in f else (pattern["entities"][0], "", f)
        if owner == entity:
            out.append(rest or f)
    return out


def _aggregates_over(pattern: dict[str, Any], entity: str) -> list[str]:
    """Aggregate fields such as ``avg(reviews.rating)`` over ``entity`` in ``pattern``."""
    found = []
    for f in pattern["fields"]:
        m = _AGGREGATE.match(f)
        if m and (m.group(2) == entity or m.group(2).startswith(entity + ".")):
            found.append(f)
    return found


def _doc(d: dict[str, int]) -> str:
    """``{"createdAt": -1}`` -> ``{createdAt: -1}`` (as in mongosh)."""
    return "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"


def _child_index(rel: dict[str, Any], ref: str, patterns: list[dict[str, Any]]) -> tuple[Index, str]:
    """Equality on the reference (and filters), then the sort, then _id, for the hottest read of the children
    *by parent* (the parent's page listing them, or a read of the child filtering on the reference)."""
    parent, child = rel["parent"], rel["child"]
    by_parent = [p for p in patterns if p["type"] == "read" and _mentions(p, child)
                 and (p["entities"][0] == parent or ref in p["filter"])]
    keys: list[tuple[str, int]] = [(ref, 1)]
    if not by_parent:
        return Index(child, tuple(keys)), f"no access pattern lists the {child} of one {_singular(parent)}, " \
                                          f"so the index is just {{{ref}: 1}}"
    hot = max(by_parent, key=lambda p: p["per_second"])
    keys += [(f, 1) for f in hot["filter"] if f != ref]
    keys += [(f, d) for f, d in hot["sort"].items() if f not in dict(keys)]
    if hot["sort"] and "_id" not in dict(keys):
        keys.append(("_id", list(hot["sort"].values())[-1]))
    extra = [f for f in hot["filter"] if f != ref]
    why = (f"'{hot['operation']}' ({_rate(hot['per_second'])}) filters on {ref}"
           + (f" and {', '.join(extra)}" if extra else "")
           + (f" and sorts by {_doc(hot['sort'])}" if hot["sort"] else "")
           + f": index {_doc(dict(keys))} serves it (equality first, then the sort"
           + (", then _id to break ties between equal sort values)" if hot["sort"] else ")"))
    return Index(child, tuple(keys)), why


def _model(rel: dict[str, Any], patterns: list[dict[str, Any]]) -> Advice:
    parent, child = rel["parent"], rel["child"]
    lo, likely, hi = rel["cardinality"]
    size = rel["child_doc_bytes"]
    card = f"[{_n(lo)}, {_n(likely)}, {_n(hi)}]"
    together = [p for p in patterns if p["type"] == "read" and _mentions(p, parent) and _mentions(p, child)]
    child_reads = [p for p in patterns if p["type"] == "read" and _mentions(p, child)]

    # 1. many-to-many
    p_lo, p_likely, p_hi = rel["parents_per_child"]
    if p_hi > 1:
        a, b = rel.get("link_fields") or [f"{_singular(parent)}Id", f"{_singular(child)}Id"]
        if a == b:
            a, b = "fromId", "toId"
        if hi < EMBED_BOUND or p_hi < EMBED_BOUND:
            on_parent = hi <= p_hi
            holder, other, n = (parent, child, hi) if on_parent else (child, parent, p_hi)
            arr = f"{_singular(other)}Ids"
            return Advice(
                "model", "array of references", parent, child,
                f"{holder}: {{_id, ..., {arr}: [<{other} _id>, ...]}}  (at most {_n(n)})",
                (f"many-to-many: one {_singular(parent)} links to {card} {child}, one {_singular(child)} is linked from "
                 f"[{_n(p_lo)}, {_n(p_likely)}, {_n(p_hi)}] {parent}",
                 f"the list on {holder} is bounded (at most {_n(n)}, fewer than the {EMBED_BOUND} items the source "
                 f"allows a bounded array), so keep the references on that side; a multikey index finds the other "
                 f"direction"),
                (Index(holder, ((arr, 1),)),), _lessons("array of references", "validation"))
        coll = rel.get("name") or f"{_singular(parent)}_{child}"
        return Advice(
            "model", "relationship collection", parent, child,
            f"{coll}: {{_id, {a}, {b}, createdAt}}  (one document per pair)",
            (f"many-to-many with no useful bound: one {_singular(parent)} links to {card} {child}, one "
             f"{_singular(child)} is linked from [{_n(p_lo)}, {_n(p_likely)}, {_n(p_hi)}] {parent}",
             f"arrays on either side would grow without bound towards the {_bytes(BSON_LIMIT_BYTES)} document "
             f"limit and every new pair would rewrite a growing document; one small document per pair never grows",
             f"the unique index {{{a}: 1, {b}: 1}} prevents duplicate pairs and serves one direction; "
             f"{{{b}: 1, {a}: 1}} serves the other"),
            (Index(coll, ((a, 1), (b, 1)), unique=True), Index(coll, ((b, 1), (a, 1)))),
            _lessons("relationship collection", "two-way"))

    # 2. embed
    bounded = hi < EMBED_BOUND
    worst = hi * size
    small = worst < EMBED_MAX_BYTES
    wanted = bool(together) or rel["changes_with_parent"]
    if bounded and small and not rel["child_queried_alone"] and wanted:
        why_together = (f"'{together[0]['operation']}' ({_rate(together[0]['per_second'])}) reads {parent} with "
                        f"{child}" if together else f"{child} change together with their {parent}")
        reasons = [
            f"bounded: at most {_n(hi)} {child} per {_singular(parent)} (fewer than {EMBED_BOUND})",
            f"small: {_n(hi)} x {_bytes(size)} = {_bytes(worst)} at most, under {_bytes(EMBED_MAX_BYTES)} "
            f"(the hard limit is {_bytes(BSON_LIMIT_BYTES)})",
            f"{why_together}, and {child} are not queried without their {_singular(parent)}: one read, "
            "one atomic write",
        ]
        if hi == 1:
            return Advice("model", "embed", parent, child, f"{parent}: {{_id, ..., {_singular(child)}: {{...}}}}",
                          tuple(reasons), (), _lessons("embed"))
        reasons.append(f"enforce the bound with a $jsonSchema validator: {child}: {{maxItems: {_n(hi)}}}")
        return Advice("model", "embed", parent, child, f"{parent}: {{_id, ..., {child}: [{{...}}, ...]}}",
                      tuple(reasons), (), _lessons("embed", "validation"))

    # 3. child reference
    ref = rel.get("reference_field") or f"{_singular(parent)}Id"
    reasons = []
    if not bounded:
        reasons.append(f"{child} per {_singular(parent)} is {card}: "
                       + ("nothing bounds the max; an array on " + parent + " would keep growing (references in an "
                          "array do not fix that)" if math.isinf(hi)
                          else f"max {_n(hi)} is not fewer than {EMBED_BOUND}, more than the source lets a bounded "
                               f"array hold"))
    if not small and not math.isinf(worst):
        reasons.append(f"the embedded worst case is {_n(hi)} x {_bytes(size)} = {_bytes(worst)}, not under "
                       f"{_bytes(EMBED_MAX_BYTES)} (hard limit {_bytes(BSON_LIMIT_BYTES)})")
    if rel["child_queried_alone"]:
        alone = [p for p in child_reads if not _mentions(p, parent)]
        reasons.append(f"{child} are queried on their own"
                       + (f" ('{alone[0]['operation']}', {_rate(alone[0]['per_second'])})" if alone else ""))
    if bounded and small and not rel["child_queried_alone"] and not wanted:
        reasons.append(f"no access pattern reads {parent} with {child} and they do not change together, "
                       "so nothing is gained by embedding")
    index, why_index = _child_index(rel, ref, patterns)
    reasons.append(f"store the {_singular(parent)}'s _id in {child}.{ref}; {why_index}")
    return Advice("model", "child reference", parent, child, f"{child}: {{_id, {ref}: <{_singular(parent)} _id>, ...}}",
                  tuple(reasons), (index,), _lessons("child reference", "lookup"))


def _patterns(rel: dict[str, Any], model: Advice, patterns: list[dict[str, Any]]) -> list[Advice]:
    parent, child = rel["parent"], rel["child"]
    lo, likely, hi = rel["cardinality"]
    size = rel["child_doc_bytes"]
    out: list[Advice] = []
    reads = [p for p in patterns if p["type"] == "read"]
    writes = [p for p in patterns if p["type"] == "write" and _mentions(p, child)]
    write_rate = sum(p["per_second"] for p in writes)
    embedded = model.name == "embed"
    many = model.name in ("relationship collection", "array of references")

    # subset: the parent is shown with only its N newest children
    for p in reads:
        if embedded or many or not p["limit"] or p["entities"][0] != parent or not _mentions(p, child):
            continue
        n = p["limit"]
        if n >= hi:
            continue
        if writes and write_rate > p["per_second"]:
            continue  # write-heavy: an extra update per new child costs more than the query it saves per read
        order = p["sort"] or {"createdAt": -1}
        # $push applies $sort, then $slice: a positive N keeps the first N of the sorted array, a negative N the
        # last N (manual, "$push" / "$slice" modifier). Sorted in display order, the shown N are the first N.
        out.append(Advice(
            "pattern", "subset", parent, child,
            f"{parent}: {{_id, ..., recent{child.capitalize()}: [<the {n} {child} shown, in display order>]}}",
            (f"'{p['operation']}' ({_rate(p['per_second'])}) shows only {n} of "
             + (f"an unbounded number of {child}" if math.isinf(hi) else f"up to {_n(hi)} {child}"),
             f"keep those {n} inside the {_singular(parent)} ($push with $each, $sort {_doc(order)} and $slice: {n}: "
             f"after the sort the shown {n} are the first {n}; $slice: -{n} would keep the last {n}, the ones "
             f"not shown) and the full set in {child}: the page becomes one document read",
             f"the copy costs one extra update per new {_singular(child)}"
             + (f" ({_rate(write_rate)})" if writes else "") + "; it is rebuildable from the child collection"),
            (), _lessons("subset")))
        break

    # computed: an aggregate over the children, read far more often than the children are written
    for p in reads:
        aggs = _aggregates_over(p, child)
        if many or not aggs or not _mentions(p, parent):
            continue
        read_rate = sum(q["per_second"] for q in reads if _aggregates_over(q, child) and _mentions(q, parent))
        ratio = math.inf if write_rate == 0 else read_rate / write_rate
        if ratio < COMPUTED_MIN_READS_PER_WRITE:
            continue
        ratio_text = "no writes listed" if math.isinf(ratio) else f"{ratio:,.0f} reads per write"
        out.append(Advice(
            "pattern", "computed", parent, child,
            f"{parent}: {{_id, ..., {', '.join(aggs)} kept up to date}}",
            (f"{', '.join(aggs)} is read {_rate(read_rate)} and {child} are written {_rate(write_rate)}: "
             f"{ratio_text} (>= {COMPUTED_MIN_READS_PER_WRITE})",
             f"update the stored value on each write (e.g. $inc a count and a sum) instead of aggregating up to "
             f"{_n(hi)} {child} on every read"),
            (), _lessons("computed")))
        break

    # outlier: the typical parent fits, the biggest does not
    if not embedded and not many and not rel["child_queried_alone"] \
            and any(_mentions(p, parent) and _mentions(p, child) for p in reads) \
            and likely < EMBED_BOUND and likely * size < EMBED_MAX_BYTES and likely > 0 \
            and hi >= OUTLIER_RATIO * likely:
        cap = int(min(EMBED_BOUND - 1, max(likely * 2, 1)))
        out.append(Advice(
            "pattern", "outlier", parent, child,
            f"{parent}: {{_id, ..., {child}: [<up to {cap}>], hasOverflow: true|false}}",
            (f"likely {_n(likely)} {child} per {_singular(parent)} ({_bytes(likely * size)}) fits, but max "
             f"{_n(hi)} is {'unbounded' if math.isinf(hi) else f'{hi / likely:,.0f}x the likely count'} "
             f"(>= {OUTLIER_RATIO}x)",
             f"embed up to {cap} and move the overflow of the few large {parent} to {child} with a "
             f"hasOverflow flag, so typical reads stay one document"),
            (), _lessons("outlier")))

    # time series: MongoDB's time-series collections bucket measurements themselves (5.0+); the hand-made bucket
    # pattern remains the choice when buckets must carry custom fields or measurements are updated individually
    if rel["time_series"] and (hi >= EMBED_BOUND or hi * size >= EMBED_MAX_BYTES):
        ref = rel.get("reference_field") or f"{_singular(parent)}Id"
        out.append(Advice(
            "pattern", "time-series collection", parent, child,
            f"db.create_collection('{child}', timeseries={{'timeField': 'ts', 'metaField': '{ref}', "
            f"'granularity': 'seconds'}})",
            (f"{child} are a time series with max {_n(hi)} per {_singular(parent)}"
             + (f", written {_rate(write_rate)}" if writes else "")
             + f"; each measurement is inserted once and read by {ref} and time range",
             f"a time-series collection stores one document per measurement for the application and groups them "
             f"into compressed buckets per {ref} and time span itself; an index {{{ref}: 1, ts: 1}} serves the "
             "range reads, and expireAfterSeconds can drop old data"),
            (Index(child, ((ref, 1), ("ts", 1))),), _lessons("bucket")))
        out.append(Advice(
            "pattern", "bucket", parent, child,
            f"{child}_buckets: {{_id, {ref}, start: <window start>, count, measurements: [...]}}",
            (f"{child} are a time series with max {_n(hi)} per {_singular(parent)}"
             + (f", written {_rate(write_rate)}" if writes else ""),
             "or bucket them by hand (when buckets need custom fields such as running totals, or measurements are "
             "corrected one by one): one document per parent and time window (e.g. an hour) so the document and "
             "index entry counts drop by the bucket size, with min/max/count per bucket"),
            (Index(f"{child}_buckets", ((ref, 1), ("start", 1)), unique=True),), _lessons("bucket")))

    # extended reference: a hot read of the child needs a few fields of its referenced parent
    if model.name == "child reference":
        for p in reads:
            if p["entities"][0] != child or not _mentions(p, parent) or p["per_second"] < HOT_READS_PER_SECOND:
                continue
            needed = _fields_of(p, parent)
            if not 1 <= len(needed) <= EXTENDED_MAX_FIELDS:
                continue
            copy = ", ".join(needed)
            out.append(Advice(
                "pattern", "extended reference", parent, child,
                f"{child}: {{_id, ..., {_singular(parent)}: {{_id, {copy}}}}}",
                (f"'{p['operation']}' runs {_rate(p['per_second'])} (>= {HOT_READS_PER_SECOND}/s) and needs only "
                 f"{len(needed)} field(s) of {parent} ({copy})",
                 f"copy {copy} into each {_singular(child)} to drop the second query or $lookup; decide whether the "
                 "copy is a snapshot (never updated) or a cache (refreshed on change, with a deadline)"),
                (), _lessons("extended reference", "denormalization")))
            break
    return out


MONOTONIC_NAMES = ("createdAt", "created_at", "ts", "timestamp", "date", "time", "_id")


def _shard_key_advice(collection: str, key: Any, rels: list[dict[str, Any]],
                      aps: list[dict[str, Any]]) -> Advice:
    """The sharding checks of lessons 40-41 on one proposed shard key: monotonic change, cardinality, and the
    hot reads it targets or broadcasts."""
    if not isinstance(key, dict) or not key or any(v not in (1, "hashed") for v in key.values()):
        raise ValueError(f"shard_keys[{collection!r}] must be a key like {{'authorId': 1, 'createdAt': 1}} or "
                         f"{{'_id': 'hashed'}} (fields 1 or 'hashed'), got {key!r}")
    first = next(iter(key))
    reasons: list[str] = []
    rel = next((r for r in rels if r["child"] == collection), None)
    if key[first] == 1 and first in MONOTONIC_NAMES:
        reasons.append(f"{first} first only increases (a timestamp or ObjectId): every insert lands in the last "
                       f"range, on one shard (a hot shard); lead with another field or hash it")
    if rel is not None:
        ref = rel["reference_field"]
        if list(key) == [ref]:
            reasons.append(f"{ref} alone has one value per {_singular(rel['parent'])}: all of one "
                           f"{_singular(rel['parent'])}'s {rel['child']} stay in one range that can never split "
                           f"(a jumbo range for the largest); add a second field, e.g. {{{ref}: 1, createdAt: 1}}")
        for ap in aps:
            if ap["type"] != "read" or not _mentions(ap, collection):
                continue
            reads_by_parent = ap["entities"][0] == rel["parent"] or ap["entities"][0] == collection
            targeted = first == ref and reads_by_parent
            if reads_by_parent and not targeted:
                reasons.append(f"\"{ap['operation']}\" ({_rate(ap['per_second'])}) reads {collection} by {ref}, "
                               f"which the key does not start with: the router broadcasts it to every shard")
            elif targeted:
                reasons.append(f"\"{ap['operation']}\" ({_rate(ap['per_second'])}) filters on {ref}, the key's "
                               f"first field: targeted to one shard")
    if not reasons:
        reasons.append(f"no sharding problem found in the workload for {key}")
    name = "shard key: review" if any("broadcast" in r or "hot shard" in r or "jumbo" in r for r in reasons) \
        else "shard key: fits"
    return Advice("pattern", name, "cluster", collection, f"shardCollection {collection} {_doc(key)}",
                  tuple(reasons), (), ("40_shard_keys", "41_query_targeting"))


def recommend(access_patterns: list[dict], relationships: list[dict],
              shard_keys: dict[str, dict] | None = None) -> Recommendation:
    """Recommend a model for every relationship, and patterns on top, from the workload and cardinalities.

    ``shard_keys`` (optional) maps a collection to a proposed shard key, e.g. ``{"posts": {"createdAt": 1}}``;
    each gets a "shard key" advice: monotonic change, a key of one value per parent, and which hot reads the key
    targets or broadcasts (lessons 40-41). Pure and deterministic; see the module docstring for the input keys
    and the rules. Raises ValueError naming the bad field and the allowed values.
    """
    if not isinstance(access_patterns, (list, tuple)):
        raise ValueError(f"access_patterns must be a list of dicts, got {type(access_patterns).__name__}")
    if not isinstance(relationships, (list, tuple)) or not relationships:
        raise ValueError("relationships must be a non-empty list of dicts "
                         "(parent, child, cardinality, child_queried_alone, changes_with_parent, child_doc_bytes)")
    aps = [_access_pattern(row, i) for i, row in enumerate(access_patterns)]
    rels = [_relationship(row, i) for i, row in enumerate(relationships)]
    pairs = [(r["parent"], r["child"]) for r in rels]
    dupes = sorted({p for p in pairs if pairs.count(p) > 1})
    if dupes:
        raise ValueError(f"relationships: {dupes[0][0]} -> {dupes[0][1]} is listed more than once")
    models = [_model(r, aps) for r in rels]
    patterns = [p for r, m in zip(rels, models) for p in _patterns(r, m, aps)]
    if shard_keys is not None:
        if not isinstance(shard_keys, dict):
            raise ValueError(f"shard_keys must be a dict of collection -> key, got {type(shard_keys).__name__}")
        patterns += [_shard_key_advice(c, k, rels, aps) for c, k in shard_keys.items()]
    return Recommendation(tuple(models), tuple(patterns))


# --- the widget --------------------------------------------------------------------------------------------

def _parse_max(text: str) -> float | None:
    t = str(text).strip().lower()
    if t in {"", "none", "inf", "infinity", "unbounded", "∞", "-"}:
        return None
    try:
        value = float(t.replace(",", ""))
    except ValueError:
        raise ValueError(f"max={text!r} must be a number, or 'unbounded' (also: inf, ∞, empty)") from None
    return int(value) if value == int(value) else value


def _split(text: str) -> list[str]:
    return [x.strip() for x in str(text).split(",") if x.strip()]


def _parse_sort(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in _split(text):
        name, _, direction = item.partition(":")
        direction = direction.strip() or "1"
        if direction not in {"1", "-1"}:
            raise ValueError(f"sort={text!r}: write field:1 or field:-1, comma-separated (e.g. createdAt:-1)")
        out[name.strip()] = int(direction)
    return out


@dataclass(repr=False)  # shown by ShowsText
class DecisionWidget(ShowsText):
    """A form: one access pattern row and one relationship; ``run()`` (or the button) shows the recommendation."""

    controls: dict[str, Any]
    button: Any
    output: Any
    recommendation: Recommendation | None = None
    error: str = ""
    _box: Any = None

    def values(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The access pattern and relationship dicts the form describes (ValueError on unparsable text)."""
        c = {k: w.value for k, w in self.controls.items()}
        pattern: dict[str, Any] = {
            "operation": c["operation"], "type": c["type"], "per_second": c["per_second"],
            "fields": _split(c["fields"]), "entities": _split(c["entities"]),
        }
        if _split(c["sort"]):
            pattern["sort"] = _parse_sort(c["sort"])
        if c["limit"]:
            pattern["limit"] = c["limit"]
        relationship: dict[str, Any] = {
            "parent": c["parent"], "child": c["child"],
            "cardinality": [c["min"], c["likely"], _parse_max(c["max"])],
            "child_queried_alone": c["child_queried_alone"], "changes_with_parent": c["changes_with_parent"],
            "child_doc_bytes": c["child_doc_bytes"],
        }
        if c["reference_field"].strip():
            relationship["reference_field"] = c["reference_field"].strip()
        per_child = _parse_max(c["parents_per_child"])
        if per_child is None or per_child > 1:
            relationship["parents_per_child"] = [0, 1 if per_child is None else min(per_child, 2), per_child]
        if c["time_series"]:
            relationship["time_series"] = True
        return pattern, relationship

    def write_pattern(self) -> dict[str, Any] | None:
        """The write row of the form (None when its rate is 0): what is written, how often."""
        c = {k: w.value for k, w in self.controls.items()}
        if not c["write_per_second"]:
            return None
        return {"operation": c["write_operation"] or "write", "type": "write", "per_second": c["write_per_second"],
                "entities": _split(c["write_entities"]), "fields": []}

    def run(self, *_: Any) -> Recommendation | None:
        """Recommend for the current form values and show the table (or the error) in ``output``."""
        try:
            pattern, relationship = self.values()
            write = self.write_pattern()
            self.recommendation = recommend([pattern] + ([write] if write else []), [relationship])
            self.error = ""
            self.output.value = self.recommendation.to_html()
        except ValueError as exc:
            self.recommendation, self.error = None, str(exc)
            self.output.value = f"<p class='labkit-error' style='color:#b00020'>{html.escape(self.error)}</p>"
        return self.recommendation

    @property
    def output_html(self) -> str:
        """The HTML currently shown under the form."""
        return self.output.value

    @property
    def widget(self) -> Any:
        """The widget tree to display (built once)."""
        import ipywidgets as w

        if self._box is not None:
            return self._box
        c = self.controls
        rows = [
            w.HTML("<b>Access pattern</b>"),
            w.HBox([c["operation"], c["type"], c["per_second"]]),
            w.HBox([c["entities"], c["fields"]]),
            w.HBox([c["sort"], c["limit"]]),
            w.HTML("<b>Write</b> (rate 0 = none listed)"),
            w.HBox([c["write_operation"], c["write_per_second"], c["write_entities"]]),
            w.HTML("<b>Relationship</b> (children per parent: min, likely, max)"),
            w.HBox([c["parent"], c["child"], c["reference_field"]]),
            w.HBox([c["min"], c["likely"], c["max"], c["child_doc_bytes"]]),
            w.HBox([c["parents_per_child"], c["child_queried_alone"], c["changes_with_parent"], c["time_series"]]),
            self.button, self.output,
        ]
        self._box = w.VBox(rows)
        return self._box

    def text(self) -> str:
        """Deterministic plain-text summary (what a notebook stores as text/plain)."""
        if self.error:
            return f"decision widget: {self.error}"
        return "decision widget\n" + (self.recommendation.text() if self.recommendation else "(not run yet)")


EXAMPLE_PATTERN = {
    "operation": "Show profile with newest posts", "type": "read", "per_second": 400,
    "entities": ["users", "posts"], "fields": ["name", "posts.title", "posts.createdAt"],
    "sort": {"createdAt": -1}, "limit": 20,
}
EXAMPLE_WRITE = {"operation": "Publish post", "type": "write", "per_second": 5, "entities": ["posts"],
                 "fields": ["title"]}
EXAMPLE_RELATIONSHIP = {
    "parent": "users", "child": "posts", "cardinality": [0, 50, None], "child_queried_alone": True,
    "changes_with_parent": False, "child_doc_bytes": 400, "reference_field": "authorId",
}


def decision_widget(pattern: dict | None = None, relationship: dict | None = None,
                    write: dict | None = None) -> DecisionWidget:
    """A form for one read, one write and one relationship, prefilled (default: users and their posts) and run.

    The relationship's "max parents per child" above 1 (or unbounded) makes it many-to-many; "time series"
    marks measurements arriving over time; the write row (rate 0 = none) feeds the reads-per-write rules.

    Set ``handle.controls[name].value`` and call ``handle.button.click()`` (or ``handle.run()``); read
    ``handle.output_html`` or ``handle.recommendation``."""
    import ipywidgets as w

    p = dict(EXAMPLE_PATTERN if pattern is None else pattern)
    r = dict(EXAMPLE_RELATIONSHIP if relationship is None else relationship)
    lo, likely, hi = r.get("cardinality", [0, 1, None])
    per_child = (r.get("parents_per_child") or [1, 1, 1])[2]
    wp = dict(EXAMPLE_WRITE if write is None else write)
    style, narrow, wide = {"description_width": "initial"}, w.Layout(width="200px"), w.Layout(width="380px")
    sort = ", ".join(f"{k}:{v}" for k, v in (p.get("sort") or {}).items())
    controls: dict[str, Any] = {
        "operation": w.Text(value=p.get("operation", ""), description="operation", style=style, layout=wide),
        "type": w.Dropdown(options=list(_TYPES), value=p.get("type", "read"), description="type", style=style,
                           layout=narrow),
        "per_second": w.FloatText(value=p.get("per_second", 1), description="per second", style=style, layout=narrow),
        "entities": w.Text(value=", ".join(p.get("entities", [])), description="entities", style=style, layout=wide),
        "fields": w.Text(value=", ".join(p.get("fields", [])), description="fields", style=style, layout=wide),
        "sort": w.Text(value=sort, description="sort", placeholder="createdAt:-1", style=style, layout=wide),
        "limit": w.IntText(value=p.get("limit") or 0, description="limit (0 = all)", style=style, layout=narrow),
        "parent": w.Text(value=r.get("parent", ""), description="parent", style=style, layout=narrow),
        "child": w.Text(value=r.get("child", ""), description="child", style=style, layout=narrow),
        "reference_field": w.Text(value=r.get("reference_field", ""), description="reference field",
                                  placeholder="default: <parent>Id", style=style, layout=narrow),
        "min": w.IntText(value=int(lo), description="min", style=style, layout=narrow),
        "likely": w.IntText(value=int(likely), description="likely", style=style, layout=narrow),
        "max": w.Text(value="unbounded" if hi is None or hi == math.inf else str(hi), description="max",
                      placeholder="number or unbounded", style=style, layout=narrow),
        "child_doc_bytes": w.IntText(value=int(r.get("child_doc_bytes", 200)), description="child bytes",
                                     style=style, layout=narrow),
        "child_queried_alone": w.Checkbox(value=bool(r.get("child_queried_alone", False)),
                                          description="child queried alone", style=style),
        "changes_with_parent": w.Checkbox(value=bool(r.get("changes_with_parent", False)),
                                          description="changes with parent", style=style),
        "parents_per_child": w.Text(value="unbounded" if per_child is None or per_child == math.inf
                                    else str(per_child), description="max parents per child",
                                    placeholder="1 = one-to-many; more = many-to-many", style=style, layout=narrow),
        "time_series": w.Checkbox(value=bool(r.get("time_series", False)), description="time series", style=style),
        "write_operation": w.Text(value=wp.get("operation", ""), description="write", style=style, layout=wide),
        "write_per_second": w.FloatText(value=wp.get("per_second", 0), description="per second", style=style,
                                        layout=narrow),
        "write_entities": w.Text(value=", ".join(wp.get("entities", [])), description="entities written",
                                 style=style, layout=narrow),
    }
    handle = DecisionWidget(controls=controls, button=w.Button(description="Recommend", button_style="primary"),
                            output=w.HTML())
    handle.button.on_click(handle.run)
    handle.run()
    return handle
