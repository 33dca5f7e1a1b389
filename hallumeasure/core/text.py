"""Text helpers: delimiting untrusted text for prompts, sentence splitting with spans, locating claims."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from difflib import SequenceMatcher
from functools import lru_cache
from typing import TYPE_CHECKING

from hallumeasure.core.spans import aligned_words, loose_match
from hallumeasure.core.types import Span

if TYPE_CHECKING:
    import pysbd

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
    "passage",
)
# Characters that print as nothing. A reader (or a model) may not see them, so a delimiter with one
# slipped between its letters must still count as a delimiter.
_INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff"
)
_GAP = rf"[\s{_INVISIBLE}]*"
# "<" and "/" with the characters that look like them (fullwidth, small form, angle brackets, slashes).
_OPEN = "<\uff1c\ufe64\u2329\u3008\u27e8"
_SLASH = "/\uff0f\u2215\u2044"


_INVISIBLE_CHARS = frozenset(
    chr(c) for lo, hi in re.findall(r"(.)(?:-(.))?", _INVISIBLE) for c in range(ord(lo), ord(hi or lo) + 1)
)


def visible(text: str) -> bool:
    """Whether ``text`` shows anything: a character other than whitespace, a format character (Unicode
    category Cf: zero-width spaces and joiners, direction marks) or another that prints as nothing.
    A response of only such characters makes no claim."""
    return any(
        not char.isspace() and char not in _INVISIBLE_CHARS and unicodedata.category(char) != "Cf" for char in text
    )


def _tag_name(tag: str) -> str:
    return f"[{_INVISIBLE}]*".join(re.escape(char) for char in tag)


_TAG_RE = re.compile(
    rf"[{_OPEN}]{_GAP}(?:[{_SLASH}]{_GAP})?(?:"
    + "|".join(_tag_name(t) for t in sorted(RESERVED_TAGS, key=len, reverse=True))
    + r")(?![\w-])",
    re.IGNORECASE,
)
# Control characters other than tab/newline/carriage return confuse tokenizers and terminals.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Lone surrogates (from JSON escapes such as "\\ud800") cannot be encoded as UTF-8: SQLite and HTTP
# clients would fail on them far from the row that brought them in.
_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Normalise to NFC, drop control characters (NUL included) and replace lone surrogates by U+FFFD.

    Newlines and tabs are kept.
    """
    text = _SURROGATE_RE.sub("\ufffd", text)
    return _CONTROL_RE.sub("", unicodedata.normalize("NFC", text))


def encodable(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD, so that it can be written as UTF-8."""
    return _SURROGATE_RE.sub("\ufffd", text)


def neutralise(text: str) -> str:
    """Make delimiter look-alikes inside untrusted text harmless: ``</context>`` becomes ``‹/context>``.

    Case, spaces, invisible characters and look-alike brackets or slashes do not hide a delimiter;
    only its opening bracket is replaced, so the text reads the same.
    """
    return _TAG_RE.sub(lambda m: "\u2039" + m.group(0)[1:], text)


def has_delimiter(text: str) -> bool:
    """Whether ``text`` holds anything that could pass for one of the prompt delimiters."""
    return _TAG_RE.search(text) is not None


def fence(tag: str, text: str, **attrs: str) -> str:
    """Wrap untrusted ``text`` in ``<tag ...>`` ... ``</tag>`` after neutralising look-alikes."""
    if tag not in RESERVED_TAGS:
        raise ValueError(f"unknown prompt tag {tag!r}")
    attr_text = "".join(f' {k}="{neutralise(v).replace(chr(34), "")}"' for k, v in attrs.items())
    return f"<{tag}{attr_text}>\n{neutralise(text)}\n</{tag}>"


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False, char_span=True)


# Text with none of these is split by a plain rule; anything that may hide an abbreviation goes to pysbd.
_TRICKY_RE = re.compile(r"\b[A-Z][a-z]{0,3}\.\s|\b[A-Za-z]\.[A-Za-z]\.|\.\s+[a-z0-9]|\.\.\.|\n")
_PLAIN_SPLIT_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def split_sentences(text: str) -> list[tuple[str, Span]]:
    """Sentences of ``text`` with their character spans (whitespace trimmed).

    pysbd (rule-based, offline) handles abbreviations, initials and the like; plain text without
    any of those takes a fast path that splits after ``.``, ``!`` or ``?`` followed by a space.
    Full-width sentence ends (``。！？``, Chinese and Japanese) split too, with or without a space.
    A piece that shows nothing (zero-width or format characters only: see ``visible``) is no sentence.
    """
    if _FULL_WIDTH_END_RE.search(text):
        sentences = [
            (piece, Span(start=span.start + start, end=span.start + end))
            for sentence, span in _split_sentences(text)
            for piece, start, end in _full_width_pieces(sentence)
        ]
    else:
        sentences = _split_sentences(text)
    return [(sentence, span) for sentence, span in sentences if visible(sentence)]


_FULL_WIDTH_END_RE = re.compile(r"[。！？]+")


def _full_width_pieces(sentence: str) -> list[tuple[str, int, int]]:
    """Pieces of ``sentence`` cut after each run of full-width sentence ends, with their offsets."""
    out, cursor = [], 0
    for match in [*_FULL_WIDTH_END_RE.finditer(sentence), None]:
        end = match.end() if match else len(sentence)
        piece = sentence[cursor:end]
        stripped = piece.strip()
        if stripped:
            start = cursor + piece.index(stripped)
            out.append((stripped, start, start + len(stripped)))
        cursor = end
    return out


def _split_sentences(text: str) -> list[tuple[str, Span]]:
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


def pack_sentences(n: int, fits: Callable[[int, int], bool], overlap: int) -> list[tuple[int, int]]:
    """``(first, last)`` of each chunk of ``n`` consecutive sentences (or pieces of one): a chunk grows while
    ``fits(first, last)`` (it holds at least one), and the next starts ``overlap`` sentences before its end,
    always after its start."""
    chunks: list[tuple[int, int]] = []
    first = 0
    while first < n:
        last = first
        while last + 1 < n and fits(first, last + 1):
            last += 1
        chunks.append((first, last))
        if last + 1 >= n:
            break
        first = max(first + 1, last + 1 - overlap)
    return chunks


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
    # Case, spacing and quote marks aside (offsets from a regex on the text itself: ``str.lower`` may
    # change a string's length, so its offsets would not point into ``text``).
    loose = loose_match(fragment, text)
    if loose:
        return loose
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
        # No sentence holds half of it: a claim joined from several sentences, say. The densest run of its words.
        return aligned_words(fragment, text)
    return (best[1],)


def quote(text: str, limit: int = 160) -> str:
    """``text`` on one line in double quotes, cut at ``limit`` characters with an ellipsis."""
    text = " ".join(text.split())
    return f'"{text[:limit]}{"..." if len(text) > limit else ""}"'


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#])")


def md_escape(value: object) -> str:
    """Untrusted text made inert for a Markdown table cell or paragraph (one line)."""
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    return " ".join(text.split())


def count_tokens(text: str) -> int:
    """A deterministic stand-in tokenizer: words and punctuation marks."""
    return len(re.findall(r"\w+|[^\w\s]", text))
