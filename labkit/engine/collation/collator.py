"""ICU-like English collation for the embedded engine, in pure Python (no ICU).

MongoDB compares strings with ICU when a collation is given; the embedded engine
supports the locales ``"en"``/``"en_US"`` (CLDR root order, which English uses
unchanged) and ``"simple"`` (binary comparison, the default). ``normalize_collation``
validates a collation document the way the server does and fills in the defaults the
server reports; ``collation_key`` turns a string into a ``CollationKey`` (a tuple of
per-level weight tuples) that compares like ICU's sort key, and converts strings nested
in documents and arrays so that equality works on whole values.

Supported options: ``strength`` 1-3, ``caseLevel``, ``caseFirst``
(``"off"``/``"upper"``/``"lower"``), ``numericOrdering``, ``alternate``
(``"non-ignorable"``/``"shifted"``) with ``maxVariable`` (``"punct"``/``"space"``),
``backwards`` (French secondary order) and ``normalization``. Strengths 4 and 5 and other
locales raise OperationFailure rather than being silently approximated.

Approximations (deliberate; the lab's examples stay within them):

* Primary order is DUCET's group order - whitespace < punctuation < symbols < currency <
  digits < letters - with the printable ASCII characters in CLDR root order
  (``_ - , ; : ! ? . ' " ( ) [ ] { } @ * / \\ & # % ` ^ + < = > | ~ $``). Other
  punctuation/symbols sort by code point inside their group.
* Letters: Latin letters sort by their base letter (NFD, accents stripped); a few letters
  without decomposition are mapped by hand (``ß``->ss, ``æ``->ae, ``œ``->oe, ``ø``/``đ``/``ł``
  /``ħ`` -> o/d/l/h with a secondary difference). Other Latin letters sort after ``z``;
  Greek, then Cyrillic, then every other script follow, by code point.
* Secondary weights: a fixed table orders the common accents as DUCET does (acute <
  grave < breve < circumflex < caron < ring < diaeresis < double acute < tilde < dot...);
  other combining marks by code point.
* Tertiary: lowercase < uppercase (``caseFirst: "upper"`` swaps them); compatibility
  variants (``ﬁ``, fullwidth forms, superscripts...) sort after the plain form.
* ``numericOrdering`` compares runs of ASCII/Unicode decimal digits by value (leading
  zeros ignored at the primary level).
* ``normalization`` has no effect: strings are always canonically decomposed (NFD), which
  is what ICU's normalization check would do for the text the lab uses.
"""
from __future__ import annotations

import functools
import unicodedata
from collections.abc import Mapping
from typing import Any

from pymongo.errors import OperationFailure

__all__ = [
    "SUPPORTED_LOCALES",
    "ICU_VERSION",
    "CollationKey",
    "normalize_collation",
    "collation_key",
    "strings_equal",
    "compare",
]

SUPPORTED_LOCALES = ("en", "en_US")
ICU_VERSION = "57.1"
"""The ``version`` MongoDB 8.0 reports in normalised collation documents."""

# Server error codes (src/mongo/base/error_codes.yml).
_BAD_VALUE = 2
_NO_SUCH_KEY = 4
_FAILED_TO_PARSE = 9
_TYPE_MISMATCH = 14
_CODE_NAMES = {_BAD_VALUE: "BadValue", _NO_SUCH_KEY: "NoSuchKey", _FAILED_TO_PARSE: "FailedToParse",
               _TYPE_MISMATCH: "TypeMismatch"}

_DEFAULTS = {
    "caseLevel": False,
    "caseFirst": "off",
    "strength": 3,
    "numericOrdering": False,
    "alternate": "non-ignorable",
    "maxVariable": "punct",
    "normalization": False,
    "backwards": False,
}
_BOOL_FIELDS = ("caseLevel", "numericOrdering", "normalization", "backwards")
# collator_factory_icu.cpp: the accepted values and the server's wording for bad ones.
_ENUM_FIELDS = {
    "caseFirst": (("upper", "lower", "off"), "'upper', 'lower', or 'off'"),
    "alternate": (("non-ignorable", "shifted"), "'non-ignorable' or 'shifted'"),
    "maxVariable": (("punct", "space"), "'punct' or 'space'"),
}


class CollationKey(tuple):
    """A collation sort key: a tuple of level tuples, compared level by level.

    It is a tuple (so ``<``/``==``/``hash`` work) but a distinct type, so an engine can
    tell a converted string from a BSON array. Its repr mimics how the server prints
    collated index keys in duplicate-key errors (``CollationKey(0x...)``); the bytes are
    this module's own encoding, not ICU's."""

    __slots__ = ()

    def hex(self) -> str:
        """A deterministic hex rendering of the key (levels separated by ``01``)."""
        parts = []
        for level in self:
            parts.append("".join(_weight_hex(w) for w in level))
        return "01".join(parts)

    def __repr__(self) -> str:
        return f"CollationKey(0x{self.hex()})"


