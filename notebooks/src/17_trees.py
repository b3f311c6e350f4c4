# ---
# jupyter:
#   jupytext:
#     formats: ipynb,src//py:percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
#   labkit:
#     minutes: 40
#     exercise_minutes: 20
#     title: "Trees: parent and child references, ancestors, materialized paths, $graphLookup"
#     section: Patterns
#     demo: "Ask 'all descendants of Programming' of each design and count the queries; then show the materialized path's anchored regex turning into a tight index range in explain."
#     mistakes: ["an unanchored or case-insensitive regex on the path, which cannot use the index as a range", "a path without delimiters on both ends, so ',Books' also matches ',Bookshelves'", "walking a parent-reference tree one query per node instead of one $in query per level", "forgetting the index on connectToField that $graphLookup relies on at every level"]
#     sources:
#     - title: "MongoDB manual: Model Tree Structures"
#       url: https://www.mongodb.com/docs/manual/applications/data-models-tree-structures/
#     - title: "MongoDB manual: Model Tree Structures with Parent References"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-parent-references/
#     - title: "MongoDB manual: Model Tree Structures with Child References"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-child-references/
#     - title: "MongoDB manual: Model Tree Structures with an Array of Ancestors"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-ancestors-array/
#     - title: "MongoDB manual: Model Tree Structures with Materialized Paths"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-materialized-paths/
#     - title: "MongoDB manual: Model Tree Structures with Nested Sets"
#       url: https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-nested-sets/
#     - title: "MongoDB manual: $regex, index use"
#       url: https://www.mongodb.com/docs/manual/reference/operator/query/regex/
#     - title: "MongoDB manual: $graphLookup (aggregation stage)"
#       url: https://www.mongodb.com/docs/manual/reference/operator/aggregation/graphLookup/
#     - title: "mongodb/mongo src/mongo/db/pipeline/document_source_graph_lookup.cpp (what its explain reports)"
#       url: https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/pipeline/document_source_graph_lookup.cpp
#     - title: "MongoDB manual: Multikey Indexes"
#       url: https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/
# ---

# %% [markdown]
# # 17 · Trees: parent and child references, ancestors, materialized paths, `$graphLookup`
#
# **You will learn**
# - the five ways MongoDB's manual stores a hierarchy in documents
#   ([manual: model tree structures](https://www.mongodb.com/docs/manual/applications/data-models-tree-structures/)):
#   parent references, child references, an array of ancestors, a materialized path and nested sets;
# - to count what the two typical tree questions cost in each: "all descendants of X" and "breadcrumb of Y",
#   and what a change to the tree costs;
# - to read the index bounds of an anchored regular expression on a materialized path;
# - to let the server walk a parent-reference tree with `$graphLookup`.
#
# **Time:** about 40 minutes.

# %%
import pandas as pd

import labkit

db = labkit.fresh_db("17_trees")
print("engine:", labkit.describe(db.client))

# %% [markdown]
# A product taxonomy with one root, `Catalog`, five departments, and four more levels of fan-out. Names are unique, so
# they serve as `_id`s. The tree is built by a fixed rule (no randomness): 4 children per department, 4 per
# category, and 6 leaves per subcategory. One branch carries familiar names: `Catalog > Books > Programming >
# Databases > MongoDB`.

# %%
DEPARTMENTS = {"Books": ["Programming", "Fiction", "History", "Science"],
               "Music": ["Jazz", "Classical", "Rock", "Folk"],
               "Electronics": ["Phones", "Laptops", "Cameras", "Audio"],
               "Garden": ["Tools", "Plants", "Furniture", "Lighting"],
               "Toys": ["Puzzles", "Blocks", "Dolls", "Games"]}
NAMED = {"Programming": ["Databases", "Languages", "Web", "Testing"],
         "Databases": ["MongoDB", "PostgreSQL", "Redis", "SQLite", "Cassandra", "Neo4j"]}


def children_of(name, level):
    if name in NAMED:
        return NAMED[name]
    if level == 0:
        return list(DEPARTMENTS)
    if level == 1:
        return DEPARTMENTS[name]
    if level == 2:
        return [f"{name} {n}" for n in range(1, 5)]
    if level == 3:
        return [f"{name}{letter}" for letter in "abcdef"]
    return []


