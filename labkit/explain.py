"""Readable summaries of explain output, for the embedded engine and for real servers alike.

Works on classic find/count/distinct explain (``winningPlan`` trees), SBE explain (``winningPlan.queryPlan``),
sharded explain (first shard), express plans, and aggregate explain (``stages`` with ``$cursor`` and
``$lookup`` entries, or an ``optimizedPipeline`` find-shaped document).
"""
from __future__ import annotations

from typing import Any, Iterator

import pandas as pd

__all__ = ["show_plan", "plan_tree", "plan_summary"]

_SCAN_STAGES = {"IXSCAN", "COUNT_SCAN", "DISTINCT_SCAN", "EXPRESS_IXSCAN", "IDHACK", "EXPRESS_CLUSTERED_IXSCAN"}


def _children(stage: dict) -> list[dict]:
    out: list[dict] = []
    if isinstance(stage.get("inputStage"), dict):
        out.append(stage["inputStage"])
    for c in stage.get("inputStages") or []:
        if isinstance(c, dict):
            out.append(c)
    for key in ("outerStage", "innerStage", "thenStage", "elseStage"):
        if isinstance(stage.get(key), dict):
            out.append(stage[key])
    return out


def _walk(stage: dict | None, depth: int = 0) -> Iterator[tuple[int, dict]]:
    if not stage:
        return
    yield depth, stage
    for c in _children(stage):
        yield from _walk(c, depth + 1)


def _unwrap_plan(plan: dict | None) -> dict | None:
    """Classic plan tree from a winningPlan (SBE: queryPlan; sharded: first shard)."""
    if not plan:
        return None
    if "queryPlan" in plan and isinstance(plan["queryPlan"], dict):
        return plan["queryPlan"]
    if "shards" in plan and plan["shards"]:
        return _unwrap_plan(plan["shards"][0].get("winningPlan"))
    return plan


def _find_query_part(doc: dict) -> tuple[dict | None, dict | None]:
    """(queryPlanner, executionStats) of the find-like part of any explain document."""
    if "queryPlanner" in doc:
        return doc.get("queryPlanner"), doc.get("executionStats")
    for st in doc.get("stages") or []:
        if "$cursor" in st:
            cur = st["$cursor"]
            return cur.get("queryPlanner"), cur.get("executionStats")
    if "shards" in doc and isinstance(doc["shards"], dict) and doc["shards"]:
        first = next(iter(doc["shards"].values()))
        return _find_query_part(first)
    return None, None


def _lookups(doc: dict) -> list[dict]:
    out = []
    for st in doc.get("stages") or []:
        if "$lookup" in st:
            spec = st["$lookup"]
            out.append({"from": spec.get("from"), "as": spec.get("as"),
                        "totalKeysExamined": st.get("totalKeysExamined"),
                        "totalDocsExamined": st.get("totalDocsExamined"),
                        "collectionScans": st.get("collectionScans"),
                        "indexesUsed": st.get("indexesUsed")})
    qp, _ = _find_query_part(doc)
    plan = _unwrap_plan((qp or {}).get("winningPlan"))
    for _, st in _walk(plan):
        if st.get("stage") == "EQ_LOOKUP":
            out.append({"from": st.get("foreignCollection"), "as": st.get("asField"),
                        "strategy": st.get("strategy"), "indexesUsed": [st["indexName"]] if st.get("indexName") else []})
    return out


def plan_summary(explain_doc: dict) -> dict[str, Any]:
    """Key numbers of an explain document: stage chain, index, keys/docs examined, nReturned,
    blocking sort and covered flags (definitions from the MongoDB manual's explain-results page)."""
    qp, es = _find_query_part(explain_doc)
    plan = _unwrap_plan((qp or {}).get("winningPlan"))
    chain = [st.get("stage", "?") for _, st in _walk(plan)]
    indexes = []
    for _, st in _walk(plan):
        if st.get("stage") in _SCAN_STAGES and st.get("indexName") and st["indexName"] not in indexes:
            indexes.append(st["indexName"])
    names = set(chain)
    has_scan = bool(names & _SCAN_STAGES)
    covered = has_scan and "FETCH" not in names and "COLLSCAN" not in names and \
        "EXPRESS_IXSCAN" not in names and "IDHACK" not in names
    if "EXPRESS_IXSCAN" in names and not indexes and plan:
        indexes.append(plan.get("indexName"))
    summary: dict[str, Any] = {
        "stages": " > ".join(chain),
        "index": ", ".join(i for i in indexes if i) or None,
        "keysExamined": (es or {}).get("totalKeysExamined"),
        "docsExamined": (es or {}).get("totalDocsExamined"),
        "nReturned": (es or {}).get("nReturned"),
        "blockingSort": "SORT" in names,
        "covered": covered,
        "collscan": "COLLSCAN" in names,
        "rejectedPlans": len((qp or {}).get("rejectedPlans") or []),
        "executionTimeMillis": (es or {}).get("executionTimeMillis"),
        "namespace": (qp or {}).get("namespace"),
    }
    if es and isinstance(es.get("executionStages"), dict):
        root = es["executionStages"]
        if "nCounted" in root:
            summary["nCounted"] = root["nCounted"]
    lk = _lookups(explain_doc)
    if lk:
        summary["lookups"] = lk
    later = [next(iter(st)) for st in explain_doc.get("stages") or [] if "$cursor" not in st]
    if later:
        summary["pipeline"] = later
    if "labkit" in explain_doc:
        summary["engine"] = explain_doc["labkit"].get("engine")
    summary["explainVersion"] = explain_doc.get("explainVersion")
    return summary


