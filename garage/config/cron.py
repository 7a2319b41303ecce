"""Cron expressions as Dagster's scheduler reads them, checked without Dagster.

The schedule's cron becomes a Dagster ``ScheduleDefinition`` when the definitions load, and an
expression Dagster refuses there (``99 * * * *``) would stop the whole code location loading.
Dagster parses cron with a vendored ``croniter`` that the library cannot import without
importing Dagster, so the same rules are written out here: five fields (or a macro), each value
within its field's range, and no 30th or 31st of February. ``tests/unit/test_config.py`` holds
this module to Dagster's own ``is_valid_cron_string`` over a table of expressions; the
definitions still ask Dagster itself when they load, for anything written here too leniently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MACROS = ("@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually")
MONTHS = {m: n for n, m in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
WEEKDAYS = {d: n for n, d in enumerate("sun mon tue wed thu fri sat".split())}
_STEP = re.compile(r"^(?P<base>[^/]+)(?:/(?P<step>\d+))?$")
_NTH_WEEKDAY = re.compile(r"^(?P<day>[a-z0-9]+)#(?P<nth>\d+)$")  # 1#2: the month's 2nd Monday
_LAST_WEEKDAY = re.compile(r"^l(?P<day>[a-z0-9]+)$")  # L5: the month's last Friday


class CronError(ValueError):
    """Why an expression is not a cron Dagster can schedule, naming the field at fault."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int] = field(default_factory=dict)

    def value(self, text: str) -> int:
        number = self.names[text] if text in self.names else _number(text)
        if number is None or not self.low <= number <= self.high:
            raise CronError(f"{self.name} {text!r} is not within {self.low}-{self.high}")
        return number


MINUTE = _Field("minute", 0, 59)
HOUR = _Field("hour", 0, 23)
DAY = _Field("day of month", 1, 31)
MONTH = _Field("month", 1, 12, MONTHS)
WEEKDAY = _Field("day of week", 0, 7, WEEKDAYS)


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def check_cron(expression: str) -> str:
    """The expression, stripped, when Dagster can schedule it; else ``CronError``."""
    stripped = expression.strip()
    if stripped.startswith("@"):
        if stripped.lower() not in MACROS:
            raise CronError(f"{stripped!r} is not one of the macros {', '.join(MACROS)}")
        return stripped
    fields = stripped.lower().split()
    if len(fields) != 5:
        raise CronError(
            f"{len(fields)} fields, not the five of minute, hour, day of month, month and day "
            "of week"
        )
    minute, hour, day, month, weekday = fields
    _plain(MINUTE, minute)
    _plain(HOUR, hour)
    _days_of_month(day)
    _plain(MONTH, month)
    _days_of_week(weekday)
    # Dagster refuses a day that never comes: the 30th or 31st of February alone.
    if _single(MONTH, month) == 2 and _single(DAY, day) in (30, 31):
        raise CronError(f"February has no day {day}: the schedule would never run")
    return stripped


def _single(spec: _Field, text: str) -> int | None:
    """The one value a field names, when it names one: ``2``, ``feb``, or a step from it that
    never reaches another (``2/11``); a range or a list is not looked into."""
    base, _, step = text.partition("/")
    value = spec.names[base] if base in spec.names else _number(base)
    if value is None or (step and value + int(step) <= spec.high):
        return None
    return value


def _items(spec: _Field, text: str) -> list[str]:
    items = text.split(",")
    if any(not item for item in items):
        raise CronError(f"{spec.name} {text!r} has an empty item in its list")
    return items


def _plain(spec: _Field, text: str) -> None:
    """A list of values, ranges (which may wrap past the field's end, as ``22-2`` hours do),
    steps and ``*``."""
    for item in _items(spec, text):
        _range(spec, item)


def _range(spec: _Field, item: str) -> None:
    match = _STEP.match(item)
    if match is None:
        raise CronError(f"{spec.name} {item!r} is not a value, a range or a step")
    base, step = match["base"], match["step"]
    if step is not None and int(step) == 0:
        raise CronError(f"{spec.name} {item!r} steps by 0")
    if base != "*":
        low, dash, high = base.partition("-")
        spec.value(low)
        if dash:
            spec.value(high)


def _days_of_month(text: str) -> None:
    """Days of month also take ``?`` (any day) alone and ``L`` (the last day), alone or as
    the end of a range."""
    if text == "?":
        return
    for item in _items(DAY, text):
        if item == "l":
            continue
        match = _STEP.match(item)
        if match is not None and match["base"].endswith("-l"):
            item = match["base"][:-2] + "-31" + (f"/{match['step']}" if match["step"] else "")
        _range(DAY, item)


def _days_of_week(text: str) -> None:
    """Days of week also take ``?`` alone, ``day#n`` (the n-th such day of the month, n at
    most 5) and ``Lday`` (the month's last such day); a list mixing those with plain days is
    one Dagster refuses."""
    if text == "?":
        return
    items = _items(WEEKDAY, text)
    special = [item for item in items if "#" in item or _LAST_WEEKDAY.match(item)]
    if special and len(special) != len(items):
        raise CronError(f"day of week {text!r} mixes '#' or 'L' days with plain ones")
    for item in items:
        if nth := _NTH_WEEKDAY.match(item):
            WEEKDAY.value(nth["day"])
            if not 1 <= int(nth["nth"]) <= 5:
                raise CronError(f"day of week {item!r}: a month has a 1st to a 5th such day")
        elif last := _LAST_WEEKDAY.match(item):
            WEEKDAY.value(last["day"])
        else:
            _range(WEEKDAY, item)
