"""Tests for labkit.collation: ICU-like English collation without ICU.

Each test names the MongoDB manual example it reproduces.
"""
from __future__ import annotations

import pytest
from pymongo.collation import Collation, CollationStrength
from pymongo.errors import OperationFailure

from labkit.collation import (
    CollationKey,
    collation_key,
    compare,
    normalize_collation,
    strings_equal,
)

EN = normalize_collation({"locale": "en"})
EN_S1 = normalize_collation({"locale": "en", "strength": 1})
EN_S2 = normalize_collation({"locale": "en", "strength": 2})


def _sorted(words, collation):
    return sorted(words, key=lambda w: collation_key(w, collation))


def _errmsg(collation):
    with pytest.raises(OperationFailure) as info:
        normalize_collation(collation)
    return info.value.code, info.value.details["errmsg"]


def test_normalize_fills_server_defaults():
    """Manual, "Collation" > Collation Document: unspecified fields take their defaults
    (strength 3, caseFirst "off", alternate "non-ignorable", maxVariable "punct"...)."""
    assert EN == {"locale": "en", "caseLevel": False, "caseFirst": "off", "strength": 3,
                  "numericOrdering": False, "alternate": "non-ignorable",
                  "maxVariable": "punct", "normalization": False, "backwards": False,
                  "version": "57.1"}


def test_pymongo_collation_objects_are_accepted():
    """PyMongo docs, pymongo.collation.Collation: the same options as a document."""
    result = normalize_collation(Collation("en_US", strength=CollationStrength.SECONDARY))
    assert result["locale"] == "en_US" and result["strength"] == 2


def test_simple_locale_means_binary_comparison():
    """Manual, "Collation" > locale: "simple" specifies simple binary comparison, and no
    other field may accompany it (server collator_factory_icu.cpp)."""
    assert normalize_collation({"locale": "simple"}) is None
    assert normalize_collation(None) is None
    assert _errmsg({"locale": "simple", "strength": 2}) == (
        9, 'If locale=simple, no other fields should be present in: { locale: "simple",'
           ' strength: 2 }')


def test_other_locales_are_refused_clearly():
    """Manual, "Collation Locales and Default Parameters": the engine implements only en
    (and simple); other locales fail naming the locale instead of sorting wrongly."""
    code, message = _errmsg({"locale": "fr"})
    assert code == 2
    assert "'fr'" in message and "'en'" in message and "simple" in message


def test_strength_4_and_5_are_refused():
    """Manual, "Collation" > strength: levels 4 (quaternary) and 5 (identical) exist but
    the embedded engine supports 1-3 and says so."""
    for strength in (4, 5):
        code, message = _errmsg({"locale": "en", "strength": strength})
        assert code == 2 and f"strength {strength}" in message
    assert _errmsg({"locale": "en", "strength": 6}) == (
        9, "Field 'strength' must be an integer 1 through 5. Got: 6")


def test_unknown_and_bad_options_are_refused():
    """Manual, "Collation" > Collation Document: only the documented fields, with their
    documented values, are accepted (wording from the server's collator_factory_icu.cpp)."""
    assert _errmsg({"locale": "en", "ignoreCase": True}) == (
        9, 'Collation spec contains unknown field. Collation spec: { locale: "en",'
           ' ignoreCase: true }')
    assert _errmsg({"strength": 2}) == (4, 'Missing expected field "locale"')
    assert _errmsg({"locale": "en", "caseFirst": "title"}) == (
        9, "Field 'caseFirst' must be 'upper', 'lower', or 'off'. Got: title")
    assert _errmsg({"locale": "en", "numericOrdering": 1}) == (
        14, '"numericOrdering" had the wrong type. Expected bool, found int')
    assert _errmsg({"locale": "en", "alternate": "ignore"})[0] == 9
    assert _errmsg({"locale": "en", "version": "99.1"})[0] == 2


def test_option_combinations_without_effect_are_refused():
    """Manual, "Collation" > backwards ("has no effect at strength 1") and caseFirst (needs
    strength 3 or caseLevel): the server rejects such specs with BadValue."""
    code, message = _errmsg({"locale": "en", "strength": 1, "backwards": True})
    assert code == 2 and message.startswith("'backwards' is invalid with 'strength' of 1 in:")
    code, message = _errmsg({"locale": "en", "strength": 2, "caseFirst": "upper"})
    assert code == 2 and message.startswith("'caseFirst' is invalid unless 'caseLevel' is on")
    assert normalize_collation({"locale": "en", "strength": 2, "caseFirst": "upper",
                                "caseLevel": True})["caseFirst"] == "upper"


def test_case_insensitive_index_example():
    """Manual, "Case-Insensitive Indexes" (fruit): {type: "apple"} finds one document
    without collation and all three ("apple", "Apple", "APPLE") at strength 2 or 1."""
    fruit = ["apple", "Apple", "APPLE"]
    assert [t for t in fruit if strings_equal(t, "apple", None)] == ["apple"]
    assert [t for t in fruit if strings_equal(t, "apple", EN_S2)] == fruit
    assert [t for t in fruit if strings_equal(t, "apple", EN_S1)] == fruit


def test_strength_1_ignores_accents_and_case():
    """Manual, "Collation" > strength 1 (myColl café/cafe/cafE): primary level compares
    base characters only, so all three categories match "cafe"."""
    categories = ["café", "cafe", "cafE"]
    assert all(strings_equal(c, "cafe", EN_S1) for c in categories)
    assert [c for c in categories if strings_equal(c, "cafe", EN_S2)] == ["cafe", "cafE"]
    assert [c for c in categories if strings_equal(c, "cafe", EN)] == ["cafe"]


