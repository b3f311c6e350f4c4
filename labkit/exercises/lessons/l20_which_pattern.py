"""Lesson 20 (Which pattern when: use cases, patterns and a quiz): its exercises and their checkers.

Notebook: ``notebooks/20_which_pattern.ipynb``.
"""
from __future__ import annotations

from typing import Any

from labkit.exercises import steps
from labkit.exercises.kinds import DesignQuestion, Prediction
from labkit.exercises.outcomes import NotYet
from labkit.exercises.registry import Lesson

LESSON = Lesson(__file__)


#: The quiz of notebook 20: scenario id -> what happens in the application.
WHICH_PATTERN_SCENARIOS = {
    "sensor-every-second": "A sensor reports a temperature every second; dashboards chart one sensor an hour at a time.",
    "viral-post": "Most posts have about five comments and show them inline; one post has 50,000 comments.",
    "rating-on-every-view": "Every product page shows the average rating; pages are viewed thousands of times per "
                            "new review.",
    "renamed-fields": "Old user documents store `name`, new ones `firstName` and `lastName`; the change must ship "
                      "without downtime.",
    "mixed-feed": "Articles, videos and tools appear together in one feed, newest first, each rendered its own way.",
    "rough-view-counter": "A page-view counter may be off by a few percent, but its writes must drop tenfold.",
    "many-spec-fields": "Products carry hundreds of different specification fields, and shoppers filter on any of "
                        "them.",
}


#: The key: scenario -> (the pattern that removes its main cost, why).
_KEY = {
    "sensor-every-second": ("bucket", "group readings per sensor and hour: 24 documents a day instead of 86,400 "
                                      "(lesson 10)."),
    "viral-post": ("outlier", "embed up to N comments and send the rest of the exceptional post to an overflow "
                              "collection, flagged with hasOverflow (lesson 11)."),
    "rating-on-every-view": ("computed", "reads vastly outnumber writes, so store the statistics on the product and "
                                         "update them with each review (lesson 12)."),
    "renamed-fields": ("schema versioning", "tag documents with schemaVersion, migrate on read and in background "
                                            "batches (lesson 13)."),
    "mixed-feed": ("polymorphic", "one collection with a `type` field gives one query and one index for the mixed "
                                  "feed (lesson 14)."),
    "rough-view-counter": ("approximation", "add N to the counter on one view in N: N times fewer writes for a small, "
                                            "measurable error (lesson 12)."),
    "many-spec-fields": ("attribute", "move the varying fields into an array of {k, v} pairs and index that array "
                                      "once (lesson 15)."),
}
_EXPECTED = {scenario: pattern for scenario, (pattern, _) in _KEY.items()}
_WHY = {scenario: why for scenario, (_, why) in _KEY.items()}


_SYNONYMS = {
    "bucket": "bucket", "bucketing": "bucket", "buckets": "bucket", "time series": "bucket",
    "outlier": "outlier", "outliers": "outlier", "overflow": "outlier",
    "computed": "computed", "computation": "computed", "precomputed": "computed", "pre computed": "computed",
    "schema versioning": "schema versioning", "versioning": "schema versioning", "schema version": "schema versioning",
    "document versioning": "document versioning",
    "polymorphic": "polymorphic", "polymorphism": "polymorphic", "single collection": "single collection",
    "inheritance": "inheritance",
    "approximation": "approximation", "approximate": "approximation",
    "attribute": "attribute", "attributes": "attribute",
    "subset": "subset", "extended reference": "extended reference", "archive": "archive", "tree": "tree",
    "embedding": "embedding", "embed": "embedding", "referencing": "referencing", "reference": "referencing",
}


