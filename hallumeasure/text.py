"""Text helpers: delimiting untrusted text for prompts, sentence splitting with spans, locating claims."""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher
from functools import lru_cache

from hallumeasure.types import Span

#: Tags that delimit untrusted text in every prompt. Look-alikes inside the text are neutralised.
RESERVED_TAGS = (
    "context",
    "question",
    "response",
    "claim",
    "claims",
    "issues",
    "issue",
    "hypothesis",
    "focus",
    "flag",
)
_TAG_RE = re.compile(r"<\s*(/?)\s*(" + "|".join(RESERVED_TAGS) + r")\b", re.IGNORECASE)
# Control characters other than tab/newline/carriage return confuse tokenizers and terminals.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: str) -> str:
    """Normalise to NFC and drop control characters (NUL included); keeps newlines and tabs."""
    return _CONTROL_RE.sub("", unicodedata.normalize("NFC", text))


def neutralise(text: str) -> str:
    """Make delimiter look-alikes inside untrusted text harmless: ``</context>`` becomes ``‹/context>``."""
    return _TAG_RE.sub(lambda m: "\u2039" + m.group(1) + m.group(2), text)


def fence(tag: str, text: str, **attrs: str) -> str:
    """Wrap untrusted ``text`` in ``<tag ...>`` ... ``</tag>`` after neutralising look-alikes."""
    if tag not in RESERVED_TAGS:
        raise ValueError(f"unknown prompt tag {tag!r}")
    attr_text = "".join(f' {k}="{neutralise(v).replace(chr(34), "")}"' for k, v in attrs.items())
    return f"<{tag}{attr_text}>\n{neutralise(text)}\n</{tag}>"


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=True)


# Text with none of these is split by a plain rule; anything that may hide an abbreviation goes to pysbd.
_TRICKY_RE = re.compile(r"\b[A-Z][a-z]{0,3}\.\s|\b[A-Za-z]\.[A-Za-z]\.|\.\s+[a-z0-9]|\.\.\.|\n")
_PLAIN_SPLIT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def split_sentences(text: str) -> list[tuple[str, Span]]:
    """Sentences of ``text`` with their character spans (whitespace trimmed).

    pysbd (rule-based, offline) handles abbreviations, initials and the like; plain text without
    any of those takes a fast path that splits after ``.``, ``!`` or ``?`` followed by a space.
    """
    out: list[tuple[str, Span]] = []
    if not text.strip():
        return out
    if not _TRICKY_RE.search(text):
        cursor = 0
        for match in [*_PLAIN_SPLIT_RE.finditer(text), None]:
            end = match.start() if match else len(text)
            if match:
                end = match.end() - len(match.group(0)) + len(match.group(0).rstrip())
            piece = text[cursor:end]
            stripped = piece.strip()
            if stripped:
                start = cursor + piece.index(stripped)
                out.append((stripped, Span(start=start, end=start + len(stripped))))
            cursor = match.end() if match else len(text)
        return out
    # pysbd's char spans can drift on repeated sentences; re-locate each sentence from a cursor.
    cursor = 0
    for piece in _segmenter().segment(text):
        sentence = piece.sent.strip()
        if not sentence:
            continue
        start = text.find(sentence, cursor)
        if start < 0:
            start = text.find(sentence)
        if start < 0:
            continue
        end = start + len(sentence)
        out.append((sentence, Span(start=start, end=end)))
        cursor = end
    return out


_WORD_RE = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD_RE.findall(text)]


def locate(fragment: str, text: str, sentences: list[tuple[str, Span]] | None = None) -> tuple[Span, ...]:
    """Where ``fragment`` comes from in ``text``: an exact match, else the best-overlapping sentence."""
    fragment = fragment.strip()
    if not fragment:
        return ()
    start = text.find(fragment)
    if start >= 0:
        return (Span(start=start, end=start + len(fragment)),)
    lowered = text.lower().find(fragment.lower())
    if lowered >= 0:
        return (Span(start=lowered, end=lowered + len(fragment)),)
    sentences = sentences if sentences is not None else split_sentences(text)
    target = set(words(fragment))
    if not target:
        return ()
    best: tuple[float, Span] | None = None
    for sentence, span in sentences:
        overlap = len(target & set(words(sentence))) / len(target)
        ratio = SequenceMatcher(None, fragment.lower(), sentence.lower()).ratio()
        score = max(overlap, ratio)
        if best is None or score > best[0]:
            best = (score, span)
    if best is None or best[0] < 0.5:
        return ()
    return (best[1],)