def _weight_hex(weight: Any) -> str:
    if isinstance(weight, tuple):
        return "".join(_weight_hex(w) for w in weight)
    return format(int(weight) + 2, "02x")


def _render(value: Any) -> str:
    """Render a value the way the server prints BSON in error messages."""
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k}: {_render(v)}" for k, v in value.items()) + " }"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _bson_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if -(2 ** 31) <= value < 2 ** 31 else "long"
    return {float: "double", str: "string", type(None): "null", list: "array",
            dict: "object"}.get(type(value), type(value).__name__)


def _fail(code: int, message: str) -> OperationFailure:
    return OperationFailure(message, code, {"ok": 0.0, "errmsg": message, "code": code,
                                            "codeName": _CODE_NAMES.get(code, "")})


def normalize_collation(collation: Any) -> dict | None:
    """Validate a collation (dict or ``pymongo.collation.Collation``) and return the full
    document the server would report, or ``None`` for the simple (binary) collation.

    Errors follow ``collator_factory_icu.cpp`` (codes and wording); locales other than
    en/en_US/simple and strengths 4-5 are refused with an explicit engine message."""
    if collation is None:
        return None
    document = getattr(collation, "document", collation)
    if not isinstance(document, Mapping):
        raise _fail(_TYPE_MISMATCH, "\"collation\" had the wrong type. Expected object, found "
                                    + _bson_type(document))
    if not document:
        return None  # an empty collation means "not specified": the command's default applies
    spec = _render(document)
    if "locale" not in document:
        raise _fail(_NO_SUCH_KEY, 'Missing expected field "locale"')
    locale = document["locale"]
    if not isinstance(locale, str):
        raise _fail(_TYPE_MISMATCH, '"locale" had the wrong type. Expected string, found '
                                    + _bson_type(locale))
    if locale == "simple":
        if len(document) > 1:
            raise _fail(_FAILED_TO_PARSE,
                        f"If locale=simple, no other fields should be present in: {spec}")
        return None
    if locale == "":
        raise _fail(_BAD_VALUE, f"Field 'locale' cannot be the empty string in: {spec}")
    if locale not in SUPPORTED_LOCALES:
        raise _fail(_BAD_VALUE, f"Collation locale '{locale}' is not supported by the embedded"
                                " engine, which implements 'en' (also 'en_US') and 'simple'"
                                f" only (requested collation: {spec}).")
    result: dict = {"locale": locale}
    for field, default in _DEFAULTS.items():
        value = document.get(field, default)
        if field in _BOOL_FIELDS and not isinstance(value, bool):
            raise _fail(_TYPE_MISMATCH, f'"{field}" had the wrong type. Expected bool, found '
                                        + _bson_type(value))
        if field in _ENUM_FIELDS:
            allowed, wording = _ENUM_FIELDS[field]
            if not isinstance(value, str):
                raise _fail(_TYPE_MISMATCH, f'"{field}" had the wrong type. Expected string,'
                                            f" found {_bson_type(value)}")
            if value not in allowed:
                raise _fail(_FAILED_TO_PARSE, f"Field '{field}' must be {wording}. Got: {value}")
        if field == "strength":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise _fail(_TYPE_MISMATCH, 'Expected field "strength" to have numeric type, but'
                                            f" found {_bson_type(value)}")
            if value != int(value):
                raise _fail(_BAD_VALUE, 'Expected field "strength" to have a value exactly'
                                        f" representable as a 64-bit integer, but found strength: {value}")
            value = int(value)
            if not 1 <= value <= 5:
                raise _fail(_FAILED_TO_PARSE,
                            f"Field 'strength' must be an integer 1 through 5. Got: {value}")
            if value > 3:
                level = {4: "quaternary", 5: "identical"}[value]
                raise _fail(_BAD_VALUE, f"Collation strength {value} ({level}) is not supported"
                                        " by the embedded engine; use strength 1, 2 or 3.")
        result[field] = value
    unknown = [f for f in document if f not in result and f != "version"]
    if unknown:
        raise _fail(_FAILED_TO_PARSE,
                    f"Collation spec contains unknown field. Collation spec: {spec}")
    version = document.get("version", ICU_VERSION)
    if version != ICU_VERSION:
        raise _fail(_BAD_VALUE, f"Requested collation version {version} but the only available"
                                f" collator version was {ICU_VERSION}. Requested collation"
                                f" spec: {spec}")
    result["version"] = ICU_VERSION
    # validateCollationSpec: option combinations that have no effect are rejected.
    if result["backwards"] and result["strength"] == 1:
        raise _fail(_BAD_VALUE, f"'backwards' is invalid with 'strength' of 1 in: {_render(result)}")
    if result["caseFirst"] != "off" and not result["caseLevel"] and result["strength"] < 3:
        raise _fail(_BAD_VALUE, "'caseFirst' is invalid unless 'caseLevel' is on or 'strength'"
                                f" is greater than 2 in: {_render(result)}")
    return result


