"""One module per lesson; importing this package registers every exercise (``labkit.exercises.registry``).

Each module is named after its notebook (``l12_computed`` holds the checkers of ``notebooks/12_computed.ipynb``).
"""
from __future__ import annotations

from labkit.exercises.lessons import (  # noqa: F401 - imported to register their exercises
    l00_start_here,
    l01_embed_one_to_few,
    l02_one_to_many,
    l03_lookup,
    l04_follows,
    l05_two_way,
    l06_denormalization,
    l07_validation,
    l08_capstone_profile,
    l10_bucket,
    l11_outlier,
    l12_computed,
    l13_schema_versioning,
    l14_polymorphic,
    l15_attribute,
    l16_extended_reference_subset,
    l17_trees,
    l18_archive_versioning,
    l19_single_collection,
    l20_which_pattern,
    l30_workload,
    l31_hard_limits,
    l32_unbounded_arrays,
    l33_bloated_documents,
    l34_massive_collections,
    l35_unnecessary_indexes,
    l36_separate_data,
    l37_case_insensitive,
    l38_lookup_overuse,
    l39_schema_review,
    l40_shard_keys,
    l41_query_targeting,
    l42_sharded_patterns,
)
