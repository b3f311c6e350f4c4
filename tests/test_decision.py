"""labkit.decision: recommend() on the source material's examples, bad input, and the widget handle."""
from __future__ import annotations

import math

import pytest

from labkit import decision
from labkit.decision import recommend

ROLES = {"parent": "users", "child": "roles", "cardinality": [0, 2, 8], "child_queried_alone": False,
         "changes_with_parent": True, "child_doc_bytes": 40}
POSTS = {"parent": "users", "child": "posts", "cardinality": [0, 50, None], "child_queried_alone": True,
         "changes_with_parent": False, "child_doc_bytes": 400, "reference_field": "authorId"}
FOLLOWS = {"parent": "users", "child": "users", "cardinality": [0, 150, math.inf], "child_queried_alone": True,
           "changes_with_parent": False, "child_doc_bytes": 80, "parents_per_child": [0, 150, None],
           "name": "follows", "link_fields": ["followerId", "followingId"]}
REVIEWS = {"parent": "products", "child": "reviews", "cardinality": [0, 40, None], "child_queried_alone": True,
           "changes_with_parent": False, "child_doc_bytes": 500}

READ_ACCOUNT = {"operation": "Read account with roles", "type": "read", "per_second": 300,
                "entities": ["users", "roles"], "fields": ["name", "roles.title", "roles.canEdit"]}
NEWEST_POSTS = {"operation": "Newest 20 posts of a user", "type": "read", "per_second": 400,
                "entities": ["users", "posts"], "fields": ["posts.title", "posts.location", "posts.createdAt"],
                "sort": {"createdAt": -1}, "limit": 20}
SEARCH_POSTS = {"operation": "Search posts by location", "type": "read", "per_second": 50,
                "entities": ["posts"], "fields": ["title", "location"]}
PUBLISH = {"operation": "Publish post", "type": "write", "per_second": 5, "entities": ["posts"], "fields": ["title"]}
PRODUCT_PAGE = {"operation": "Show product page", "type": "read", "per_second": 2000,
                "entities": ["products", "reviews"],
                "fields": ["name", "price", "reviews.text", "avg(reviews.rating)", "count(reviews)"],
                "sort": {"createdAt": -1}, "limit": 5}
ADD_REVIEW = {"operation": "Add review", "type": "write", "per_second": 2, "entities": ["reviews"],
              "fields": ["text", "rating"]}


def test_roles_max_8_are_embedded_with_a_validator():
    advice = recommend([READ_ACCOUNT], [ROLES]).model_for("users", "roles")
    assert advice.name == "embed" and advice.indexes == ()
    text = " ".join(advice.reasons)
    assert "at most 8 roles" in text and "8 x 40 B = 320 B" in text and "maxItems: 8" in text
    assert advice.lessons[0].startswith("01_")


def test_unbounded_posts_are_referenced_from_the_child_with_a_matching_index():
    rec = recommend([NEWEST_POSTS, SEARCH_POSTS, PUBLISH], [POSTS])
    advice = rec.model_for("users", "posts")
    assert advice.name == "child reference"
    (index,) = advice.indexes
    assert index.collection == "posts"
    assert list(index.spec.items()) == [("authorId", 1), ("createdAt", -1), ("_id", -1)]
    text = " ".join(advice.reasons)
    assert "[0, 50, unbounded]" in text and "Search posts by location" in text
    assert advice.lessons[0].startswith("02_")


def test_follows_get_a_relationship_collection_with_two_indexes():
    advice = recommend([], [FOLLOWS]).model_for("users", "users")
    assert advice.name == "relationship collection"
    unique, reverse = advice.indexes
    assert (unique.collection, list(unique.spec.items()), unique.unique) == \
        ("follows", [("followerId", 1), ("followingId", 1)], True)
    assert (reverse.collection, list(reverse.spec.items()), reverse.unique) == \
        ("follows", [("followingId", 1), ("followerId", 1)], False)
    assert advice.lessons[0].startswith("04_")


