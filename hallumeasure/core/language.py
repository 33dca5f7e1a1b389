"""The language of a text, from a small model shipped inside its package (py3langid: no download, numpy only).

The keyless judges (offline, nli, offline+nli) read English words, numbers and names; on other languages their
signals mislead them ("4,2 Millionen" read as "4"), so they never decide there (judges/offline/judge.py).
Detection is cheap but unreliable on a few words: a text counts as another language only on a clear answer
(``MIN_PROBABILITY`` over at least ``MIN_LETTERS`` letters), or when most of its letters are of a script that
English does not use (CJK, Cyrillic, Arabic...), which needs no model. A text that is plainly English by
its common words needs no model either (``plainly_english``): that is most of what the judges see.

The whole text is read, block by block (``blocks``): a source that opens in English and goes on in German
is outside English too. A text too short to tell (``unknown``: fewer than ``ENGLISH_MIN_WORDS`` words, none
of them an English function word and not all of them copied from a text known to be English) has no
language a keyless judge may rely on either: "Umsatz: 412 Millionen Euro." is never decided.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

#: Languages the keyless judges are built for (ISO 639-1).
KEYLESS_LANGUAGES = frozenset({"en"})
MIN_PROBABILITY = 0.9
MIN_LETTERS = 20
#: The size of the blocks a text is read in: each block that is not plainly English is asked of the model.
PREFIX = 400
#: Words common in English prose and absent from the other languages' (German "was" and "will", Dutch "is",
#: Polish "to", French "on" are left out). A text where they make up ``ENGLISH_SHARE`` of at least
#: ``ENGLISH_MIN_WORDS`` words is English without asking the model: most texts the keyless judges see are,
#: and asking the model costs a tenth of the offline judge's time on news.
ENGLISH_WORDS = frozenset(
    "the and of that with for this which from have has were their been would said his who its they after but "
    "are had it not more than when into about there what should could because".split()
)
ENGLISH_SHARE = 0.1
ENGLISH_MIN_WORDS = 15
_WORD = re.compile(r"[^\W\d_]+")
#: English function words a short English text hardly goes without ("Revenue was 412 million euros.").
SHORT_ENGLISH_WORDS = ENGLISH_WORDS | frozenset(
    "a an in on at to is was be by or no we you i he she her our your my me him them us do does did yes can will "
    "may one two only also all some any each both over under up out per".split()
)

NAMES = {
    "en": "English",
    "de": "German",
    "fr": "French",
    "es": "Spanish",
    "it": "Italian",
    "pt": "Portuguese",
    "nl": "Dutch",
    "ru": "Russian",
    "zh": "Chinese",
    "ja": "Japanese",
    "ko": "Korean",
    "ar": "Arabic",
    "pl": "Polish",
    "tr": "Turkish",
    "sv": "Swedish",
    "uk": "Ukrainian",
    "hi": "Hindi",
}


class Language(NamedTuple):
    code: str
    probability: float

    @property
    def name(self) -> str:
        return NAMES.get(self.code, self.code)


@lru_cache(maxsize=1)
def _identifier():  # type: ignore[no-untyped-def]
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def _script_language(text: str) -> str | None:
    """A language told by its script alone, when most letters are of one English does not use."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return None
    counts = {"ja": 0, "zh": 0, "ko": 0, "ru": 0, "ar": 0, "hi": 0, "other": 0}
    for c in letters:
        o = ord(c)
        if o < 0x250:
            continue  # Latin
        if 0x3040 <= o <= 0x30FF:
            counts["ja"] += 1
        elif 0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF:
            counts["zh"] += 1
        elif 0xAC00 <= o <= 0xD7AF or 0x1100 <= o <= 0x11FF:
            counts["ko"] += 1
        elif 0x0400 <= o <= 0x04FF:
            counts["ru"] += 1
        elif 0x0600 <= o <= 0x06FF:
            counts["ar"] += 1
        elif 0x0900 <= o <= 0x097F:
            counts["hi"] += 1
        else:
            counts["other"] += 1
    non_latin = sum(counts.values())
    if non_latin * 2 < len(letters):
        return None
    if counts["ja"]:  # kana mark Japanese, whatever share of the letters are kanji
        return "ja"
    return max(counts, key=lambda k: counts[k])


def blocks(text: str, size: int = PREFIX) -> list[str]:
    """``text`` cut into blocks of about ``size`` characters at white space; a short last block joins the one
    before it (too few words to tell alone)."""
    out: list[str] = []
    start = 0
    while start < len(text):
        end = start + size
        if end < len(text):
            space = text.rfind(" ", start + size // 2, end)
            end = space if space > start else end
        out.append(text[start:end])
        start = end
    if len(out) > 1 and len(out[-1]) < size // 2:
        last = out.pop()
        out[-1] += last
    return out


@lru_cache(maxsize=4096)
def detect(text: str) -> Language | None:
    """The language of ``text`` when it is clear, else None (too short, or no clear answer); read over the
    first ``PREFIX`` characters (``outside`` reads every block of a text)."""
    head = text[:PREFIX]
    script = _script_language(head)
    if script is not None:
        return Language(script, 1.0)
    if sum(c.isalpha() for c in head) < MIN_LETTERS:
        return None
    code, probability = _identifier().classify(head)
    return Language(code, float(probability)) if probability >= MIN_PROBABILITY else None


def plainly_english(text: str) -> bool:
    """Whether the start of ``text`` is English by its common words alone (see ``ENGLISH_WORDS``)."""
    words = _WORD.findall(text[:PREFIX].lower())
    return len(words) >= ENGLISH_MIN_WORDS and sum(w in ENGLISH_WORDS for w in words) >= ENGLISH_SHARE * len(words)


@lru_cache(maxsize=1024)
def outside(text: str, supported: frozenset[str] = KEYLESS_LANGUAGES) -> Language | None:
    """The language of a block of ``text`` that is clearly one outside ``supported``; None otherwise.

    Every block is read, so a text that opens in English and goes on in German is outside English.
    """
    for block in blocks(text):
        if "en" in supported and plainly_english(block):
            continue
        found = detect(block)
        if found is not None and found.code not in supported:
            return found
    return None


def unknown(text: str, known: str = "") -> bool:
    """Whether ``text`` is too short to be told English: fewer than ``ENGLISH_MIN_WORDS`` words, none of them an
    English function word (``SHORT_ENGLISH_WORDS``), and not every one copied from ``known`` (a text known to be
    English: the source a short answer quotes). A text with no words at all ("1998.") is not unknown."""
    words = _WORD.findall(text.lower())
    if not words or len(words) >= ENGLISH_MIN_WORDS or not SHORT_ENGLISH_WORDS.isdisjoint(words):
        return False
    if known:
        theirs = set(_WORD.findall(known.lower()))
        if all(w in theirs for w in words):
            return False
    return True