# ---------------------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------------------

_G_SPACE, _G_PUNCT, _G_SYMBOL, _G_CURRENCY, _G_DIGIT = 0, 1, 2, 3, 4
_G_LATIN, _G_LATIN_OTHER, _G_GREEK, _G_CYRILLIC, _G_OTHER = 5, 6, 7, 8, 9

_ASCII_PUNCT = "_-,;:!?.'\"()[]{}@*/\\&#%"
_ASCII_SYMBOLS = "`^+<=>|~"
_ASCII_ORDER = {c: i for i, c in enumerate(_ASCII_PUNCT + _ASCII_SYMBOLS + "$")}

# Combining marks in DUCET secondary order (common accents only).
_ACCENT_ORDER = [0x0301, 0x0300, 0x0306, 0x0302, 0x030C, 0x030A, 0x0308, 0x030B, 0x0303,
                 0x0307, 0x0338, 0x0327, 0x0328, 0x0304]
_ACCENT_WEIGHT = {cp: i + 1 for i, cp in enumerate(_ACCENT_ORDER)}
_STROKE = 0x0335  # secondary used for ø, đ, ł, ħ

# Letters with no canonical decomposition that ICU sorts with a base letter.
_SPECIAL_LETTERS = {
    "ß": ("ss", None, 2), "ẞ": ("ss", None, 3), "æ": ("ae", None, 2), "Æ": ("ae", None, 3),
    "œ": ("oe", None, 2), "Œ": ("oe", None, 3), "ø": ("o", _STROKE, 0), "Ø": ("o", _STROKE, 1),
    "đ": ("d", _STROKE, 0), "Đ": ("d", _STROKE, 1), "ł": ("l", _STROKE, 0),
    "Ł": ("l", _STROKE, 1), "ħ": ("h", _STROKE, 0), "Ħ": ("h", _STROKE, 1),
    "ı": ("i", 0x0131, 0),
}


def _secondary_weight(mark: str) -> int:
    cp = ord(mark)
    return _ACCENT_WEIGHT.get(cp, 100 + cp)


def _is_upper(char: str) -> bool:
    return unicodedata.category(char) in ("Lu", "Lt")


def _letter_primary(char: str) -> tuple[int, int]:
    lower = char.lower()
    base = lower if len(lower) == 1 else char
    if "a" <= base <= "z":
        return (_G_LATIN, ord(base))
    name = unicodedata.name(char, "")
    if name.startswith("LATIN"):
        return (_G_LATIN_OTHER, ord(base))
    if name.startswith("GREEK"):
        return (_G_GREEK, ord(base))
    if name.startswith("CYRILLIC"):
        return (_G_CYRILLIC, ord(base))
    return (_G_OTHER, ord(base))


def _elements(text: str, numeric: bool) -> list[list]:
    """Collation elements ``[primary, [secondary...], case, tertiary, variable_kind]``.

    ``variable_kind`` is "space", "punct" or None (for alternate=shifted)."""
    elements: list[list] = []
    chars = unicodedata.normalize("NFD", text)
    i = 0
    while i < len(chars):
        char = chars[i]
        i += 1
        category = unicodedata.category(char)
        if category in ("Mn", "Mc", "Me"):
            if elements:
                elements[-1][1].append(_secondary_weight(char))
            continue
        if char in _SPECIAL_LETTERS:
            letters, mark, tertiary = _SPECIAL_LETTERS[char]
            for n, letter in enumerate(letters):
                marks = [_secondary_weight(chr(mark))] if mark and n == 0 else []
                elements.append([_letter_primary(letter), marks, tertiary & 1, tertiary, None])
            continue
        compat = unicodedata.normalize("NFKD", char)
        if compat != char:
            # Compatibility variant: sorts like its expansion, after it at the tertiary level.
            sub = _elements(compat, numeric)
            for element in sub:
                element[3] = element[3] + 4
            elements.extend(sub)
            continue
        if category.startswith("L"):
            upper = _is_upper(char)
            elements.append([_letter_primary(char), [], int(upper), int(upper), None])
        elif category == "Nd":
            if numeric:
                value = unicodedata.digit(char)
                while i < len(chars) and unicodedata.category(chars[i]) == "Nd":
                    value = value * 10 + unicodedata.digit(chars[i])
                    i += 1
                elements.append([(_G_DIGIT, len(str(value)), value), [], 0, 0, None])
            else:
                elements.append([(_G_DIGIT, unicodedata.digit(char)), [], 0, 0, None])
        elif char.isspace() or category == "Zs":
            elements.append([(_G_SPACE, ord(char)), [], 0, 0, "space"])
        elif category in ("Cc", "Cf", "Cs", "Co", "Cn"):
            continue  # completely ignorable
        elif char in _ASCII_ORDER:
            group = (_G_PUNCT if char in _ASCII_PUNCT else
                     _G_SYMBOL if char in _ASCII_SYMBOLS else _G_CURRENCY)
            kind = "punct" if group == _G_PUNCT else None
            elements.append([(group, _ASCII_ORDER[char]), [], 0, 0, kind])
        elif category.startswith("P"):
            elements.append([(_G_PUNCT, 1000 + ord(char)), [], 0, 0, "punct"])
        elif category == "Sc":
            elements.append([(_G_CURRENCY, ord(char)), [], 0, 0, None])
        elif category.startswith("S"):
            elements.append([(_G_SYMBOL, 1000 + ord(char)), [], 0, 0, None])
        elif category.startswith("N"):
            elements.append([(_G_DIGIT, 1000 + ord(char)), [], 0, 0, None])
        else:
            elements.append([(_G_OTHER, ord(char)), [], 0, 0, None])
    return elements


