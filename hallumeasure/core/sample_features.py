"""What an audit needs of a sample's text, worked out once where the sample is stored.

An audit pairs two runs' samples by their task (a key of their context and question) and watches the
responses' style (words, the share of them found in the source, a hash of the response). Worked out from
the texts of a million samples these take about 20 s in Python, so the store keeps them beside each sample
(``runs/store.py``: the ``sample_features`` table) and a reader of a run takes them from there; runs written
before they were stored have them worked out on reading, by the same functions.
"""

from __future__ import annotations

import hashlib
import math
import re
import zlib

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def task_key(context: object, question: object) -> str:
    """A key shared by samples that pose the same task (same context and question, spacing aside)."""
    context = context if isinstance(context, str) else ""
    question = question if isinstance(question, str) else ""  # None or NaN from a DataFrame
    text = _SPACE.sub(" ", context.strip()) + "\x00" + _SPACE.sub(" ", question.strip())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _words(text: object) -> list[str]:
    return _WORD.findall(text.lower()) if isinstance(text, str) else []


def style(response: object, context: object) -> tuple[int, float, int]:
    """(words, overlap, response hash) of one response: its words, the share of them found in its context (NaN
    for a response without words), and a CRC-32 of it with its spacing normalised (equal for equal texts)."""
    said = _words(response)
    source = set(_words(context))
    overlap = sum(w in source for w in said) / len(said) if said else math.nan
    text = " ".join(response.split()) if isinstance(response, str) else ""
    return len(said), overlap, zlib.crc32(text.encode("utf-8"))
