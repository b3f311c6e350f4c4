"""Date expression operators (manual "Date Expression Operators", "$dateToString" format specifiers, "$dateAdd",
"$dateDiff", "$dateTrunc"; src/mongo/db/pipeline/expression.cpp, src/mongo/db/query/datetime/date_time_support.cpp;
jstests/aggregation/expressions/{date_expressions_with_timezones,date_to_string,date_from_string,date_to_parts,
date_from_parts,date_add_subtract,date_diff,date_trunc,iso_week}.js).

Dates are naive UTC ``datetime`` values (what pymongo decodes). A timezone is an Olson identifier (``zoneinfo``)
or a UTC offset (``"+05"``, ``"+0530"``, ``"-05:30"``); an unknown one fails with 40485, a non-string one with
40517. Operators that read a date also take an ObjectId (its timestamp) or a Timestamp (its seconds), as the
server does.
"""
from __future__ import annotations

import calendar
import datetime
import re
from typing import Any, Callable

from bson import Int64, ObjectId, Timestamp

from .expr_base import (date_ms, eval_args, fail, int_value, is_date, ms_date, named_args, nullish, num_kind, num_str,
                        string_or_null, tname)

_UTC = datetime.timezone.utc
_TZ_CACHE: dict[str, Any] = {}
_OFFSET_RE = re.compile(r"([+-])(\d{2})(?::?(\d{2}))?\Z")


def timezone(v: Any) -> Any:
    """A ``tzinfo`` for a timezone argument's value (None for UTC)."""
    if nullish(v):
        return None
    if not isinstance(v, str):
        raise fail("timezone must evaluate to a string, found %s" % tname(v), 40517)
    if v in _TZ_CACHE:
        return _TZ_CACHE[v]
    m = _OFFSET_RE.match(v)
    if m:
        sign, hh, mm = m.group(1), int(m.group(2)), int(m.group(3) or 0)
        delta = datetime.timedelta(hours=hh, minutes=mm)
        tz: Any = datetime.timezone(-delta if sign == "-" else delta)
    elif v in ("UTC", "GMT", "Z"):
        tz = _UTC
    else:
        try:
            import zoneinfo
            tz = zoneinfo.ZoneInfo(v)
        except Exception:  # noqa: BLE001 - unknown or malformed identifiers
            raise fail('unrecognized time zone identifier: "%s"' % v, 40485) from None
    _TZ_CACHE[v] = tz
    return tz


def to_local(d: datetime.datetime, tz: Any) -> datetime.datetime:
    """The wall-clock time of UTC date ``d`` in ``tz``."""
    if tz is None or tz is _UTC:
        return d
    return d.replace(tzinfo=_UTC).astimezone(tz).replace(tzinfo=None)


def from_local(local: datetime.datetime, tz: Any) -> datetime.datetime:
    """The UTC date of wall-clock time ``local`` in ``tz``."""
    if tz is None or tz is _UTC:
        return local
    return local.replace(tzinfo=tz).astimezone(_UTC).replace(tzinfo=None)