def _options_tuple(collation: Mapping[str, Any]) -> tuple:
    return (collation.get("strength", 3), collation.get("caseLevel", False),
            collation.get("caseFirst", "off"), collation.get("numericOrdering", False),
            collation.get("alternate", "non-ignorable"), collation.get("maxVariable", "punct"),
            collation.get("backwards", False))


@functools.lru_cache(maxsize=65536)
def _string_key(text: str, options: tuple) -> CollationKey:
    strength, case_level, case_first, numeric, alternate, max_variable, backwards = options
    elements = _elements(text, numeric)
    if alternate == "shifted":
        variable = ("space",) if max_variable == "space" else ("space", "punct")
        elements = [e for e in elements if e[4] not in variable]
    primary = tuple(e[0] for e in elements)
    levels: list[tuple] = [primary]
    if strength >= 2:
        secondary: list[int] = []
        for element in elements:
            secondary.append(0)
            secondary.extend(element[1])
        levels.append(tuple(reversed(secondary)) if backwards else tuple(secondary))
    upper_first = case_first == "upper"
    if case_level:
        levels.append(tuple((1 - e[2]) if upper_first else e[2] for e in elements))
    if strength >= 3:
        tertiary = []
        for element in elements:
            weight = element[3]
            if upper_first and weight in (0, 1, 4, 5):
                weight ^= 1
            tertiary.append(weight)
        levels.append(tuple(tertiary))
    return CollationKey(levels)


def collation_key(value: Any, collation: Mapping[str, Any] | None) -> Any:
    """Return ``value`` with every string replaced by its ``CollationKey``.

    ``collation`` is a normalised collation (see ``normalize_collation``); ``None`` means
    the simple collation and returns ``value`` unchanged. Strings inside documents and
    arrays are converted (field names are not); other values pass through unchanged."""
    if collation is None:
        return value
    options = _options_tuple(collation)
    if isinstance(value, str):
        return _string_key(value, options)
    if not isinstance(value, (Mapping, list, tuple)):
        return value
    # Iterative conversion of nested containers (no recursion limit on deep documents).
    root: list = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        source, parent, slot = stack.pop()
        if isinstance(source, str):
            parent[slot] = _string_key(source, options)
        elif isinstance(source, Mapping):
            target: Any = dict.fromkeys(source)
            parent[slot] = target
            for key, item in source.items():
                stack.append((item, target, key))
        elif isinstance(source, (list, tuple)) and not isinstance(source, CollationKey):
            target = [None] * len(source)
            parent[slot] = target
            for index, item in enumerate(source):
                stack.append((item, target, index))
        else:
            parent[slot] = source
    return root[0]


def strings_equal(a: str, b: str, collation: Mapping[str, Any] | None) -> bool:
    """True if ``a`` and ``b`` are equal under ``collation`` (binary when ``None``)."""
    return collation_key(a, collation) == collation_key(b, collation)


def compare(a: str, b: str, collation: Mapping[str, Any] | None) -> int:
    """Compare two strings under ``collation``: -1, 0 or 1.

    With ``None`` (simple collation) strings compare by code point, which is the UTF-8
    byte order MongoDB uses."""
    key_a, key_b = collation_key(a, collation), collation_key(b, collation)
    return (key_a > key_b) - (key_a < key_b)