def test_many_to_many_with_a_bounded_side_keeps_an_array_of_references():
    cats = {"parent": "products", "child": "categories", "cardinality": [1, 2, 5], "child_queried_alone": True,
            "changes_with_parent": False, "child_doc_bytes": 100, "parents_per_child": [0, 500, None]}
    advice = recommend([], [cats]).model_for("products", "categories")
    assert advice.name == "array of references"
    assert [str(ix) for ix in advice.indexes] == ["products: {categoryIds: 1}"]


def test_the_embed_bound_is_the_sources_fewer_than_100_items():
    """The source material's embed rule: 'The array is bounded (< 100 items)'. 99 children embed; 100 do not."""
    assert decision.EMBED_BOUND == 100
    tags = {"parent": "articles", "child": "tags", "child_queried_alone": False, "changes_with_parent": True,
            "child_doc_bytes": 30}
    read = {"operation": "Read article", "type": "read", "per_second": 100, "entities": ["articles", "tags"],
            "fields": ["title", "tags.name"]}
    at_99 = recommend([read], [tags | {"cardinality": [0, 10, 99]}]).model_for("articles", "tags")
    assert at_99.name == "embed" and "fewer than 100" in " ".join(at_99.reasons)
    at_100 = recommend([read], [tags | {"cardinality": [0, 10, 100]}]).model_for("articles", "tags")
    assert at_100.name == "child reference"
    assert "max 100 is not fewer than 100" in " ".join(at_100.reasons)


def test_a_many_to_many_array_needs_a_side_below_the_bound_and_says_so():
    enrol = {"parent": "students", "child": "courses", "cardinality": [1, 5, 12], "parents_per_child": [0, 120, 400],
             "child_queried_alone": True, "changes_with_parent": False, "child_doc_bytes": 300}
    advice = recommend([], [enrol]).model_for("students", "courses")
    assert advice.name == "array of references"
    text = " ".join(advice.reasons)
    assert "at most 12, fewer than the 100 items" in text and "<= 200" not in text
    both_big = enrol | {"cardinality": [1, 5, 100], "parents_per_child": [0, 120, 400]}
    assert recommend([], [both_big]).model_for("students", "courses").name == "relationship collection"


def test_product_reviews_read_1000x_per_write_get_computed_and_subset():
    rec = recommend([PRODUCT_PAGE, ADD_REVIEW], [REVIEWS])
    assert rec.model_for("products", "reviews").name == "child reference"
    assert list(rec.indexes[0].spec) == ["productId", "createdAt", "_id"]
    assert set(rec.pattern_names) == {"computed", "subset"}
    computed = next(p for p in rec.patterns if p.name == "computed")
    assert "2,000/s" in computed.reasons[0] and "2/s" in computed.reasons[0] and "1,000 reads per write" in computed.reasons[0]
    subset = next(p for p in rec.patterns if p.name == "subset")
    assert "only 5 of an unbounded number of reviews" in subset.reasons[0] and "$slice: 5:" in subset.reasons[1]
    assert computed.lessons == ("12_computed",) or computed.lessons[0].startswith("12_")


def test_outlier_bucket_and_extended_reference():
    comments = {"parent": "posts", "child": "comments", "cardinality": [0, 5, 50000], "child_queried_alone": False,
                "changes_with_parent": False, "child_doc_bytes": 300}
    show_post = {"operation": "Show post with comments", "type": "read", "per_second": 500,
                 "entities": ["posts", "comments"], "fields": ["title", "comments.text"]}
    assert "outlier" in recommend([show_post], [comments]).pattern_names
    readings = {"parent": "sensors", "child": "readings", "cardinality": [0, 86400, None],
                "child_queried_alone": True, "changes_with_parent": False, "child_doc_bytes": 60, "time_series": True}
    rec = recommend([], [readings])
    assert "bucket" in rec.pattern_names and str(rec.patterns[-1].indexes[0]) == \
        "readings_buckets: {sensorId: 1, start: 1} unique"
    show = {"operation": "Show post with author", "type": "read", "per_second": 800, "entities": ["posts", "users"],
            "fields": ["title", "users.name"]}
    ext = recommend([show], [POSTS])
    assert "extended reference" in ext.pattern_names
    assert "needs only 1 field(s) of users (name)" in ext.patterns[-1].reasons[0]