def show_plan(explain_doc: dict) -> pd.DataFrame:
    """A compact one-row-per-part table: the query (or the aggregate's ``$cursor``) and each ``$lookup``."""
    s = plan_summary(explain_doc)
    sbe = explain_doc.get("explainVersion") == "2"
    part = ("query" if "stages" not in explain_doc else "$cursor") if not sbe else \
        ("pipeline (SBE)" if "stages" not in explain_doc else "$cursor (SBE)")
    rows = [{"part": part, "stages": s["stages"], "index": s["index"],
             "keysExamined": s["keysExamined"], "docsExamined": s["docsExamined"], "nReturned": s["nReturned"],
             "blocking sort": s["blockingSort"], "covered": s["covered"]}]
    for lk in s.get("lookups", []):
        if lk.get("strategy"):  # SBE EQ_LOOKUP: its cost is inside the pipeline totals of the first row
            rows.append({"part": "EQ_LOOKUP %s" % lk.get("from"), "stages": lk["strategy"],
                         "index": ", ".join(lk.get("indexesUsed") or []) or None, "keysExamined": None,
                         "docsExamined": None, "nReturned": None, "blocking sort": False, "covered": False})
            continue
        rows.append({"part": "$lookup %s" % lk.get("from"),
                     "stages": "COLLSCAN" if lk.get("collectionScans") else ("IXSCAN" if lk.get("indexesUsed") else ""),
                     "index": ", ".join(lk.get("indexesUsed") or []) or None,
                     "keysExamined": lk.get("totalKeysExamined"), "docsExamined": lk.get("totalDocsExamined"),
                     "nReturned": None, "blocking sort": False, "covered": False})
    return pd.DataFrame(rows, columns=["part", "stages", "index", "keysExamined", "docsExamined", "nReturned",
                                       "blocking sort", "covered"])


_DETAIL_KEYS = ("indexName", "direction", "limitAmount", "skipAmount", "sortPattern", "type", "filter",
                "indexBounds", "transformBy", "nCounted", "foreignCollection", "localField", "foreignField",
                "strategy")
_STAT_KEYS = ("nReturned", "works", "keysExamined", "docsExamined")


def plan_tree(explain_doc: dict) -> str:
    """An indented, readable tree of the winning plan (with per-stage counters when present)."""
    qp, es = _find_query_part(explain_doc)
    lines: list[str] = []
    if qp and qp.get("namespace"):
        lines.append("namespace: %s" % qp["namespace"])
    stats_root = (es or {}).get("executionStages")
    plan = stats_root if isinstance(stats_root, dict) and "stage" in stats_root and \
        not (isinstance((qp or {}).get("winningPlan"), dict) and "queryPlan" in qp["winningPlan"]) \
        else _unwrap_plan((qp or {}).get("winningPlan"))
    for depth, st in _walk(plan):
        details = []
        for k in _DETAIL_KEYS:
            if k in st:
                v = st[k]
                if k == "indexBounds" and isinstance(v, dict):
                    v = ", ".join("%s: %s" % (f, " U ".join(b) if isinstance(b, list) else b) for f, b in v.items())
                details.append("%s=%s" % (k, v))
        stats = ["%s=%s" % (k, st[k]) for k in _STAT_KEYS if k in st]
        line = "  " * depth + st.get("stage", "?")
        if details:
            line += "  (" + "; ".join(str(d) for d in details) + ")"
        if stats:
            line += "  [" + ", ".join(stats) + "]"
        lines.append(line)
    for st in explain_doc.get("stages") or []:
        name = next(iter(st))
        if name == "$cursor":
            continue
        if name == "$lookup":
            spec = st[name]
            lines.append("$lookup from %s as %s  [keys=%s, docs=%s, collectionScans=%s, indexesUsed=%s]" % (
                spec.get("from"), spec.get("as"), st.get("totalKeysExamined"), st.get("totalDocsExamined"),
                st.get("collectionScans"), st.get("indexesUsed")))
        else:
            lines.append(name)
    if es:
        lines.append("totals: nReturned=%s keysExamined=%s docsExamined=%s" % (
            es.get("nReturned"), es.get("totalKeysExamined"), es.get("totalDocsExamined")))
    return "\n".join(lines)
