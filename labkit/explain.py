"""Readable summaries of explain output, for the embedded engine and for real servers alike.

Works on classic find/count/distinct explain (``winningPlan`` trees), SBE explain (``winningPlan.queryPlan``),
sharded explain (first shard), express plans, and aggregate explain (``stages`` with ``$cursor`` and
``$lookup`` entries, or an ``optimizedPipeline`` find-shaped document). :func:`draw_plan` draws any of them as a
tree of stages with their counts, as MongoDB Compass's explain view does.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Iterator

import pandas as pd

__all__ = ["show_plan", "plan_tree", "plan_summary", "draw_plan", "PlanDrawing"]

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


def query_cost(cursor: Any) -> dict[str, Any]:
    """What a query costs, from ``cursor.explain()``: the winning plan's stages from the root down to the scan
    (``"LIMIT <- FETCH <- IXSCAN"``, FETCH being the stage that loads whole documents) and the executionStats
    counters ``totalKeysExamined``, ``totalDocsExamined`` and ``nReturned`` (the manual's explain results)."""
    e = cursor.explain()
    node, stages = e["queryPlanner"]["winningPlan"], []
    while node:
        node = node.get("queryPlan", node)
        stages.append(node["stage"])
        node = node.get("inputStage")
    s = e["executionStats"]
    return {"stages": " <- ".join(stages), "keys examined": s["totalKeysExamined"],
            "docs examined": s["totalDocsExamined"], "returned": s["nReturned"]}


def show_plan(explain_doc: dict, draw: bool = False) -> Any:
    """A compact one-row-per-part table: the query (or the aggregate's ``$cursor``) and each ``$lookup``.

    ``draw=True`` returns :func:`draw_plan`'s drawing instead: the plan as a tree of stages with keys examined,
    documents examined and returned per stage (SVG in a notebook, text elsewhere)."""
    if draw:
        return draw_plan(explain_doc)
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


# --- drawing a plan: a tree of stages, as MongoDB Compass shows it -----------------------------------------

_INDEX_STAGES = _SCAN_STAGES | {"EXPRESS_CLUSTERED_IXSCAN"}
_LOOKUP_STAGES = {"EQ_LOOKUP", "$lookup"}


@dataclass
class PlanNode:
    """One stage of a drawn plan, with what it did (``None``: the explain does not say)."""

    stage: str
    parent: int | None
    depth: int
    index: str | None = None
    keys: int | None = None
    docs: int | None = None
    returned: int | None = None
    details: list[str] = field(default_factory=list)
    kind: str = ""  # "index", "blocking-sort", "collscan", "lookup" or ""


@dataclass
class PlanDrawing:
    """A plan as a tree of stages (root first), drawn as SVG in a notebook and as text elsewhere.

    Each node shows the stage, the index it used, keys examined, documents examined and documents returned by that
    stage; a blocking (in-memory) SORT is marked red, a COLLSCAN orange, a stage that used an index green.
    ``totals`` are the explain's own ``executionStats`` totals; ``note`` says how per-stage counts were read."""

    nodes: list[PlanNode]
    title: str
    totals: dict[str, Any]
    note: str = ""

    def to_frame(self) -> pd.DataFrame:
        """One row per stage, root first: stage, depth, index, keys/docs examined, returned, marks."""
        return pd.DataFrame([{"stage": n.stage, "depth": n.depth, "index": n.index, "keysExamined": n.keys,
                              "docsExamined": n.docs, "nReturned": n.returned, "mark": n.kind,
                              "details": "; ".join(n.details)} for n in self.nodes])

    def text(self) -> str:
        """The tree as indented text (what a terminal or nbval sees)."""
        lines = [self.title, _totals_line(self.totals)]
        if self.note:
            lines.append(self.note)
        for n in self.nodes:
            prefix = "   " * (n.depth - 1) + "└─ " if n.depth else ""
            parts = [n.stage + (f" [{n.index}]" if n.index else "")]
            parts += [s for s in _counts(n)] + ([_MARKS[n.kind]] if n.kind in _MARKS else []) + n.details
            lines.append(prefix + "  ".join(parts))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    def svg(self) -> str:
        """The tree as an SVG picture (root at the top, inputs below, as Compass draws it)."""
        return _svg(self)

    def _repr_html_(self) -> str:
        return (f"<div class='labkit-plan-drawing'><div style='font-weight:bold'>{html.escape(self.title)}</div>"
                f"<div>{html.escape(_totals_line(self.totals))}</div>"
                + (f"<div style='color:#555'>{html.escape(self.note)}</div>" if self.note else "")
                + self.svg() + "</div>")


_MARKS = {"blocking-sort": "blocking sort (in memory)", "collscan": "reads every document",
          "index": "index used"}
_COLOURS = {"blocking-sort": "#d62728", "collscan": "#ff7f0e", "index": "#2ca02c", "lookup": "#1f77b4", "": "#888888"}


def _counts(n: PlanNode) -> list[str]:
    out = []
    if n.keys is not None:
        out.append(f"keys examined {n.keys:,}")
    if n.docs is not None:
        out.append(f"docs examined {n.docs:,}")
    if n.returned is not None:
        out.append(f"returned {n.returned:,}")
    return out


def _totals_line(t: dict[str, Any]) -> str:
    def fmt(v: Any) -> str:
        return f"{v:,}" if isinstance(v, int) else "not reported"
    return (f"totals: keys examined {fmt(t.get('keysExamined'))} · docs examined {fmt(t.get('docsExamined'))} · "
            f"returned {fmt(t.get('nReturned'))}")


def _short(value: Any, limit: int = 44) -> str:
    text = value if isinstance(value, str) else _compact(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_compact(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_compact(v) for v in value) + "]"
    return str(value)


def _details(st: dict) -> list[str]:
    out = []
    name = st.get("stage", "")
    if st.get("indexBounds") and isinstance(st["indexBounds"], dict) and name != "COUNT_SCAN":
        out += [f"{f}: {_short(' U '.join(b) if isinstance(b, list) else b)}" for f, b in st["indexBounds"].items()]
    if st.get("direction") == "backward":
        out.append("backward")
    if "sortPattern" in st:
        out.append(f"sort {_short(st['sortPattern'])}")
    if "limitAmount" in st:
        out.append(f"limit {st['limitAmount']}")
    if "skipAmount" in st:
        out.append(f"skip {st['skipAmount']}")
    if st.get("filter"):
        out.append(f"filter {_short(st['filter'])}")
    if "transformBy" in st:
        out.append(f"project {_short(st['transformBy'])}")
    if "nCounted" in st:
        out.append(f"counted {st['nCounted']:,}")
    if name == "EQ_LOOKUP":
        out += [f"from {st.get('foreignCollection')}", f"{st.get('strategy')}"]
    return out


def _kind(name: str, index: str | None, st: dict) -> str:
    if name == "SORT":
        return "blocking-sort"
    if name == "COLLSCAN" or (name == "$lookup" and st.get("collectionScans")):
        return "collscan"
    if index:
        return "index"
    if name in _LOOKUP_STAGES:
        return "lookup"
    return ""


def _index_of(st: dict) -> str | None:
    name = st.get("stage", "")
    if name == "IDHACK":
        return "_id_"
    if name in _INDEX_STAGES or name == "EQ_LOOKUP":
        return st.get("indexName") or None
    return None


def _sbe_stats(stages: dict | None) -> dict[int, dict[str, int]]:
    """Per planNodeId: nReturned of its top-most SBE stage, summed keysExamined and numReads (documents read).
    An SBE stage without a planNodeId belongs to its nearest ancestor's."""
    out: dict[int, dict[str, int]] = {}

    def walk(st: dict, node: int | None) -> None:
        node = st.get("planNodeId", node)
        if node is not None:
            stats = out.setdefault(node, {})
            if "nReturned" in st and "nReturned" not in stats and "planNodeId" in st:
                stats["nReturned"] = st["nReturned"]
            for key, name in (("keysExamined", "keys"), ("numReads", "docs")):
                if isinstance(st.get(key), int):
                    stats[name] = stats.get(name, 0) + st[key]
        for child in _children(st):
            walk(child, node)

    if isinstance(stages, dict):
        walk(stages, None)
    return out


def _add_tree(nodes: list[PlanNode], st: dict, parent: int | None, depth: int, sbe: dict[int, dict] | None) -> None:
    name = st.get("stage", "?")
    index = _index_of(st)
    node = PlanNode(stage=name, parent=parent, depth=depth, index=index, details=_details(st),
                    kind=_kind(name, index, st))
    if sbe is not None:
        stats = sbe.get(st.get("planNodeId"), {})
        node.keys, node.docs, node.returned = stats.get("keys"), stats.get("docs"), stats.get("nReturned")
    else:
        node.keys = st.get("keysExamined")
        node.docs = st.get("docsExamined")
        node.returned = st.get("nReturned")
    nodes.append(node)
    me = len(nodes) - 1
    for child in _children(st):
        _add_tree(nodes, child, me, depth + 1, sbe)


def _query_tree(qp: dict | None, es: dict | None) -> tuple[dict | None, dict[int, dict] | None, str]:
    """(the stage tree to draw, SBE stats by planNodeId or None, a note) for a find-like part of an explain."""
    winning = (qp or {}).get("winningPlan") or {}
    stages = (es or {}).get("executionStages")
    if isinstance(winning, dict) and isinstance(winning.get("queryPlan"), dict):  # SBE (explainVersion "2")
        return (winning["queryPlan"], _sbe_stats(stages),
                "SBE plan: per-stage counts are the SBE stages' own, matched by planNodeId")
    if isinstance(stages, dict) and "stage" in stages:  # classic executionStats: the plan with its counters
        return stages, None, ""
    plan = _unwrap_plan(winning)
    return plan, None, "" if es else "queryPlanner verbosity: no counts (explain with executionStats to see them)"


def draw_plan(explain_doc: dict) -> PlanDrawing:
    """The plan of any explain output (embedded engine or real server; find, count, distinct, aggregate; classic
    or SBE) as a :class:`PlanDrawing`: a tree of stages with keys examined, documents examined and returned per
    stage, blocking sorts and the index used marked. In a notebook it draws itself as SVG."""
    if not isinstance(explain_doc, dict):
        raise TypeError(f"draw_plan(explain_doc): give the document explain() returned, not {type(explain_doc).__name__}")
    qp, es = _find_query_part(explain_doc)
    if qp is None and "stages" not in explain_doc:
        raise ValueError("draw_plan(explain_doc): no queryPlanner in this document; pass what explain() returned")
    tree, sbe, note = _query_tree(qp, es)
    later = [st for st in explain_doc.get("stages") or [] if "$cursor" not in st]
    nodes: list[PlanNode] = []
    for depth, st in enumerate(reversed(later)):  # the last pipeline stage is the root
        name = next(iter(st))
        spec = st[name] if isinstance(st[name], dict) else {}
        index = ", ".join(st.get("indexesUsed") or []) or None
        details = [f"from {spec.get('from')}", f"as {spec.get('as')}"] if name == "$lookup" else []
        nodes.append(PlanNode(stage=name, parent=depth - 1 if depth else None, depth=depth, index=index,
                              keys=st.get("totalKeysExamined"), docs=st.get("totalDocsExamined"),
                              returned=st.get("nReturned"), details=details, kind=_kind(name, index, st)))
    if tree:
        _add_tree(nodes, tree, len(nodes) - 1 if nodes else None, len(nodes), sbe)
    totals = {"keysExamined": (es or {}).get("totalKeysExamined"), "docsExamined": (es or {}).get("totalDocsExamined"),
              "nReturned": (es or {}).get("nReturned")}
    ns = (qp or {}).get("namespace") or "?"
    engine = (explain_doc.get("labkit") or {}).get("engine")
    title = f"Plan for {ns}" + (f" ({engine} engine)" if engine else "")
    for st in later:  # a pipeline's later stages ($lookup) examine keys and documents of their own
        for key, total in (("keysExamined", "totalKeysExamined"), ("docsExamined", "totalDocsExamined")):
            if isinstance(st.get(total), int) and isinstance(totals[key], int):
                totals[key] += st[total]
    if later and later[-1].get("nReturned") is not None:
        totals["nReturned"] = later[-1]["nReturned"]
    return PlanDrawing(nodes=nodes, title=title, totals=totals, note=note)


_W, _LINE, _PAD, _GAP_X, _GAP_Y = 240, 15, 8, 24, 34


def _svg(d: PlanDrawing) -> str:
    """Lay the tree out (leaves in order, parents centred over their children) and draw boxes and edges."""
    children: dict[int | None, list[int]] = {}
    for i, n in enumerate(d.nodes):
        children.setdefault(n.parent, []).append(i)
    lines = {i: [n.stage] + ([f"index: {n.index}"] if n.index else []) + _counts(n)
             + ([_MARKS[n.kind]] if n.kind in ("blocking-sort", "collscan") else []) + n.details[:3]
             for i, n in enumerate(d.nodes)}
    height = {i: _PAD * 2 + _LINE * len(ls) for i, ls in lines.items()}
    row_h = [0] * (max((n.depth for n in d.nodes), default=0) + 1)
    for i, n in enumerate(d.nodes):
        row_h[n.depth] = max(row_h[n.depth], height[i])
    x: dict[int, float] = {}
    slot = [0]

    def place(i: int) -> None:
        kids = children.get(i, [])
        for k in kids:
            place(k)
        if kids:
            x[i] = (x[kids[0]] + x[kids[-1]]) / 2
        else:
            x[i] = slot[0] * (_W + _GAP_X)
            slot[0] += 1

    for root in children.get(None, []):
        place(root)
    top = [sum(row_h[:k]) + _GAP_Y * k for k in range(len(row_h))]
    width = max(slot[0], 1) * (_W + _GAP_X) - _GAP_X + 2
    total_h = (top[-1] + row_h[-1] + 2) if d.nodes else 40
    out = [f"<svg class='labkit-plan' xmlns='http://www.w3.org/2000/svg' width='{width:.0f}' height='{total_h:.0f}' "
           f"viewBox='0 0 {width:.0f} {total_h:.0f}' font-family='sans-serif' font-size='12'>"]
    for i, n in enumerate(d.nodes):
        if n.parent is not None:
            p = d.nodes[n.parent]
            x1, y1 = x[n.parent] + _W / 2 + 1, top[p.depth] + height[n.parent] + 1
            x2, y2 = x[i] + _W / 2 + 1, top[n.depth] + 1
            out.append(f"<path d='M{x2:.0f},{y2:.0f} C{x2:.0f},{(y1 + y2) / 2:.0f} {x1:.0f},{(y1 + y2) / 2:.0f} "
                       f"{x1:.0f},{y1:.0f}' stroke='#999' fill='none' marker-end=''/>")
    for i, n in enumerate(d.nodes):
        colour = _COLOURS.get(n.kind, "#888888")
        left, y = x[i] + 1, top[n.depth] + 1
        out.append(f"<g class='labkit-plan-node' data-stage='{html.escape(n.stage)}' data-kind='{n.kind}'>"
                   f"<rect x='{left:.0f}' y='{y:.0f}' width='{_W}' height='{height[i]}' rx='6' fill='#ffffff' "
                   f"stroke='{colour}' stroke-width='{3 if n.kind in _MARKS else 1.5}'/>")
        for k, text in enumerate(lines[i]):
            weight = " font-weight='bold'" if k == 0 else ""
            fill = colour if (k == 0 and n.kind) or text == _MARKS.get(n.kind) or text.startswith("index: ") \
                else "#222222"
            out.append(f"<text x='{left + _PAD:.0f}' y='{y + _PAD + _LINE * (k + 1) - 3:.0f}' fill='{fill}'{weight}>"
                       f"{html.escape(_short(text, 36))}</text>")
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)
