"""JSON that a tool returned (or a call's arguments) read as plain facts a judge can quote and compare.

``{"name": "Arlo stadium", "seats": 52000, "opens": "2026-11-24"}`` reads
``name: Arlo stadium; seats: 52,000; opens: November 24, 2026.``: one sentence per object, so that a claim's
words and values meet in one source sentence (the offline judge compares a claim with one sentence at a time);
keys with ``_`` or camelCase read as words; a nested object is its own sentence, its keys led by the path
(``venue address: city: Lyon.``); a list of values is joined by commas; a list of objects gives one sentence
per item (``flights 1: ...``). Numbers of five digits or more get thousands separators, ISO dates and times
read as "November 24, 2026" and "November 24, 2026, 19:30" (forms the judges read as dates), true and false
as yes and no. The raw JSON is kept beside the facts (``Passage.raw``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

_MONTHS = "January February March April May June July August September October November December".split()
_ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_END_RE = re.compile(r"[.!?]$")


def json_facts(text: str) -> str | None:
    """``text`` read as facts when it is a JSON object or list (see the module), else None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    if not isinstance(value, (Mapping, list)):
        return None
    return "\n".join(_sentences(value, "")) or None


def _sentences(value: Any, path: str) -> list[str]:
    """One sentence per object (or list of values) in ``value``, each led by its path."""
    if isinstance(value, Mapping):
        flat = {key: v for key, v in value.items() if _flat(v)}
        out = [_sentence(path, [f"{_words(key)}: {_flat_value(v)}" for key, v in flat.items()])] if flat else []
        for key, v in value.items():
            if key not in flat:
                out += _sentences(v, f"{path} {_words(key)}".strip())
        return out
    if isinstance(value, list) and not _flat(value):
        out = []
        for n, item in enumerate(value, start=1):
            out += _sentences(item, f"{path} {n}".strip())
        return out
    return [_sentence(path, [_flat_value(value)])]


def _flat(value: Any) -> bool:
    """A value or a list of values (no object, no list inside)."""
    items = value if isinstance(value, list) else [value]
    return not any(isinstance(v, (Mapping, list)) for v in items)


def _flat_value(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_value(v) for v in value) or "none"
    return _value(value)


def _sentence(path: str, parts: list[str]) -> str:
    text = "; ".join(p for p in parts if p)
    if path:
        text = f"{path}: {text}"
    return text if _END_RE.search(text) else f"{text}."


def _words(key: Any) -> str:
    """A key as words: ``opening_date`` and ``openingDate`` read "opening date"."""
    return _CAMEL_RE.sub(" ", str(key)).replace("_", " ").replace("-", " ").strip().lower() or str(key)


def _value(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        return f"{value:,}" if abs(value) >= 10_000 else repr(value)
    text = " ".join(str(value).split())
    return _date(text) or text


def _date(text: str) -> str | None:
    """An ISO date or date-time as "November 24, 2026" (", 19:30" when it has a time), else None."""
    if not _ISO_RE.match(text):
        return None
    try:
        if len(text) == 10:
            day: date = date.fromisoformat(text)
            return f"{_MONTHS[day.month - 1]} {day.day}, {day.year}"
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return f"{_MONTHS[moment.month - 1]} {moment.day}, {moment.year}, {moment.hour:02d}:{moment.minute:02d}"