#: A question per scenario that points at its main cost without naming the pattern (shown for wrong answers,
#: so a learner who guesses is nudged, not told).
_NUDGE = {
    "sensor-every-second": "what does one document per reading cost at 86,400 readings a day per sensor, and what "
                           "do the readings of one sensor have in common?",
    "viral-post": "is the problem every post, or one exceptional post far larger than the rest?",
    "rating-on-every-view": "compare how often the rating is shown with how often it changes.",
    "renamed-fields": "old and new documents must coexist while you migrate without downtime: how does a reader "
                      "tell them apart?",
    "mixed-feed": "articles, videos and tools are read together in one feed: one query on one collection, or "
                  "three?",
    "rough-view-counter": "does this counter need to be exact, and what does a write per view cost?",
    "many-spec-fields": "how many indexes would one index per spec field take, and how many fields are there?",
}


#: Explanations for tempting wrong answers: (scenario, given) -> why not.
_NOT_THAT = {
    ("viral-post", "subset"): "subset keeps a few items embedded for every document; here the problem is one "
                              "exceptional post, handled differently from the rest.",
    ("viral-post", "bucket"): "grouping a regular stream by time does not help here; the issue here is one document far larger "
                              "than all the others.",
    ("rating-on-every-view", "approximation"): "an average rating shown to shoppers should be exact, and reviews are "
                                               "rare writes: nothing to save by skipping updates.",
    ("rough-view-counter", "computed"): "keeping the counter on the document is right, but updating it on every "
                                        "view keeps every write; the hint is that a few percent error is fine and "
                                        "writes must drop.",
    ("renamed-fields", "document versioning"): "document versioning keeps old revisions of the data; here the "
                                               "*shape* of the documents changed, not their content.",
    ("mixed-feed", "inheritance"): "inheritance describes how the shapes share a base; the question is how to "
                                   "store them so one query reads them together.",
    ("mixed-feed", "single collection"): "single collection stores related entities to fetch them together by a "
                                         "shared key; these are similar items of several kinds read as one list.",
    ("many-spec-fields", "polymorphic"): "several document shapes in one collection is not the problem; hundreds "
                                         "of optional fields that all need an index are.",
    ("sensor-every-second", "computed"): "summaries help, but the main cost is 86,400 documents a day per "
                                         "sensor; find the pattern that removes most of them.",
}


