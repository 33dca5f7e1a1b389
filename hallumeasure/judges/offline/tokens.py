"""Words, light stems and content words: the units every offline signal counts."""

from __future__ import annotations

import re
from functools import lru_cache

from hallumeasure.judges.offline.lexicon import IRREGULAR, NUMBER_WORDS, STOPWORDS

#: A word (letters, inner apostrophes and hyphens) or a number with thousands separators / decimals.
#: A decimal split by a space after its point ("98. 7 per cent") is one number (values.SPLIT_DECIMAL_RE).
WORD_RE = re.compile(
    r"[A-Za-z][A-Za-z'\-]*[A-Za-z]|[A-Za-z]"
    r"|(?<![\d.,])\d{1,3}\.\s\d+(?=\s*(?:%|(?i:per\s?cent|percentage|million|billion|thousand|bn)\b))"
    r"|\d[\d,]*(?:\.\d+)?"
)


def words(text: str) -> list[str]:
    """Surface words and numbers of ``text``, in order."""
    return WORD_RE.findall(text)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light, lower-cased stem: matches 'approved' with 'approves', 'repairs' with 'repair', 'won' with 'win'.

    Irregular forms go through a small table first; the suffix rules are deliberately few, so
    that two different words are rarely merged (a missed match costs less than a false one).
    """
    w = word.lower()
    if w.endswith("'s"):
        w = w[:-2]
    elif w.endswith("'"):
        w = w[:-1]
    if w in IRREGULAR:
        return IRREGULAR[w]
    for suffix, keep in (
        ("ies", "y"),
        ("ied", "y"),
        ("sses", "ss"),
        ("ches", "ch"),
        ("shes", "sh"),
        ("xes", "x"),
        ("eed", "ee"),
        ("ing", ""),
        ("ed", ""),
        ("s", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not (suffix == "s" and w.endswith(("ss", "us", "is"))):
            w = w[: len(w) - len(suffix)] + keep
            break
    # "planned" -> "plann" -> "plan": undo a doubled final consonant left by the suffix.
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    # "create", "created", "creates" all end as "creat".
    if len(w) >= 4 and w.endswith("e"):
        w = w[:-1]
    return w


def is_content(word: str) -> bool:
    """True for words that carry meaning on their own (not stopwords, not numbers in digits or words:
    "nine" and "9" are compared as values, not as words)."""
    return word.lower() not in STOPWORDS and not word[0].isdigit() and word.lower() not in NUMBER_WORDS


def content_stems(tokens: list[str]) -> list[str]:
    """Stems of the content words among ``tokens``, in order (repeats kept)."""
    return [stem(t) for t in tokens if is_content(t)]


def key(word: str) -> str:
    """The form two words must share to count as the same word in alignment (numbers: digits only)."""
    if word[0].isdigit():
        return word.replace(",", "").replace(" ", "")
    value = NUMBER_WORDS.get(word.lower())
    if value is not None:
        return f"{value:g}"  # "five" and "5" align
    return stem(word)


@lru_cache(maxsize=131072)
def info(word: str) -> tuple[str, str, bool, str]:
    """(lower case, stem, is content, alignment key) of one word, computed once per distinct word."""
    return word.lower(), stem(word), is_content(word), key(word)


@lru_cache(maxsize=4096)
def word_stems(text: str) -> frozenset[str]:
    """The stems of every word of ``text``, read once per text: a source sentence is read for every claim judged
    against it."""
    return frozenset(stem(w) for w in words(text))


@lru_cache(maxsize=64)
def source_stems(sentences: tuple[str, ...]) -> frozenset[str]:
    """The stems of every word of a whole source, read once per source."""
    return frozenset().union(*map(word_stems, sentences))


@lru_cache(maxsize=4096)
def content_stem_set(text: str) -> frozenset[str]:
    """The stems of the content words of ``text``, read once per text: a claim's and its aligned sentence's are
    compared by several rules."""
    return frozenset(content_stems(words(text)))


#: Words a name's short form leaves out ("Bank of England" is "BoE", "the UN").
_NAME_FILLERS = frozenset({"of", "the", "and", "for", "de", "la", "&"})
_LETTERS = re.compile(r"[A-Za-z]+")


def short_form(short: str, full: str) -> bool:
    """Whether the name ``short`` may be a short form of the name ``full``: each of its words abbreviates a word
    of ``full``, in order, by the same first letter and letters taken from it in order ("West Brom" of "West
    Bromwich Albion", "Man Utd" of "Manchester United", "Barca" of "Barcelona"), or it is the initials of
    ``full`` ("UN" of "United Nations"). Two different names of one shape ("Anna" and "Maria") are not."""
    mine = _LETTERS.findall(short)
    theirs = [w for w in _LETTERS.findall(full) if w.lower() not in _NAME_FILLERS]
    if not mine or not theirs or short.strip().lower() == full.strip().lower():
        return False
    if len(mine) == 1 and len(mine[0]) >= 2 and mine[0].isupper() and mine[0] == "".join(w[0] for w in theirs).upper():
        return True
    at = 0
    for word in mine:
        while at < len(theirs) and not _abbreviates(word, theirs[at]):
            at += 1
        if at == len(theirs):
            return False
        at += 1
    return True


def _abbreviates(word: str, whole: str) -> bool:
    """Whether ``word`` is ``whole`` or shortened from it: the same first letter, its letters in ``whole`` in order."""
    a, b = word.lower(), whole.lower()
    if a[0] != b[0] or len(a) > len(b):
        return False
    rest = iter(b)
    return all(letter in rest for letter in a)