nodes = []  # (name, parent, ancestors from the root), in breadth-first order
frontier = [("Catalog", None, [])]
level = 0
while frontier:
    nodes += frontier
    frontier = [(child, name, ancestors + [name]) for name, _, ancestors in frontier
                for child in children_of(name, level)]
    level += 1
children = {}
for name, parent, _ in nodes:
    children.setdefault(name, [])
    if parent:
        children[parent].append(name)
print("nodes:", len(nodes), "| depth:", max(len(a) for _, _, a in nodes), "| leaves:",
      sum(1 for n, _, _ in nodes if not children[n]))
print("children per node, level by level:",
      [len(children[next(n for n, _, a in nodes if len(a) == lvl)]) for lvl in range(4)])

# %% [markdown]
# ## The workload

# %%
labkit.workload_table([
    ("breadcrumb of a category", "read", "1,000/s (every product page)", "the ancestors, in order"),
    ("all descendants of a category", "read", "100/s (every category page)", "the whole subtree"),
    ("move or rename a category", "write", "a few a month", ""),
])

# %% [markdown]
# Same data, four shapes, one collection each (the fifth, nested sets, comes after them):

# %%
db.parent_refs.insert_many([{"_id": n, "parent": p} for n, p, _ in nodes])
db.parent_refs.create_index("parent")

db.child_refs.insert_many([{"_id": n, "children": children[n]} for n, _, _ in nodes])
db.child_refs.create_index("children")

db.ancestors.insert_many([{"_id": n, "parent": p, "ancestors": a} for n, p, a in nodes])
db.ancestors.create_index("ancestors")

db.paths.insert_many([{"_id": n, "path": ("," + ",".join(a) + ",") if a else None} for n, _, a in nodes])
db.paths.create_index("path")

for label, coll in [("parent references", db.parent_refs), ("child references", db.child_refs),
                    ("array of ancestors", db.ancestors), ("materialized path", db.paths)]:
    print(f"{label:19}", coll.find_one({"_id": "Databases"}))


# %% [markdown]
# ## Measuring a tree question
#
# Every query below goes through `run`, which executes it and adds its `explain()` figures to a meter: one round
# trip per query, plus the keys and documents the server examined.

# %%
class Meter:
    def __init__(self):
        self.queries = self.keys = self.docs = 0

    def run(self, collection, filter_, projection=None):
        stats = collection.find(filter_, projection).explain()["executionStats"]
        self.queries += 1
        self.keys += stats["totalKeysExamined"]
        self.docs += stats["totalDocsExamined"]
        return list(collection.find(filter_, projection))

    def figures(self):
        return {"queries": self.queries, "keys examined": self.keys, "docs examined": self.docs}


# %% [markdown]
# ## Parent references
#
# Each node names its parent
# ([manual: parent references](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-parent-references/)).
# The breadcrumb walks up one query per level; the descendants walk down one `$in` query per level (never one
# query per node), until a level comes back empty.

# %%
def breadcrumb_parent(name):
    meter, trail = Meter(), []
    while name is not None:
        doc = meter.run(db.parent_refs, {"_id": name})[0]
        trail.insert(0, doc["_id"])
        name = doc["parent"]
    return trail, meter


def descendants_parent(name):
    meter, found, level = Meter(), [], [name]
    while level:
        level = [d["_id"] for d in meter.run(db.parent_refs, {"parent": {"$in": level}}, {"_id": 1})]
        found += level
    return sorted(found), meter


trail, m = breadcrumb_parent("Databases")
print(" > ".join(trail), m.figures())
subtree, m = descendants_parent("Programming")
print(len(subtree), "descendants of Programming", m.figures())


# %% [markdown]
# ## Child references
#
# Each node lists its children, in an indexed array
# ([manual: child references](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-child-references/)).
# Going down reads the node and then one level per query; going up asks "which node lists me as a child?" once per
# level, and the root's question comes back empty.

# %%
def breadcrumb_child(name):
    meter, trail = Meter(), [name]
    while True:
        parents = meter.run(db.child_refs, {"children": trail[0]}, {"_id": 1})
        if not parents:
            return trail, meter
        trail.insert(0, parents[0]["_id"])


def descendants_child(name):
    meter, found = Meter(), []
    level = meter.run(db.child_refs, {"_id": name})[0]["children"]
    while level:
        found += level
        level = [c for d in meter.run(db.child_refs, {"_id": {"$in": level}}) for c in d["children"]]
    return sorted(found), meter