def _utc_offset_minutes(d: datetime.datetime, tz: Any) -> int:
    if tz is None:
        return 0
    off = d.replace(tzinfo=_UTC).astimezone(tz).utcoffset()
    return int(off.total_seconds() // 60) if off else 0


def as_date(v: Any, op: str) -> datetime.datetime:
    """A date operand: a date, an ObjectId's time or a Timestamp's seconds; others fail (16006)."""
    if is_date(v):
        return v if v.tzinfo is None else v.astimezone(_UTC).replace(tzinfo=None)
    if isinstance(v, ObjectId):
        return v.generation_time.replace(tzinfo=None)
    if isinstance(v, Timestamp):
        return ms_date(v.time * 1000)
    raise fail("can't convert from BSON type %s to Date" % tname(v), 16006)


# ------------------------------------------------------------------------------------------ parts
def iso_parts(local: datetime.datetime) -> tuple[int, int, int]:
    y, w, d = local.isocalendar()
    return y, w, d


_PARTS: dict[str, Callable[[datetime.datetime], int]] = {  # each date-part operator on the local time
    "$year": lambda d: d.year,
    "$month": lambda d: d.month,
    "$dayOfMonth": lambda d: d.day,
    "$hour": lambda d: d.hour,
    "$minute": lambda d: d.minute,
    "$second": lambda d: d.second,
    "$millisecond": lambda d: d.microsecond // 1000,
    "$dayOfYear": lambda d: d.timetuple().tm_yday,
    "$dayOfWeek": lambda d: (d.weekday() + 1) % 7 + 1,  # Sunday 1 .. Saturday 7
    "$week": lambda d: int(d.strftime("%U")),
    "$isoWeek": lambda d: d.isocalendar()[1],
    "$isoWeekYear": lambda d: d.isocalendar()[0],
    "$isoDayOfWeek": lambda d: d.isocalendar()[2],
}


def _part(local: datetime.datetime, op: str) -> int:
    part = _PARTS.get(op)
    if part is None:
        raise fail("unknown date part %s" % op, 2)
    return part(local)


def op_date_part(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$year`` .. ``$millisecond``, ``$dayOfWeek``, ``$week``, ``$isoWeek``...: ``<date>`` or
    ``{date, timezone}``."""
    if isinstance(arg, dict) and not any(str(k).startswith("$") for k in arg):
        for k in arg:
            if k not in ("date", "timezone"):
                raise fail("%s found an unknown argument: %s" % (op, k), 40535)
        if "date" not in arg:
            raise fail("missing 'date' argument to %s, provided: %s" % (op, arg), 40539)
        d = ev.ev(arg["date"], doc)
        tzv = ev.ev(arg["timezone"], doc) if "timezone" in arg else None
        if "timezone" in arg and nullish(tzv):
            return None
    else:
        (d,) = eval_args(ev, op, arg, doc, 1)
        tzv = None
    if nullish(d):
        return None
    tz = timezone(tzv)
    return _part(to_local(as_date(d, op), tz), op)


# ------------------------------------------------------------------------------------------ $dateToString
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


_SPECIFIERS = {  # the numeric format specifiers: the date part each shows, and how
    "Y": ("$year", "%04d"), "m": ("$month", "%02d"), "d": ("$dayOfMonth", "%02d"), "H": ("$hour", "%02d"),
    "M": ("$minute", "%02d"), "S": ("$second", "%02d"), "L": ("$millisecond", "%03d"), "j": ("$dayOfYear", "%03d"),
    "w": ("$dayOfWeek", "%d"), "u": ("$isoDayOfWeek", "%d"), "U": ("$week", "%02d"), "V": ("$isoWeek", "%02d"),
    "G": ("$isoWeekYear", "%04d"),
}


def format_date(d: datetime.datetime, fmt: str, tz: Any) -> str:
    """``$dateToString``'s format specifiers (manual "Format Specifiers")."""
    local = to_local(d, tz)
    out = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(fmt):
            raise fail("Unmatched '%' at end of format string", 18535)
        s = fmt[i + 1]
        i += 2
        if s in _SPECIFIERS:
            part, form = _SPECIFIERS[s]
            out.append(form % _part(local, part))
        elif s == "%":
            out.append("%")
        elif s == "b":
            out.append(_MONTHS[local.month - 1][:3])
        elif s == "B":
            out.append(_MONTHS[local.month - 1])
        elif s in ("z", "Z"):
            off = _utc_offset_minutes(d, tz)
            if s == "Z":
                out.append("%+d" % off)
            else:
                sign = "-" if off < 0 else "+"
                out.append("%s%02d%02d" % (sign, abs(off) // 60, abs(off) % 60))
        else:
            raise fail("Invalid format character '%%%s' in format string" % s, 18536)
    return "".join(out)


def op_date_to_string(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$dateToString: {date, format, timezone, onNull}``."""
    named_args(arg, ("date", "format", "timezone", "onNull"),
               ("$dateToString only supports an object as its argument", 18629),
               ("Unrecognized argument to $dateToString: %(key)s", 18534),
               {"date": ("Missing 'date' parameter to $dateToString", 18628)})
    fmt = None
    if "format" in arg:
        fmt = string_or_null(ev.ev(arg["format"], doc), lambda v: "$dateToString requires that 'format' be a string, "
                             "found: %s with value %r" % (tname(v), v), 18533)
        if fmt is None:
            return None
    tzv = ev.ev(arg["timezone"], doc) if "timezone" in arg else None
    if "timezone" in arg and nullish(tzv):
        return None
    tz = timezone(tzv)
    d = ev.ev(arg["date"], doc)
    if nullish(d):
        return ev.ev(arg["onNull"], doc) if "onNull" in arg else None
    if fmt is None:
        fmt = "%Y-%m-%dT%H:%M:%S.%LZ" if "timezone" not in arg else "%Y-%m-%dT%H:%M:%S.%L"
    return format_date(as_date(d, op), fmt, tz)


# ------------------------------------------------------------------------------------------ $dateFromString
_ISO_RE = re.compile(
    r"\s*(?P<Y>[+-]?\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})"
    r"(?:[T ](?P<H>\d{1,2})(?::(?P<M>\d{2})(?::(?P<S>\d{2})(?:\.(?P<L>\d+))?)?)?)?"
    r"\s*(?P<tz>Z|UTC|GMT|[+-]\d{2}(?::?\d{2})?|[A-Za-z]+/[A-Za-z_]+(?:/[A-Za-z_]+)?)?\s*\Z")
_SPEC_RE = {"Y": r"(?P<Y>\d{4})", "m": r"(?P<m>\d{1,2})", "d": r"(?P<d>\d{1,2})", "H": r"(?P<H>\d{1,2})",
            "M": r"(?P<M>\d{1,2})", "S": r"(?P<S>\d{1,2})", "L": r"(?P<L>\d{1,3})", "j": r"(?P<j>\d{1,3})",
            "z": r"(?P<tz>[+-]\d{2}:?\d{2})", "Z": r"(?P<tzmin>[+-]\d+)", "G": r"(?P<G>\d{4})",
            "V": r"(?P<V>\d{1,2})", "u": r"(?P<u>\d)", "b": r"(?P<b>[A-Za-z]{3})", "B": r"(?P<B>[A-Za-z]+)",
            "%": "%"}


def _format_regex(fmt: str) -> re.Pattern:
    parts = []
    i = 0
    while i < len(fmt):
        c = fmt[i]
        if c != "%":
            parts.append(re.escape(c))
            i += 1
            continue
        if i + 1 >= len(fmt):
            raise fail("Unmatched '%' at end of format string", 18535)
        s = fmt[i + 1]
        if s not in _SPEC_RE:
            raise fail("Invalid format character '%%%s' in format string" % s, 18536)
        parts.append(_SPEC_RE[s])
        i += 2
    return re.compile("".join(parts) + r"\Z")


def parse_date_string(s: str, fmt: str | None, tz: Any) -> datetime.datetime:
    """The UTC date of ``s`` (ISO 8601 forms, or ``fmt``'s specifiers), local to ``tz`` unless it has an
    offset; raises ValueError when it cannot be parsed."""
    m = (_format_regex(fmt) if fmt is not None else _ISO_RE).match(s)
    if not m:
        raise ValueError("no match")
    g = {k: v for k, v in m.groupdict().items() if v is not None}
    if "G" in g or "V" in g:
        local = datetime.datetime.fromisocalendar(int(g.get("G", 1970)), int(g.get("V", 1)), int(g.get("u", 1)))
    elif "j" in g:
        local = datetime.datetime(int(g.get("Y", 1970)), 1, 1) + datetime.timedelta(days=int(g["j"]) - 1)
    else:
        month = int(g["m"]) if "m" in g else None
        for key in ("b", "B"):
            if key in g:
                names = [n[:3].lower() for n in _MONTHS]
                if g[key][:3].lower() not in names:
                    raise ValueError("month name")
                month = names.index(g[key][:3].lower()) + 1
        local = datetime.datetime(int(g.get("Y", 1970)), month or 1, int(g.get("d", 1)))
    local = local.replace(hour=int(g.get("H", 0)), minute=int(g.get("M", 0)), second=int(g.get("S", 0)),
                          microsecond=int((g.get("L", "0") + "000")[:3]) * 1000)
    zone = g.get("tz")
    if "tzmin" in g:
        return local - datetime.timedelta(minutes=int(g["tzmin"]))
    if zone:
        if tz is not None:
            raise fail("you cannot pass in a date/time string with GMT offset together with a timezone argument",
                       40554)
        return from_local(local, timezone(zone if zone != "Z" else "UTC"))
    return from_local(local, tz)


def op_date_from_string(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$dateFromString: {dateString, format, timezone, onError, onNull}``."""
    named_args(arg, ("dateString", "format", "timezone", "onError", "onNull"),
               ("$dateFromString only supports an object as an argument, found: %(type)s", 40540),
               ("Unrecognized argument to $dateFromString: %(key)s", 40541),
               {"dateString": ("Missing 'dateString' parameter to $dateFromString", 40542)})
    s = ev.ev(arg["dateString"], doc)
    fmt = ev.ev(arg["format"], doc) if "format" in arg else None
    if "format" in arg and nullish(fmt):
        return None
    if fmt is not None and not isinstance(fmt, str):
        raise fail("$dateFromString requires that 'format' be a string, found: %s with value %r" % (tname(fmt), fmt),
                   40684)
    tzv = ev.ev(arg["timezone"], doc) if "timezone" in arg else None
    if "timezone" in arg and nullish(tzv):
        return None
    tz = timezone(tzv)
    if nullish(s):
        return ev.ev(arg["onNull"], doc) if "onNull" in arg else None
    if not isinstance(s, str):
        if "onError" in arg:
            return ev.ev(arg["onError"], doc)
        raise fail("$dateFromString requires that 'dateString' be a string, found: %s with value %r"
                   % (tname(s), s), 241)
    try:
        return parse_date_string(s, fmt, tz)
    except ValueError:
        if "onError" in arg:
            return ev.ev(arg["onError"], doc)
        raise fail("Error parsing date string '%s'" % s, 241) from None


# ------------------------------------------------------------------------------------------ parts <-> dates
def op_date_to_parts(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    named_args(arg, ("date", "timezone", "iso8601"), ("$dateToParts only supports an object as its argument", 40524),
               ("Unrecognized argument to $dateToParts: %(key)s", 40520),
               {"date": ("Missing 'date' parameter to $dateToParts", 40522)})
    d = ev.ev(arg["date"], doc)
    tzv = ev.ev(arg["timezone"], doc) if "timezone" in arg else None
    iso = ev.ev(arg["iso8601"], doc) if "iso8601" in arg else False
    if nullish(d) or ("timezone" in arg and nullish(tzv)) or ("iso8601" in arg and nullish(iso)):
        return None
    if not isinstance(iso, bool):
        raise fail("iso8601 must evaluate to a bool, found %s" % tname(iso), 40521)
    local = to_local(as_date(d, op), timezone(tzv))
    tail = {"hour": local.hour, "minute": local.minute, "second": local.second,
            "millisecond": local.microsecond // 1000}
    if iso:
        y, w, wd = local.isocalendar()
        return {"isoWeekYear": y, "isoWeek": w, "isoDayOfWeek": wd, **tail}
    return {"year": local.year, "month": local.month, "day": local.day, **tail}


def op_date_from_parts(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$dateFromParts``: calendar or ISO week parts; out-of-range parts carry into the next unit."""
    cal = ("year", "month", "day")
    iso = ("isoWeekYear", "isoWeek", "isoDayOfWeek")
    time_parts = ("hour", "minute", "second", "millisecond")
    named_args(arg, cal + iso + time_parts + ("timezone",),
               ("$dateFromParts only supports an object as its argument", 40519),
               ("Unrecognized argument to $dateFromParts: %(key)s", 40518))
    has_cal = any(k in arg for k in cal)
    has_iso = any(k in arg for k in iso)
    if has_cal and has_iso:
        raise fail("$dateFromParts does not allow mixing natural dates with ISO dates", 40489)
    if "year" not in arg and "isoWeekYear" not in arg:
        raise fail("$dateFromParts requires either 'year' or 'isoWeekYear' to be present", 40516)
    defaults = {"month": 1, "day": 1, "isoWeek": 1, "isoDayOfWeek": 1, "hour": 0, "minute": 0, "second": 0,
                "millisecond": 0}
    vals = {}
    for k in (iso if has_iso else cal) + time_parts:
        if k not in arg:
            vals[k] = defaults.get(k, 0)
            continue
        v = ev.ev(arg[k], doc)
        if nullish(v):
            return None
        i = int_value(v) if num_kind(v) >= 0 else None
        if i is None:
            raise fail("'%s' must evaluate to an integer, found %s with value %s"
                       % (k, tname(v), num_str(v) if num_kind(v) >= 0 else repr(v)), 40515)
        lo, hi = (1, 9999) if k in ("year", "isoWeekYear") else (-32768, 32767)
        if not lo <= i <= hi:
            raise fail("'%s' must evaluate to an integer in the range %d to %d, found %d" % (k, lo, hi, i), 31034)
        vals[k] = i
    tzv = ev.ev(arg["timezone"], doc) if "timezone" in arg else None
    if "timezone" in arg and nullish(tzv):
        return None
    tz = timezone(tzv)
    if has_iso or "isoWeekYear" in arg:
        base = datetime.datetime.fromisocalendar(vals["isoWeekYear"], 1, 1)
        local = base + datetime.timedelta(weeks=vals["isoWeek"] - 1, days=vals["isoDayOfWeek"] - 1)
    else:
        months = vals["year"] * 12 + (vals["month"] - 1)
        y, mo = divmod(months, 12)
        local = datetime.datetime(y, mo + 1, 1) + datetime.timedelta(days=vals["day"] - 1)
    local += datetime.timedelta(hours=vals["hour"], minutes=vals["minute"], seconds=vals["second"],
                                milliseconds=vals["millisecond"])
    return from_local(local, tz)


# ------------------------------------------------------------------------------------------ add / diff / trunc
_UNITS = ("year", "quarter", "month", "week", "day", "hour", "minute", "second", "millisecond")
_FIXED_MS = {"week": 7 * 86400000, "day": 86400000, "hour": 3600000, "minute": 60000, "second": 1000,
             "millisecond": 1}
_DAYS = {"sunday": 6, "sun": 6, "monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "wednesday": 2, "wed": 2,
         "thursday": 3, "thu": 3, "friday": 4, "fri": 4, "saturday": 5, "sat": 5}


def _unit(v: Any, op: str) -> str:
    if not isinstance(v, str):
        raise fail("%s requires 'unit' to be a string, but got %s" % (op, tname(v)), 5439013)
    if v not in _UNITS:
        raise fail("%s parameter 'unit' value cannot be recognized as a time unit: %s" % (op, v), 9)
    return v


def _add_months(local: datetime.datetime, months: int) -> datetime.datetime:
    total = local.year * 12 + (local.month - 1) + months
    y, m = divmod(total, 12)
    if not 1 <= y <= 9999:
        raise fail("Date overflow", 5166406)
    day = min(local.day, calendar.monthrange(y, m + 1)[1])
    return local.replace(year=y, month=m + 1, day=day)


def add_units(d: datetime.datetime, unit: str, amount: int, tz: Any) -> datetime.datetime:
    """``d`` plus ``amount`` units: calendar units (day and longer) on the wall clock of ``tz``, shorter ones as
    fixed durations; month ends clamp (Jan 31 + 1 month = Feb 28/29)."""
    try:
        if unit in ("hour", "minute", "second", "millisecond"):
            return d + datetime.timedelta(milliseconds=amount * _FIXED_MS[unit])
        local = to_local(d, tz)
        if unit in ("year", "quarter", "month"):
            local = _add_months(local, amount * {"year": 12, "quarter": 3, "month": 1}[unit])
        else:
            local = local + datetime.timedelta(days=amount * (7 if unit == "week" else 1))
        return from_local(local, tz)
    except OverflowError:
        raise fail("Date overflow", 5166406) from None


def op_date_add(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$dateAdd`` / ``$dateSubtract: {startDate, unit, amount, timezone}``."""
    allowed = ("startDate", "unit", "amount", "timezone")
    named_args(arg, allowed, (op + " expects an object as its argument", 5166400),
               ("Unrecognized argument to %s: %%(key)s. Expected arguments are %s" % (op, ", ".join(allowed)),
                5166401), {k: ("Missing '%%(key)s' parameter to %s" % op, 5166402) for k in allowed[:3]})
    start = ev.ev(arg["startDate"], doc)
    unit = ev.ev(arg["unit"], doc)
    amount = ev.ev(arg["amount"], doc)
    tzv = ev.ev(arg["timezone"], doc) if "timezone" in arg else None
    if nullish(start) or nullish(unit) or nullish(amount) or ("timezone" in arg and nullish(tzv)):
        return None
    if not (is_date(start) or isinstance(start, (ObjectId, Timestamp))):
        raise fail("%s requires startDate to be convertible to a date" % op, 5166403)
    u = _unit(unit, op)
    n = int_value(amount) if num_kind(amount) >= 0 else None
    if n is None:
        raise fail("%s expects integer amount of time units" % op, 5166405)
    tz = timezone(tzv)
    return add_units(as_date(start, op), u, -n if op == "$dateSubtract" else n, tz)


def _week_start(v: Any, op: str) -> int:
    if not isinstance(v, str):
        raise fail("%s requires 'startOfWeek' to be a string, but got %s" % (op, tname(v)), 5439015)
    if v.lower() not in _DAYS:
        raise fail("%s parameter 'startOfWeek' value cannot be recognized as a day of a week: %s" % (op, v), 5439016)
    return _DAYS[v.lower()]


def _days(local: datetime.datetime) -> int:
    return (local.date() - datetime.date(1970, 1, 1)).days


def diff_units(a: datetime.datetime, b: datetime.datetime, unit: str, tz: Any, week_start: int) -> int:
    """Unit boundaries crossed from ``a`` to ``b`` (negative when ``b`` is earlier)."""
    la, lb = to_local(a, tz), to_local(b, tz)
    if unit == "year":
        return lb.year - la.year
    if unit == "quarter":
        return (lb.year * 4 + (lb.month - 1) // 3) - (la.year * 4 + (la.month - 1) // 3)
    if unit == "month":
        return (lb.year * 12 + lb.month) - (la.year * 12 + la.month)
    if unit == "week":
        da, db = _days(la), _days(lb)
        # 1970-01-01 was a Thursday (weekday 3); count weeks from the chosen start day
        shift = (3 - week_start) % 7
        return (db + shift) // 7 - (da + shift) // 7
    if unit == "day":
        return _days(lb) - _days(la)
    ma, mb = date_ms(la), date_ms(lb)
    size = _FIXED_MS[unit]
    return mb // size - ma // size


def op_date_diff(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$dateDiff: {startDate, endDate, unit, timezone, startOfWeek}`` (a long)."""
    missing = "Missing '%(key)s' parameter to $dateDiff"
    named_args(arg, ("startDate", "endDate", "unit", "timezone", "startOfWeek"),
               ("$dateDiff only supports an object as its argument", 5166301),
               ("Unrecognized argument to $dateDiff: %(key)s", 5166302),
               {"startDate": (missing, 5166303), "endDate": (missing, 5166304), "unit": (missing, 5166305)})
    a = ev.ev(arg["startDate"], doc)
    b = ev.ev(arg["endDate"], doc)
    unit = ev.ev(arg["unit"], doc)
    tzv = ev.ev(arg["timezone"], doc) if "timezone" in arg else None
    sow = ev.ev(arg["startOfWeek"], doc) if "startOfWeek" in arg else "sunday"
    if any(nullish(x) for x in (a, b, unit)) or ("timezone" in arg and nullish(tzv)):
        return None
    for name, v in (("startDate", a), ("endDate", b)):
        if not (is_date(v) or isinstance(v, (ObjectId, Timestamp))):
            raise fail("$dateDiff requires '%s' to be a date, but got %s" % (name, tname(v)), 5166307)
    u = _unit(unit, op)
    ws = 6
    if u == "week":
        if nullish(sow):
            return None
        ws = _week_start(sow, op)
    return Int64(diff_units(as_date(a, op), as_date(b, op), u, timezone(tzv), ws))


_REF = datetime.datetime(2000, 1, 1)


def trunc_date(d: datetime.datetime, unit: str, bin_size: int, tz: Any, week_start: int) -> datetime.datetime:
    """``$dateTrunc``: the start of ``d``'s bin of ``bin_size`` units, bins counted on the wall clock of ``tz``
    from 2000-01-01 (weeks: from the first ``week_start`` day on or after it)."""
    local = to_local(d, tz)
    if unit in ("year", "quarter", "month"):
        per = {"year": 12, "quarter": 3, "month": 1}[unit] * bin_size
        months = (local.year - 2000) * 12 + (local.month - 1)
        start = months - months % per
        y, m = divmod(start, 12)
        out = datetime.datetime(2000 + y, m + 1, 1)
    elif unit == "week":
        ref = _REF + datetime.timedelta(days=(week_start - _REF.weekday()) % 7)
        days = (local.date() - ref.date()).days
        out = ref + datetime.timedelta(days=days - days % (7 * bin_size))
    elif unit == "day":
        days = (local.date() - _REF.date()).days
        out = _REF + datetime.timedelta(days=days - days % bin_size)
    else:
        size = _FIXED_MS[unit] * bin_size
        ms = date_ms(local) - date_ms(_REF)
        out = _REF + datetime.timedelta(milliseconds=ms - ms % size)
    return from_local(out, tz)


def op_date_trunc(ev: Any, op: str, arg: Any, doc: Any) -> Any:
    """``$dateTrunc: {date, unit, binSize, timezone, startOfWeek}``."""
    named_args(arg, ("date", "unit", "binSize", "timezone", "startOfWeek"),
               ("$dateTrunc only supports an object as its argument", 5439007),
               ("Unrecognized argument to $dateTrunc: %(key)s. Expected arguments are date, unit, and optionally, "
                "binSize, timezone, startOfWeek", 5439008),
               {"date": ("Missing 'date' parameter to $dateTrunc", 5439009),
                "unit": ("Missing 'unit' parameter to $dateTrunc", 5439010)})
    d = ev.ev(arg["date"], doc)
    unit = ev.ev(arg["unit"], doc)
    size = ev.ev(arg["binSize"], doc) if "binSize" in arg else 1
    tzv = ev.ev(arg["timezone"], doc) if "timezone" in arg else None
    sow = ev.ev(arg["startOfWeek"], doc) if "startOfWeek" in arg else "sunday"
    if any(nullish(x) for x in (d, unit, size)) or ("timezone" in arg and nullish(tzv)):
        return None
    if not (is_date(d) or isinstance(d, (ObjectId, Timestamp))):
        raise fail("$dateTrunc requires 'date' to be a date, but got %s" % tname(d), 5439012)
    u = _unit(unit, op)
    n = int_value(size) if num_kind(size) >= 0 else None
    if n is None or n <= 0:
        raise fail("$dateTrunc requires 'binSize' to be a positive 64-bit integer, but got value '%s' of type %s"
                   % (num_str(size) if num_kind(size) >= 0 else size, tname(size)), 5439017)
    ws = 6
    if u == "week":
        if nullish(sow):
            return None
        ws = _week_start(sow, op)
    return trunc_date(as_date(d, op), u, n, timezone(tzv), ws)


OPS = {op: op_date_part for op in ("$year", "$month", "$dayOfMonth", "$hour", "$minute", "$second",
                                   "$millisecond", "$dayOfYear", "$dayOfWeek", "$week", "$isoWeek",
                                   "$isoWeekYear", "$isoDayOfWeek")}
OPS.update({
    "$dateToString": op_date_to_string,
    "$dateFromString": op_date_from_string,
    "$dateToParts": op_date_to_parts,
    "$dateFromParts": op_date_from_parts,
    "$dateAdd": op_date_add,
    "$dateSubtract": op_date_add,
    "$dateDiff": op_date_diff,
    "$dateTrunc": op_date_trunc,
})