def test_bounded_but_read_alone_is_referenced():
    items = dict(ROLES, child_queried_alone=True)
    assert recommend([READ_ACCOUNT], [items]).model_for("users", "roles").name == "child reference"


def test_too_big_to_embed_even_if_bounded():
    big = dict(ROLES, cardinality=[0, 10, 150], child_doc_bytes=20_000)
    advice = recommend([READ_ACCOUNT], [big]).model_for("users", "roles")
    assert advice.name == "child reference" and "150 x 19.5 KiB = 2.9 MiB" in " ".join(advice.reasons)


@pytest.mark.parametrize("patterns, relationships, message", [
    ([dict(READ_ACCOUNT, type="reed")], [ROLES], r"access_patterns\[0\]\.type='reed' is not allowed; allowed values: 'read', 'write'"),
    ([dict(READ_ACCOUNT, per_second=-1)], [ROLES], r"access_patterns\[0\]\.per_second=-1"),
    ([{"operation": "x", "type": "read"}], [ROLES], r"access_patterns\[0\] is missing per_second, fields, entities"),
    ([dict(READ_ACCOUNT, sort={"createdAt": "desc"})], [ROLES], r"sort=.* must map field names to 1 or -1"),
    ([dict(READ_ACCOUNT, entites=["users"])], [ROLES], r"unknown key\(s\) entites; allowed: operation"),
    ([], [dict(ROLES, cardinality=[0, 9, 8])], r"relationships\[0\]\.cardinality=\[0, 9, 8\]: need min <= likely <= max"),
    ([], [dict(ROLES, cardinality=[0, 2])], r"must be \[min, likely, max\]"),
    ([], [dict(ROLES, cardinality=[0, math.inf, None])], r"likely=inf must be a finite number"),
    ([], [dict(ROLES, child_queried_alone="no")], r"child_queried_alone='no' is not allowed; allowed values: True, False"),
    ([], [dict(ROLES, child_doc_bytes=0)], r"child_doc_bytes=0 must be a number of bytes > 0"),
    ([], [], r"relationships must be a non-empty list"),
    ([], [ROLES, ROLES], r"users -> roles is listed more than once"),
])
def test_bad_input_names_the_field(patterns, relationships, message):
    with pytest.raises(ValueError, match=message):
        recommend(patterns, relationships)


def test_html_table_has_reasons_and_lesson_links():
    page = recommend([PRODUCT_PAGE, ADD_REVIEW], [REVIEWS]).to_html()
    assert page.startswith("<table class='labkit-decision'>")
    assert "computed pattern" in page and "12_computed.ipynb" in page and "{productId: 1, createdAt: -1, _id: -1}" in page


def test_lessons_link_to_existing_notebooks_or_planned_names(tmp_path):
    (tmp_path / "16_subset_and_friends.ipynb").write_text("")
    assert decision.lesson_for("subset", tmp_path) == "16_subset_and_friends"
    assert decision.lesson_for("bucket", tmp_path) == "10_bucket"


def test_widget_handle_runs_without_a_browser():
    handle = decision.decision_widget()
    assert "child reference" in handle.output_html and "authorId: 1, createdAt: -1, _id: -1" in handle.output_html
    c = handle.controls
    c["parent"].value, c["child"].value, c["reference_field"].value = "users", "roles", ""
    c["entities"].value, c["fields"].value, c["sort"].value, c["limit"].value = "users, roles", "name, roles.title", "", 0
    c["min"].value, c["likely"].value, c["max"].value, c["child_doc_bytes"].value = 0, 2, "8", 40
    c["child_queried_alone"].value, c["changes_with_parent"].value = False, True
    handle.button.click()
    assert handle.recommendation.model_for("users", "roles").name == "embed"
    assert "<b>embed</b>" in handle.output_html and "maxItems: 8" in handle.output_html
    c["type"].value = "write"
    c["max"].value = "lots"
    handle.button.click()
    assert handle.recommendation is None and "max=&#x27;lots&#x27; must be a number" in handle.output_html
    assert handle.text().startswith("decision widget: max=")