trail, m = breadcrumb_child("Databases")
print(" > ".join(trail), m.figures())
subtree, m = descendants_child("Programming")
print(len(subtree), "descendants of Programming", m.figures())


# %% [markdown]
# ## Array of ancestors
#
# Each node stores its ancestors in order, plus its parent
# ([manual: array of ancestors](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-ancestors-array/)).
# Both questions are now one query: the breadcrumb is in the node itself, and the descendants are the nodes whose
# `ancestors` array contains X, found through the index on the array (a **multikey** index: one key per element,
# [manual: multikey indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)).

# %%
def breadcrumb_ancestors(name):
    meter = Meter()
    doc = meter.run(db.ancestors, {"_id": name}, {"ancestors": 1})[0]
    return doc["ancestors"] + [name], meter


def descendants_ancestors(name):
    meter = Meter()
    return sorted(d["_id"] for d in meter.run(db.ancestors, {"ancestors": name}, {"_id": 1})), meter


trail, m = breadcrumb_ancestors("Databases")
print(" > ".join(trail), m.figures())
subtree, m = descendants_ancestors("Programming")
print(len(subtree), "descendants of Programming", m.figures())

# %% [markdown]
# ## Materialized paths
#
# Each node stores the chain of its ancestors as one string with a delimiter on both ends, following the MongoDB
# manual's example
# ([manual: materialized paths](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-materialized-paths/)):
# `Databases` has the path `",Catalog,Books,Programming,"` (the root's path is `null`). The descendants of X are the
# nodes whose path **starts with** X's path followed by `X,`: an anchored regular expression.

# %%
db.paths.find_one({"_id": "MongoDB"})

# %%
import re


def descendants_regex(name, path):
    return {"path": {"$regex": "^" + re.escape((path or ",") + name + ",")}}


programming = db.paths.find_one({"_id": "Programming"})
query = descendants_regex("Programming", programming["path"])
print(query)
explain = db.paths.find(query).explain()
ixscan = explain["queryPlanner"]["winningPlan"]["inputStage"]
{"stage": ixscan["stage"], "indexName": ixscan["indexName"], "indexBounds": ixscan["indexBounds"],
 "keys examined": explain["executionStats"]["totalKeysExamined"], "returned": explain["executionStats"]["nReturned"]}

# %% [markdown]
# A case-sensitive regex anchored with `^` and starting with literal characters (a "prefix expression",
# [manual: `$regex` index use](https://www.mongodb.com/docs/manual/reference/operator/query/regex/)) becomes an
# index **range**: from the prefix up to the next possible prefix (the last character incremented, `,` becomes
# `-`). Only keys inside that range are read, plus the first key past it, which ends the scan (29 keys for 28
# descendants). The second interval, the regex itself, covers documents whose `path` holds a stored regular
# expression value; there are none here.
#
# Without the anchor (or with the `i` option) no prefix bounds the scan. The manual's own example query,
# `{path: /,Programming,/}`, is unanchored, and its page warns that such a query has to inspect the entire index.
#
# **Predict** how many index keys the unanchored `{path: {$regex: ",Programming,"}}` examines (the anchored
# query above examined the number shown in its output; a regular expression matches only string values and
# stored regular expressions, and every path here is a string except the root's, which is `null`). Record your
# number with `predict_keys.predict(...)`, then run the measuring cell.

# %%
predict_keys = labkit.exercises.get("17-predict-unanchored-keys")
predict_keys

# %% tags=["solution"]
predict_keys.predict(len(nodes) - 1)  # every string key: every node but the root (null path)

# %% tags=["reveal"]
loose = db.paths.find({"path": {"$regex": ",Programming,"}}).explain()
loose_keys = loose["executionStats"]["totalKeysExamined"]
{"bounds": loose["queryPlanner"]["winningPlan"]["inputStage"]["indexBounds"],
 "keys examined": loose_keys, "returned": loose["executionStats"]["nReturned"], "nodes in the tree": len(nodes)}

# %% tags=["reveal"]
predict_keys.check(loose_keys)


# %%
def breadcrumb_path(name):
    meter = Meter()
    doc = meter.run(db.paths, {"_id": name})[0]
    return [p for p in (doc["path"] or "").split(",") if p] + [name], meter