def test_sort_order_en_versus_simple():
    """Manual, "Collation" (sort with and without collation): binary order puts "B"
    before "a"; en puts "a" < "A" < "b" < "B" (lowercase first at the tertiary level)."""
    words = ["b", "B", "a", "A"]
    assert sorted(words) == ["A", "B", "a", "b"]
    assert _sorted(words, EN) == ["a", "A", "b", "B"]
    assert compare("B", "a", None) == -1
    assert compare("a", "B", EN) == -1
    assert compare("a", "A", EN) == -1
    assert compare("a", "A", EN_S2) == 0


def test_accents_sort_after_base_and_before_next_letter():
    """Manual, "Collation" > strength 2: secondary differences (accents) order
    cote < coté < côte < côté, all before "cotf"."""
    words = ["côté", "cotf", "côte", "coté", "cote"]
    assert _sorted(words, EN) == ["cote", "coté", "côte", "côté", "cotf"]


def test_backwards_secondary_french_order():
    """Manual, "Collation" > backwards: true compares accents from the end of the string
    (French dictionary order): cote < côte < coté < côté."""
    fr_like = normalize_collation({"locale": "en", "backwards": True})
    assert _sorted(["cote", "coté", "côte", "côté"], fr_like) == ["cote", "côte", "coté", "côté"]


def test_punctuation_before_digits_before_letters():
    """Manual, "Collation" > alternate ("non-ignorable": whitespace and punctuation are
    base characters): ICU orders spaces < punctuation < symbols < digits < letters."""
    words = ["a", "1", "_", "-", " ", "$", "+"]
    assert _sorted(words, EN) == [" ", "_", "-", "+", "$", "1", "a"]
    assert _sorted(["ab", "a-b", "a b"], EN) == ["a b", "a-b", "ab"]


def test_alternate_shifted_ignores_spaces_and_punctuation():
    """Manual, "Collation" > alternate "shifted" with maxVariable: whitespace and
    punctuation are ignored ("punct"), or only whitespace ("space")."""
    shifted = normalize_collation({"locale": "en", "alternate": "shifted"})
    assert strings_equal("black-bird", "blackbird", shifted)
    assert strings_equal("black bird", "blackbird", shifted)
    space_only = normalize_collation({"locale": "en", "alternate": "shifted",
                                      "maxVariable": "space"})
    assert strings_equal("black bird", "blackbird", space_only)
    assert not strings_equal("black-bird", "blackbird", space_only)


def test_numeric_ordering_example():
    """Manual, "Collation" > numericOrdering example (en_US): "-2.1", "-10", "1", "2",
    "2.1", "2.2", "2.10", "2.20", "10", "20", "20.1"."""
    numeric = normalize_collation({"locale": "en_US", "numericOrdering": True})
    values = ["1", "2", "2.1", "-2.1", "2.2", "2.10", "2.20", "-10", "10", "20", "20.1"]
    assert _sorted(values, numeric) == ["-2.1", "-10", "1", "2", "2.1", "2.2", "2.10",
                                        "2.20", "10", "20", "20.1"]
    assert _sorted(["10", "9"], EN) == ["10", "9"]


def test_case_first_upper():
    """Manual, "Collation" > caseFirst "upper": uppercase sorts before lowercase
    (cafE < cafe < café)."""
    upper = normalize_collation({"locale": "en", "caseFirst": "upper"})
    assert _sorted(["cafe", "café", "cafE"], upper) == ["cafE", "cafe", "café"]
    assert _sorted(["cafe", "café", "cafE"], EN) == ["cafe", "cafE", "café"]


def test_case_level_with_strength_1():
    """Manual, "Collation" > caseLevel: with strength 1, caseLevel true compares base
    characters and case, still ignoring accents."""
    case_level = normalize_collation({"locale": "en", "strength": 1, "caseLevel": True})
    assert strings_equal("café", "cafe", case_level)
    assert not strings_equal("Cafe", "cafe", case_level)


def test_special_letters_expand():
    """Manual, "Collation" (ICU root order): ß sorts as "ss" and æ as "ae" (tertiary
    difference only)."""
    assert strings_equal("straße", "strasse", EN_S2)
    assert compare("strasse", "straße", EN) == -1
    assert strings_equal("Æsop", "aesop", EN_S1)


def test_nested_values_are_converted():
    """Manual, "Collation" > equality on embedded documents and arrays: strings inside
    them compare with the collation; other values pass through."""
    assert collation_key({"a": "A", "l": ["X", 1]}, EN_S2) == collation_key(
        {"a": "a", "l": ["x", 1]}, EN_S2)
    assert collation_key({"a": "A"}, EN) != collation_key({"a": "a"}, EN)
    assert collation_key(5, EN) == 5
    assert collation_key(["a"], None) == ["a"]
    key = collation_key("apple", EN)
    assert isinstance(key, CollationKey) and isinstance(key, tuple)
    assert repr(key).startswith("CollationKey(0x")  # as duplicate-key errors print it
    assert len(key) == 3 and len(collation_key("apple", EN_S1)) == 1


def test_keys_are_cached():
    """Repeated strings are converted once (the key function is cached); the time itself is measured by the
    benchmarks, not asserted here."""
    from labkit import collation as C

    C._string_key.cache_clear()
    for i in range(10_000):
        collation_key(f"Name {i % 500}", EN)
    info = C._string_key.cache_info()
    assert info.misses == 500 and info.hits == 9_500
