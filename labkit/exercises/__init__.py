"""Checked exercises: ``ex = labkit.exercises.get("00-rank-workload")``, then ``ex.check(answer)``,
``ex.hint()``, ``ex.solution()``.

Introduced in ``notebooks/00_start_here.ipynb``. A checker inspects *properties* of what the learner built
(the ranking is by frequency, the plan has no SORT stage, the document stays under N bytes), never a string
match, and explains what is wrong when the answer is not right.

The map (in the spirit of Kaggle's learntools: a class per kind of problem, outcomes decided once):

- ``problem.py``: :class:`Exercise`, the base of every exercise (task, hints, solution, ``check``, ``remember``;
  ``takes``, the shape of the call ``ex.check(...)``), and :func:`remembered`.
- ``kinds.py``: the kinds of exercise, each a subclass of :class:`Exercise` that decides what its checker is given:
  :class:`Prediction` (P: a guess before a cell runs, the measurement after), :class:`BehaviourCheck` (B: the
  learner's functions run on fresh data of the checker's own in a sandbox whose commands are watched:
  ``checker(lab, *parts)``, :class:`Lab`), :class:`StateCheck` (S: the learner's database or collection as they
  left it, compared with the setup copy ``ex.remember`` kept, or its indexes tried on pristine data) and
  :class:`DesignQuestion` (D: an answer that is a decision: a ranking, a pipeline, a validator, a dict of
  choices, the decision helper's inputs).
- ``outcomes.py``: :class:`NotYet`, :class:`CheckResult` and the four outcomes (not attempted; not yet, with the
  checker's specific message; the learner's own exception named, or a gap in labkit said so; correct), decided
  in one place (``judge``) for every kind.
- ``steps.py``: the steps checkers share: call shapes (``db_and_function``, ``function``, ``collection``...),
  what the learner's writes said (a replacement, a fixed array position, a value computed in Python), the data
  against the remembered setup, validators tried on documents, a database that crashes between two writes.
- ``observe.py``: command monitoring of the learner's functions (sandboxes, recorded commands, plan figures).
- ``registry.py``: the catalogue (``get``, ``ids``) and :class:`~labkit.exercises.registry.Lesson`; a leaf, so
  progress keeping (``labkit.tracking``) reads it without importing the checkers back.
- ``lessons/``: one module per lesson, named after its notebook, declaring each exercise's kind and checker
  (``@LESSON.exercise(kind, id, takes=...)``), with its texts (task, hints, solution, a prediction's explanation)
  in the ``.toml`` file of the same name:

- ``l00_start_here``: 00-predict-page-docs (P), 00-rank-workload (D), 00-top-operations (B)
- ``l01_embed_one_to_few``: 01-embed-atomic (B), 01-order-lines (B), 01-positional-role (B),
  01-predict-policy-rewrites (P)
- ``l02_one_to_many``: 02-comment-index (S), 02-orders-index (S), 02-predict-feed-keys (P)
- ``l03_lookup``: 03-predict-bounded-docs (P), 03-product-reviews (B), 03-top-comments (B)
- ``l04_follows``: 04-likes-indexes (S), 04-member-counter (B), 04-predict-count-keys (P)
- ``l05_two_way``: 05-idempotent-enroll (B), 05-predict-transaction-crash (P), 05-reconcile (B)
- ``l06_denormalization``: 06-predict-oldest-preview (P), 06-rename-member (B), 06-top-bids (B)
- ``l07_validation``: 07-migrate-products (B), 07-post-validator (D), 07-predict-strict-repair (P)
- ``l08_capstone_profile``: 08-delete-account (B), 08-orphans (S), 08-predict-growing-read (P)
- ``l10_bucket``: 10-bucket-upsert (B), 10-predict-ts-buckets (P), 10-ts-meters (B)
- ``l11_outlier``: 11-outlier-write (B), 11-predict-deep-page-keys (P)
- ``l12_computed``: 12-computed-stats (B), 12-predict-aggregate-keys (P), 12-thread-stats (B)
- ``l13_schema_versioning``: 13-dual-query-city (B), 13-migrate-batches (B), 13-predict-dual-query-after-migration
  (P)
- ``l14_polymorphic``: 14-polymorphic-validator (D), 14-predict-sparse-or-partial (P)
- ``l15_attribute``: 15-attribute (S), 15-predict-entries-vs-sparse (P)
- ``l16_extended_reference_subset``: 16-extended-reference-tickets (B), 16-predict-lookup-docs (P), 16-subset (B)
- ``l17_trees``: 17-materialized-path (S), 17-org-chart-reports (B), 17-predict-unanchored-keys (P)
- ``l18_archive_versioning``: 18-predict-crash-retry (P), 18-price-history-crash-safe (B), 18-versioning (B)
- ``l19_single_collection``: 19-enrol (B), 19-predict-author-page-docs (P), 19-single-collection (S)
- ``l20_which_pattern``: 20-chat-workload (D), 20-predict-helper-model (P), 20-which-pattern (D)
- ``l30_workload``: 30-pick-operations (D), 30-predict-naive-page-docs (P), 30-reads-per-write (B)
- ``l31_hard_limits``: 31-flatten-thread (B), 31-no-parallel-arrays (S), 31-predict-pushes (P)
- ``l32_unbounded_arrays``: 32-capped-subset (B), 32-predict-history-docs (P)
- ``l33_bloated_documents``: 33-predict-projection-docs (P), 33-save-profile-split (B), 33-split-hot-cold (S)
- ``l34_massive_collections``: 34-merge-collections (S), 34-predict-ttl (P), 34-ttl-sessions (B)
- ``l35_unnecessary_indexes``: 35-drop-unneeded (S), 35-predict-hidden-collscans (P), 35-prune-tickets (B)
- ``l36_separate_data``: 36-embed-books (B), 36-embed-context (S), 36-predict-round-trips (P)
- ``l37_case_insensitive``: 37-login-filter (S), 37-predict-regex-keys (P), 37-team-names (B)
- ``l38_lookup_overuse``: 38-extended-reference (S), 38-predict-top-daily (P), 38-rename-agent (B)
- ``l39_schema_review``: 39-fix-blog (B), 39-predict-findings-gone (P), 39-schema-review (S)
- ``l40_shard_keys``: 40-device-shard-key (D), 40-predict-hot-shard (P)
- ``l41_query_targeting``: 41-predict-follower-shards (P), 41-tenant-shard-key (D)
- ``l42_sharded_patterns``: 42-repair-key (B)

- ``relationships.py``, ``patterns.py``, ``antipatterns.py``: the names notebooks 07, 20 and 39 import from the
  section modules the exercises lived in before (``PRODUCTS_SCHEMA``, ``legacy_products``,
  ``WHICH_PATTERN_SCENARIOS``, ``blog_store``).
"""
from __future__ import annotations

from labkit.exercises import lessons, observe  # noqa: F401 - importing the lessons registers their exercises
from labkit.exercises.kinds import BehaviourCheck, DesignQuestion, Prediction, StateCheck
from labkit.exercises.outcomes import OUTCOMES, CheckResult, NotYet
from labkit.exercises.problem import Exercise, remembered
from labkit.exercises.registry import get, ids, register

__all__ = ["get", "ids", "Exercise", "Prediction", "BehaviourCheck", "StateCheck", "DesignQuestion", "NotYet",
           "CheckResult", "OUTCOMES", "remembered", "register", "observe"]