def descendants_path(name):
    meter = Meter()
    doc = meter.run(db.paths, {"_id": name}, {"path": 1})[0]
    found = meter.run(db.paths, descendants_regex(name, doc["path"]), {"_id": 1})
    return sorted(d["_id"] for d in found), meter


trail, m = breadcrumb_path("Databases")
print(" > ".join(trail), m.figures())
subtree, m = descendants_path("Programming")
print(len(subtree), "descendants of Programming", m.figures())

# %% [markdown]
# ## Nested sets
#
# The manual's fifth model numbers the stops of a walk around the tree
# ([manual: nested sets](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-nested-sets/)):
# going down, a node gets `left` the first time the walk reaches it and `right` when the walk leaves it for good.
# A node's descendants are then exactly the nodes whose `left` lies between its own `left` and `right`.

# %%
numbers, stop = {}, 0


def number(name):
    """Depth-first walk from `name`: its `left` on the way down, its `right` on the way back up."""
    global stop
    stop += 1
    left = stop
    for child in children[name]:
        number(child)
    stop += 1
    numbers[name] = (left, stop)


number("Catalog")
db.nested.insert_many([{"_id": n, "parent": p, "left": numbers[n][0], "right": numbers[n][1]} for n, p, _ in nodes])
db.nested.create_index("left")
db.nested.find_one({"_id": "Programming"}), db.nested.find_one({"_id": "Databases"})

# %% [markdown]
# The manual asks for the descendants with `{left: {$gt: X.left}, right: {$lt: X.right}}`. With an index on `left`
# only the first condition bounds the scan, which then runs to the end of the tree; because every descendant's
# `left` is also below X's `right`, `{left: {$gt: X.left, $lt: X.right}}` asks for the same nodes as one tight range:

# %%
prog = db.nested.find_one({"_id": "Programming"})
manual_form = {"left": {"$gt": prog["left"]}, "right": {"$lt": prog["right"]}}
tight_form = {"left": {"$gt": prog["left"], "$lt": prog["right"]}}


def range_cost(query):
    stats = db.nested.find(query, {"_id": 1}).explain()["executionStats"]
    return {"keys examined": stats["totalKeysExamined"], "docs examined": stats["totalDocsExamined"],
            "returned": stats["nReturned"]}


pd.DataFrame({"manual's form": range_cost(manual_form), "one range on left": range_cost(tight_form)})

# %%
def breadcrumb_nested(name):
    meter = Meter()
    doc = meter.run(db.nested, {"_id": name})[0]
    above = meter.run(db.nested, {"left": {"$lt": doc["left"]}, "right": {"$gt": doc["right"]}}, {"left": 1})
    return [d["_id"] for d in sorted(above, key=lambda d: d["left"])] + [name], meter


def descendants_nested(name):
    meter = Meter()
    doc = meter.run(db.nested, {"_id": name})[0]
    found = meter.run(db.nested, {"left": {"$gt": doc["left"], "$lt": doc["right"]}}, {"_id": 1})
    return sorted(d["_id"] for d in found), meter


trail, m = breadcrumb_nested("Databases")
print(" > ".join(trail), m.figures())
subtree, m = descendants_nested("Programming")
print(len(subtree), "descendants of Programming", m.figures())

# %% [markdown]
# Descendants cost what they cost with an array of ancestors. The breadcrumb is a range too (`left` below the
# node's, `right` above it), but every node to the left of it in the walk lies in that range: cheap for
# `Databases`, which the walk reaches early, and a scan of most of the tree for a node it reaches late. The price
# shows on writes. Adding one category under `Databases` shifts the numbers of every node the walk reaches after
# it (on a copy made on the server with `$out`, so the comparison below keeps the same tree):

# %%
db.nested.aggregate([{"$out": "nested_copy"}])
edit = db.nested_copy
new_leaf = edit.find_one({"_id": "Databases"})["right"]  # the new leaf takes this number and the next
to_rewrite = edit.count_documents({"$or": [{"right": {"$gte": new_leaf}}, {"left": {"$gte": new_leaf}}]})
rights = edit.update_many({"right": {"$gte": new_leaf}}, {"$inc": {"right": 2}}).modified_count
lefts = edit.update_many({"left": {"$gte": new_leaf}}, {"$inc": {"left": 2}}).modified_count
edit.insert_one({"_id": "DuckDB", "parent": "Databases", "left": new_leaf, "right": new_leaf + 1})
print(f"documents rewritten to add one leaf under Databases: {to_rewrite} of {len(nodes)} "
      f"(right shifted on {rights}, left on {lefts}) | with parent references: none, one insert")