def _normalise(answer: Any) -> str | None:
    if not isinstance(answer, str):
        return None
    text = answer.strip().lower().replace("-", " ").replace("_", " ")
    for suffix in (" pattern", " patterns"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    text = " ".join(text.split())
    return _SYNONYMS.get(text, text)


@LESSON.exercise(DesignQuestion, "20-which-pattern",
                 takes=steps.one("call it with one dict: `ex.check(answers)`.",
                                 steps.call("`answers` should be a dict {scenario id: pattern name}, got {type}.",
                                            lambda a: isinstance(a, dict))),
                 solution_text=("answers = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in _EXPECTED.items())
                                + "}\nex.check(answers)"))
def _check_which_pattern(answers: dict) -> str:
    unknown = sorted(set(answers) - set(WHICH_PATTERN_SCENARIOS))
    if unknown:
        raise NotYet(f"unknown scenario id(s) {unknown}; use the ids of the quiz table: "
                     f"{sorted(WHICH_PATTERN_SCENARIOS)}.")
    missing = [s for s in WHICH_PATTERN_SCENARIOS if not _normalise(answers.get(s))]
    if missing:
        raise NotYet(f"{len(missing)} scenario(s) have no answer yet: {missing}.")
    wrong = []
    for scenario, expected in _EXPECTED.items():
        given = _normalise(answers[scenario])
        if given == expected:
            continue
        why_not = _NOT_THAT.get((scenario, given), "")
        wrong.append(f"- {scenario}: you said '{answers[scenario]}'. "
                     + (f"Not quite: {why_not} " if why_not else "Not this one. ")
                     + f"Ask yourself: {_NUDGE[scenario]}")
    right = len(_EXPECTED) - len(wrong)
    if wrong:
        raise NotYet(f"{right} of {len(_EXPECTED)} right (the right answers are shown once all are right).\n"
                     + "\n".join(wrong))
    return (f"{right} of {len(_EXPECTED)} right: each scenario matched to the pattern that removes its main cost.\n"
            + "\n".join(f"- {k}: {v} ({_WHY[k]})" for k, v in _EXPECTED.items()))


LESSON.add(Prediction, "20-predict-helper-model",
           choices=("embed", "array of references", "child reference", "relationship collection"))


@LESSON.exercise(DesignQuestion, "20-chat-workload",
                 takes=steps.call("call it with both lists: `ex2.check(access_patterns, relationships)`.", None, None))
def _check_chat_workload(access_patterns: Any, relationships: Any) -> str:
    from labkit.decision import recommend

    if not isinstance(access_patterns, list) or not isinstance(relationships, list):
        raise NotYet("both arguments are lists of dicts: access patterns first, relationships second.")
    try:
        rec = recommend(access_patterns, relationships)
    except ValueError as exc:
        raise NotYet(f"the helper refuses the input: {exc}") from None
    ops = {r.get("type"): r for r in access_patterns if isinstance(r, dict)}
    rates = sorted((r.get("type"), r.get("per_second")) for r in access_patterns if isinstance(r, dict))
    if ("read", 2000) not in rates or ("write", 200) not in rates:
        raise NotYet(f"the access patterns' (type, per_second) are {rates}; the app opens channels 2,000 times a "
                     "second (a read) and posts 200 messages a second (a write): the rates are what the design "
                     "is for.")
    read = ops.get("read") or {}
    if not {"channels", "messages", "members"} <= set(read.get("entities") or []):
        raise NotYet("opening a channel reads the channel, its members and its newest messages: list all three "
                     "entities in that access pattern.")
    rels = {(str(r.get("parent")), str(r.get("child"))): r for r in relationships if isinstance(r, dict)}
    for pair in (("channels", "members"), ("channels", "messages")):
        if pair not in rels:
            raise NotYet(f"describe the relationship {pair[0]} -> {pair[1]} (parent 'channels', child "
                         f"'{pair[1]}'); have {sorted(rels)}.")
    members, messages = rels["channels", "members"], rels["channels", "messages"]
    card_m = list(members.get("cardinality") or [])
    card_x = list(messages.get("cardinality") or [])
    if len(card_x) == 3 and card_x[2] is not None and card_x[2] != float("inf"):
        raise NotYet(f"channels -> messages has max {card_x[2]}, but nothing bounds a channel's messages: leave the "
                     "max empty (None). A guessed bound is how unbounded arrays get embedded.")
    if card_m != [2, 8, 50]:
        raise NotYet(f"channels -> members is {card_m}; the app says at least 2, typically 8, at most 50: "
                     "[2, 8, 50].")
    if card_x[:2] != [0, 2000]:
        raise NotYet(f"channels -> messages starts {card_x[:2]}; the app says none at first and about 2,000 "
                     "typically: [0, 2000, None].")
    for rel, name, about in ((members, "a member", 60), (messages, "a message", 300)):
        size = rel.get("child_doc_bytes")
        if not isinstance(size, (int, float)) or isinstance(size, bool) or not about / 2 <= size <= about * 2:
            raise NotYet(f"child_doc_bytes of {name} is {size!r}; the app says about {about} bytes: the size decides "
                         "whether the bounded list stays small enough to embed.")
    if messages.get("child_queried_alone") is not True:
        raise NotYet("messages are searched on their own (without their channel): child_queried_alone=True.")
    if members.get("child_queried_alone") is not False:
        raise NotYet("members are only ever shown with their channel: child_queried_alone=False.")
    got = {pair: rec.model_for(*pair).name for pair in (("channels", "members"), ("channels", "messages"))}
    if got != {("channels", "members"): "embed", ("channels", "messages"): "child reference"}:
        raise NotYet(f"with your inputs the helper recommends {got}; check the sizes you gave (child_doc_bytes: "
                     "about 60 bytes a member, 300 a message).")
    return ("members embedded (bounded, small, read with the channel), messages referencing their channel (no "
            "bound, searched alone): the numbers you gave decided it, not the entity names.")