def test_subset_slice_keeps_the_shown_children_not_the_oldest():
    # Manual, $push / $slice modifier: $sort is applied before $slice; a positive $slice keeps the first N
    # elements, a negative one the last N. Sorted by createdAt -1 (newest first), the newest N are the first N.
    subset = next(p for p in recommend([PRODUCT_PAGE, ADD_REVIEW], [REVIEWS]).patterns if p.name == "subset")
    assert "$sort {createdAt: -1} and $slice: 5:" in subset.reasons[1]
    assert "$slice: -5 would keep the last 5" in subset.reasons[1]
    oldest_first = dict(PRODUCT_PAGE, sort={"createdAt": 1})
    subset = next(p for p in recommend([oldest_first], [REVIEWS]).patterns if p.name == "subset")
    assert "$sort {createdAt: 1} and $slice: 5:" in subset.reasons[1]


def test_time_series_gets_a_time_series_collection_before_hand_made_buckets():
    # Manual, "Time Series": timeseries={timeField, metaField, granularity} on create; buckets are internal.
    readings = {"parent": "sensors", "child": "readings", "cardinality": [0, 86400, None],
                "child_queried_alone": True, "changes_with_parent": False, "child_doc_bytes": 60, "time_series": True}
    write = {"operation": "Store reading", "type": "write", "per_second": 2000, "entities": ["readings"],
             "fields": ["value"]}
    rec = recommend([write], [readings])
    assert rec.pattern_names.index("time-series collection") < rec.pattern_names.index("bucket")
    ts = next(p for p in rec.patterns if p.name == "time-series collection")
    assert "'metaField': 'sensorId'" in ts.shape and "written 2,000/s" in ts.reasons[0]
    assert str(ts.indexes[0]) == "readings: {sensorId: 1, ts: 1}"
    assert "time-series collection" not in recommend([], [dict(readings, time_series=False)]).pattern_names


def test_widget_expresses_writes_many_to_many_and_time_series():
    handle = decision.decision_widget()
    c = handle.controls
    # a write row changes the reads-per-write rule: product page 2000/s vs reviews written 400/s -> no computed
    c["operation"].value, c["per_second"].value = "Show product page", 2000
    c["entities"].value, c["fields"].value = "products, reviews", "name, avg(reviews.rating)"
    c["sort"].value, c["limit"].value = "", 0
    c["parent"].value, c["child"].value, c["reference_field"].value = "products", "reviews", ""
    c["write_operation"].value, c["write_per_second"].value, c["write_entities"].value = "Add review", 2, "reviews"
    handle.button.click()
    assert "computed" in handle.recommendation.pattern_names and "1,000 reads per write" in handle.output_html
    c["write_per_second"].value = 400
    handle.button.click()
    assert "computed" not in handle.recommendation.pattern_names
    # many-to-many: unbounded parents per child
    c["parents_per_child"].value = "unbounded"
    handle.button.click()
    assert handle.recommendation.model_for("products", "reviews").name == "relationship collection"
    c["parents_per_child"].value = "1"
    c["time_series"].value = True
    handle.button.click()
    assert "time-series collection" in handle.recommendation.pattern_names
    c["parents_per_child"].value = "many"
    handle.button.click()
    assert handle.recommendation is None and "must be a number" in handle.output_html


def test_write_heavy_children_get_no_subset_copy():
    """A subset copy costs one extra update per new child to save one query per read (lesson 16's trade):
    when the children are written more often than the page is read, it does not pay."""
    def names(reads, writes):
        rec = recommend(
            [{"operation": "Show product", "type": "read", "per_second": reads, "entities": ["products", "reviews"],
              "fields": ["name", "reviews.text"], "sort": {"createdAt": -1}, "limit": 5},
             {"operation": "Add review", "type": "write", "per_second": writes, "entities": ["reviews"],
              "fields": []}],
            [{"parent": "products", "child": "reviews", "cardinality": [0, 50, None], "child_queried_alone": True,
              "changes_with_parent": False, "child_doc_bytes": 500}])
        return rec.pattern_names
    assert "subset" in names(1000, 1)
    assert "subset" not in names(10, 100)