databases = edit.find_one({"_id": "Databases"})
print("children of Databases now:", [d["_id"] for d in edit.find(
    {"left": {"$gt": databases["left"], "$lt": databases["right"]}}).sort("left", 1)])

# %% [markdown]
# That is the manual's verdict on nested sets: fast to read a subtree, expensive to change, so best for a tree that
# does not change. The side-by-side table below leaves them out of the formulas (their breadcrumb cost depends on
# where the node sits in the walk, not only on its level) but measures them like the others.

# %% [markdown]
# ## `$graphLookup`: let the server walk parent references
#
# [`$graphLookup`](https://www.mongodb.com/docs/manual/reference/operator/aggregation/graphLookup/) repeats a lookup
# level after level inside one aggregation: from `startWith`, it matches `connectToField` against the values of
# `connectFromField` it has collected so far, until nothing new turns up (or `maxDepth`). Each level is a lookup on
# `connectToField`, so that field should be indexed (`parent` for descendants, `_id` for ancestors): without
# an index, every level scans the whole collection. `depthField`
# records how far each result is from the start, **counting from 0**: the direct children of Programming have depth
# 0, their children depth 1, so the largest depth value below is 1 for two levels.

# %%
down = [{"$match": {"_id": "Programming"}},
        {"$graphLookup": {"from": "parent_refs", "startWith": "$_id", "connectFromField": "_id",
                          "connectToField": "parent", "as": "subtree", "depthField": "depth"}}]
up = [{"$match": {"_id": "Databases"}},
      {"$graphLookup": {"from": "parent_refs", "startWith": "$parent", "connectFromField": "parent",
                        "connectToField": "_id", "as": "chain", "depthField": "depth"}}]
graph_down = next(db.parent_refs.aggregate(down))
graph_up = next(db.parent_refs.aggregate(up))
print("descendants:", len(graph_down["subtree"]), "| smallest depth value:",
      min(d["depth"] for d in graph_down["subtree"]), "| largest depth value:",
      max(d["depth"] for d in graph_down["subtree"]), "| levels below Programming:",
      1 + max(d["depth"] for d in graph_down["subtree"]))
print("breadcrumb:", " > ".join(d["_id"] for d in sorted(graph_up["chain"], key=lambda d: -d["depth"])) + " > Databases")


# %% [markdown]
# One round trip each. Unlike `$lookup`, the explain output of `$graphLookup` does not report the documents it reads
# in the `from` collection (its explain entry repeats the stage's specification, and its counters are about the
# documents it outputs, not the keys and documents it read there:
# [mongo source: document_source_graph_lookup.cpp](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/pipeline/document_source_graph_lookup.cpp)),
# so the comparison counts what it must read at least: the start document plus every document it returns.

# %%
def graph_figures(pipeline, field):
    result = next(db.parent_refs.aggregate(pipeline))
    return {"queries": 1, "keys examined": "not reported", "docs examined": f"{1 + len(result[field])} (at least)"}


# %% [markdown]
# ## Side by side
#
# "All descendants of Programming" (a level-2 category) and "breadcrumb of Databases" (level 3):

# %%
designs = {"parent references": (descendants_parent, breadcrumb_parent),
           "child references": (descendants_child, breadcrumb_child),
           "array of ancestors": (descendants_ancestors, breadcrumb_ancestors),
           "materialized path": (descendants_path, breadcrumb_path),
           "nested sets": (descendants_nested, breadcrumb_nested)}
rows, answers = {}, set()
for label, (down_fn, up_fn) in designs.items():
    found, m_down = down_fn("Programming")
    trail, m_up = up_fn("Databases")
    answers.add((tuple(found), tuple(trail)))
    rows[label] = {f"descendants: {k}": v for k, v in m_down.figures().items()} | {
        f"breadcrumb: {k}": v for k, v in m_up.figures().items()}
rows["$graphLookup (parent refs)"] = {f"descendants: {k}": v for k, v in graph_figures(down, "subtree").items()} | {
    f"breadcrumb: {k}": v for k, v in graph_figures(up, "chain").items()}
