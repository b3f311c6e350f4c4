"""The live-demo dashboard's figures (labkit.demo) and INSTRUCTOR.md's presenter script, which quotes them
(issue 28: the script said "165,000 posts cross 16 MiB" while the dashboard computed 165,042).

Fact used: a BSON document may be at most 16 MiB (16,777,216 bytes; MongoDB manual, "MongoDB Limits and
Thresholds": BSON Document Size)."""
from __future__ import annotations

from pathlib import Path

import bson

from labkit import demo
from labkit.sizes import MAX_BSON_SIZE

ROOT = Path(__file__).resolve().parents[1]


def _size(user, field, n, make):
    return len(bson.encode({**user, field: [make(i) for i in range(n)]}))


def test_the_walls_are_where_bson_crosses_16_mib():
    assert MAX_BSON_SIZE == 16 * 1024 * 1024
    user = demo.sam()
    wall = demo.walls(user)
    for field, make, n in (("posts", lambda i: demo.embedded_post(user, i), wall["embedded"]),
                           ("postIds", demo.post_id, wall["ids"])):
        assert _size(user, field, n - 1, make) <= MAX_BSON_SIZE < _size(user, field, n, make), field


def test_the_takeaway_turns_at_the_wall():
    user = demo.sam()
    wall = demo.walls(user)
    before = demo.parent_growth(user, wall["embedded"] - 1, wall)["takeaway"]
    after = demo.parent_growth(user, wall["embedded"], wall)["takeaway"]
    assert "of 16 MiB" in before and "past the 16 MiB limit" in after and f"{wall['embedded']:,}" in after


def test_the_presenter_script_quotes_the_computed_figures():
    f = demo.presenter_figures()
    text = (ROOT / "INSTRUCTOR.md").read_text()
    script = text[text.index("## Live demo: presenter script"):]
    assert f"Drag past {f['wall_embedded']:,}" in script and f"{f['wall_ids']:,} posts" in script
    assert f"{f['embedded_share']:.1%} of 16 MiB" in script and f"{f['child_bytes']:,}" in script
    assert "165,000" not in script
    assert f["past_wall"] % demo.POSTS_SLIDER[3] == 0 and f["past_wall"] - demo.POSTS_SLIDER[3] < f["wall_embedded"]