print("all five designs give the same answers:", len(answers) == 1)
comparison = pd.DataFrame.from_dict(rows, orient="index")
comparison

# %% [markdown]
# - **Parent references** are the simplest to write (moving a subtree changes one field) but need one query per
#   level in either direction, unless `$graphLookup` walks the levels on the server.
# - **Child references** need one query per level too; they suit "show the children of this node" menus.
# - **Array of ancestors** answers both questions in one indexed query; moving a subtree means rewriting the
#   `ancestors` of every node in it.
# - **Materialized paths** do the same with one string and an anchored regex range; sorted on `path`, the whole
#   tree lists every node after its ancestors, with siblings together. Moves rewrite the paths of the subtree.
# - **Nested sets** read a subtree with one range, but the breadcrumb's range grows with the node's place in the
#   walk, and adding or moving a node renumbers a large part of the tree: for trees that rarely change.

# %% [markdown]
# ## Explore: depth and fan-out
#
# The counts follow from the shape of the tree alone. `tree_costs` computes them (estimated: a formula, not a
# measurement) for one node at `level`, given the number of children per node at each level (`fanouts`). It is
# checked first against the measurements on our own tree, whose levels have 5, 4, 4 and 6 children per node, for
# `Fiction` (level 2). Nested sets are left out: their breadcrumb cost depends on the node's place in the walk.

# %%
from math import prod

from labkit.widgets import explorer


def tree_costs(fanouts, level):
    depth = len(fanouts)
    below = depth - level  # levels under the node
    subtree = sum(prod(fanouts[level:i]) for i in range(level + 1, depth + 1))
    return {
        "descendants: parent references": {"queries": below + 1, "docs examined": subtree},
        "descendants: child references": {"queries": below + 1, "docs examined": 1 + subtree},
        "descendants: array of ancestors": {"queries": 1, "docs examined": subtree},
        "descendants: materialized path": {"queries": 2, "docs examined": 1 + subtree},
        "breadcrumb: parent references": {"queries": level + 1, "docs examined": level + 1},
        "breadcrumb: child references": {"queries": level + 1, "docs examined": level},
        "breadcrumb: array of ancestors": {"queries": 1, "docs examined": 1},
        "breadcrumb: materialized path": {"queries": 1, "docs examined": 1},
    }


measured = {}
for label, (down_fn, up_fn) in designs.items():
    if label == "nested sets":  # no formula: its breadcrumb depends on the node's place in the walk
        continue
    for question, fn in (("descendants", down_fn), ("breadcrumb", up_fn)):
        figures = fn("Fiction")[1].figures()
        measured[f"{question}: {label}"] = {"queries": figures["queries"], "docs examined": figures["docs examined"]}
print("formulas match the measurements:", tree_costs([5, 4, 4, 6], level=2) == measured)


# %%
def explore(depth, fanout, level):
    level = min(level, depth)
    fanouts = [fanout] * depth
    out = {"nodes in the tree": 1 + sum(prod(fanouts[:i]) for i in range(1, depth + 1)), "node level": level}
    for question, figures in tree_costs(fanouts, level).items():
        out[question + " (estimated: formula of the tree's shape)"] = f"queries {figures['queries']}, docs {figures['docs examined']:,}"
    return out


def draw_tree(ax, values, r):
    depth = values["depth"]
    costs = tree_costs([values["fanout"]] * depth, min(values["level"], depth))
    labels = ["parent", "child", "ancestors", "path"]
    designs_long = ("parent references", "child references", "array of ancestors", "materialized path")
    ax.bar([f"{d}\n(down)" for d in labels], [costs[f"descendants: {k}"]["queries"] for k in designs_long],
           color="#1f77b4")
    ax.bar([f"{d}\n(up)" for d in labels], [costs[f"breadcrumb: {k}"]["queries"] for k in designs_long],
           color="#ff7f0e")
    ax.set_ylabel("queries")
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title("round trips: descendants (down) and breadcrumb (up)", fontsize=10)


tree_explorer = explorer(explore, sliders={"depth": (1, 8, 4), "fanout": (2, 10, 4), "level": (0, 8, 2)},
                         title="Tree shape", draw=draw_tree)
tree_explorer

# %% [markdown]
# Deep trees hurt the per-level designs (parent and child references) in round trips; wide trees make every design
# read more documents for the descendants, because the answer itself is large.

# %% [markdown]
# ## Exercise
#
# `practice.categories` holds a small taxonomy with parent references only. Give **every** node a materialized
# `path` (ancestors from the root, a comma on both ends, `null` for the root) and create the index that lets
# the anchored-regex descendants query run as an index range. `ex.check(practice.categories)` compares each path with
# the parent chain and explains a descendants query.

# %%
practice = labkit.fresh_db("17_practice")
practice.categories.insert_many([{"_id": n, "parent": p} for n, p, a in nodes if len(a) <= 3])
ex = labkit.exercises.get("17-materialized-path").remember(practice, "categories")  # the setup, as it is now
ex

# %% tags=["solution"]
parent_of = {d["_id"]: d["parent"] for d in practice.categories.find({}, {"parent": 1})}
for node in sorted(parent_of):
    chain, up = [], parent_of[node]
    while up is not None:
        chain.insert(0, up)
        up = parent_of[up]
    practice.categories.update_one({"_id": node}, {"$set": {"path": "," + ",".join(chain) + "," if chain else None}})
practice.categories.create_index("path")
ex.check(practice.categories)

# %% [markdown]
# ## Exercise: everybody below a manager
#
# Another tree: an org chart stored with parent references, `{_id, managerId}` (the CEO's `managerId` is
# `null`). Write `prepare(coll)`, which creates the index your lookups need, and `all_reports(coll, manager_id)`,
# which returns the `_id`s of everybody below the manager, directly or indirectly, with **at most one query per
# level** (or one `$graphLookup`). `ex_org.check(prepare, all_reports)` builds its own org chart of a few hundred people,
# calls `prepare` once, then asks for the reports of people at several levels and counts the queries.

# %%
ex_org = labkit.exercises.get("17-org-chart-reports")
ex_org


# %% tags=["solution"]
def prepare(coll):
    coll.create_index("managerId")


def all_reports(coll, manager_id):
    found, level = [], [manager_id]
    while level:
        level = [d["_id"] for d in coll.find({"managerId": {"$in": level}}, {"_id": 1})]
        found += level
    return found


ex_org.check(prepare, all_reports)

# %% [markdown]
# ## Summary
#
# - Parent and child references store the least and cost one query per level (or one `$graphLookup`, with an index
#   on `connectToField`).
# - An array of ancestors or a materialized path answers "descendants" and "breadcrumb" in one indexed query each,
#   at the price of rewriting a whole subtree when it moves.
# - A materialized path needs delimiters on both ends and a case-sensitive, `^`-anchored regex to become a tight
#   index range.
#
# **Next:** 18 · archiving cold data and keeping a document's revision history.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. [MongoDB manual: Model Tree Structures](https://www.mongodb.com/docs/manual/applications/data-models-tree-structures/)
# 2. [MongoDB manual: Model Tree Structures with Parent References](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-parent-references/)
# 3. [MongoDB manual: Model Tree Structures with Child References](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-child-references/)
# 4. [MongoDB manual: Model Tree Structures with an Array of Ancestors](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-ancestors-array/)
# 5. [MongoDB manual: Model Tree Structures with Materialized Paths](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-materialized-paths/)
# 6. [MongoDB manual: Model Tree Structures with Nested Sets](https://www.mongodb.com/docs/manual/tutorial/model-tree-structures-with-nested-sets/)
# 7. [MongoDB manual: \$regex, index use](https://www.mongodb.com/docs/manual/reference/operator/query/regex/)
# 8. [MongoDB manual: \$graphLookup (aggregation stage)](https://www.mongodb.com/docs/manual/reference/operator/aggregation/graphLookup/)
# 9. [mongodb/mongo src/mongo/db/pipeline/document_source_graph_lookup.cpp (what its explain reports)](https://github.com/mongodb/mongo/blob/v8.0/src/mongo/db/pipeline/document_source_graph_lookup.cpp)
# 10. [MongoDB manual: Multikey Indexes](https://www.mongodb.com/docs/manual/core/indexes/index-types/index-multikey/)

# %% [markdown] tags=["navigation"]
# [← 16 · Extended reference and subset: copy only what the hot read needs](16_extended_reference_subset.ipynb) · [Contents](../CONTENTS.md) · [18 · Archive and document versioning: keep the hot collection small →](18_archive_versioning.ipynb)
