"""Offline claim extraction: sentences, then safe clause splits, then a simple pronoun fix.

Rules only, no model. A sentence is split at clause boundaries that rarely join one fact
(``; ``, ``, and ``, ``, but ``, ``, while ``, and ``and`` before a second verb of the same
subject); a claim that starts with a personal pronoun gets the last named subject instead.
Questions, greetings and instructions are kept whole so the judge can mark them unevaluatable.
"""

from __future__ import annotations

import re
from typing import Any

from hallumeasure.core.text import split_sentences
from hallumeasure.core.types import Claim, Sample, Span
from hallumeasure.judges.offline.lexicon import GREETINGS, IMPERATIVE_STARTS, STOPWORDS
from hallumeasure.judges.protocols import Extraction

_CLAUSE_RE = re.compile(r";\s+|,\s+(?:and|but|while|whereas)\s+(?=[A-Za-z])")
_AND_VERB_RE = re.compile(
    r"\s+and\s+(?=(?:[a-z]+ed|[a-z]+s|is|was|were|are|has|had|have|will|said|won|lost|"
    r"made|took|gave|became|began|left|met|sold|bought|built|led|ran|saw|told|went)\b)"
)
_SUBJECT_END_RE = re.compile(
    r"\b(?:is|are|was|were|has|have|had|will|would|can|could|may|might|said|says|"
    r"[a-z]{3,}ed|[a-z]{3,}s)\b"
)
_LEAD_PRONOUN_RE = re.compile(r"^(He|She|It|They|His|Her|Its|Their)\b")
_NAME_RE = re.compile(r"^(?:The\s+)?[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*)*(?:\s+\d+\b(?![.,]\d))?")
_GREETING_RE = re.compile(r"(?:" + "|".join(re.escape(g) for g in GREETINGS) + r")\b")  # "hi" but not "his"
_THE_NOUN_RE = re.compile(r"^The(?:\s+[a-z][\w'\-]*){1,3}$")  # "The bridge", "The new city hall"
MIN_CLAUSE_WORDS = 3
#: A bare answer to a yes/no question: nothing to check on its own.
ANSWER_WORDS = frozenset(
    {"yes", "no", "yeah", "yep", "nope", "sure", "correct", "indeed", "right", "true", "false", "exactly", "not really"}
)
#: A sentence that opens with a condition or a concession: its "and" joins a list or a compound, not two facts.
_CONDITIONAL_START_RE = re.compile(
    r"^(?:Without|With|If|Unless|When|Whenever|Although|Though|While|Because|Since|Once|Until|As)\b"
)
#: "-25 C. At -10 C": a period after a unit letter that follows a number ends a sentence (initials follow names).
_UNIT_STOP_RE = re.compile(r"(?<=\d\s[A-Z])\.\s+(?=[A-Z])|(?<=\d[A-Z])\.\s+(?=[A-Z])")


#: A list marker: "3.", "(2)", "b)", "iv.", "-", "•". Alone it is no claim; before one it is no number of it.
_LIST_MARKER = r"(?:\(?(?:\d{1,3}|[a-z]|[ivx]{1,4})[.)]|\(?[A-Z]\)|[-*\u2022\u2013])"
_MARKER_ONLY_RE = re.compile(_LIST_MARKER + r"$")
_LEADING_MARKER_RE = re.compile(r"^\s*" + _LIST_MARKER + r"\s+(?=\S)")


def without_list_marker(text: str) -> str:
    """``text`` without a list marker it opens with ("3. The bridge opened in 1998." -> "The bridge ...")."""
    return _LEADING_MARKER_RE.sub("", text, count=1)


def is_unevaluatable(text: str) -> bool:
    """A question, greeting, sign-off, instruction or bare list marker: nothing to check against a context."""
    stripped = text.strip()
    lowered = stripped.lower()
    if stripped.endswith("?") or _MARKER_ONLY_RE.match(stripped):
        return True
    if _GREETING_RE.match(lowered) and len(stripped.split()) <= 8:
        return True
    if lowered.rstrip(".!,;: ") in ANSWER_WORDS:
        return True  # "Yes." answers the question; the claims that follow say what it affirms
    first = lowered.split()[0] if lowered.split() else ""
    return first in IMPERATIVE_STARTS and not stripped.endswith(":")


def _subject(clause: str) -> str | None:
    """The words before the first verb-like word, when that looks like a noun phrase.

    A leading name is the subject by itself ("Breathex cut severe attacks" -> "Breathex", never
    "Breathex cut severe asthma"), and a leading time or place phrase is skipped ("From next Monday
    the library opens" -> "the library").
    """
    clause = _LEAD_PHRASE_RE.sub("", clause)
    name = _NAME_RE.match(clause)
    parts = name.group(0).split() if name else []
    # One capitalised word is a name only when it does not read as a participle or adverb ("Seen", "Finally").
    single_ok = len(parts) > 1 or (parts and not parts[0].lower().endswith(("ed", "ing", "en", "ly")))
    if name and single_ok and parts[-1].lower() not in STOPWORDS:
        rest = clause[name.end() :]
        if rest[:1] == " " and rest[1:2].islower():
            return name.group(0)
    match = _SUBJECT_END_RE.search(clause)
    if not match or match.start() == 0:
        return None
    subject = clause[: match.start()].strip().rstrip(",")
    parts = subject.split()
    if not 0 < len(parts) <= 6 or parts[-1].lower() in STOPWORDS or parts[0].lower().endswith(("ed", "ing", "en")):
        return None  # "Seen from the" is no noun phrase
    return subject


#: A leading time or place phrase before the subject: "From next Monday ", "On weekdays, ", "In 2019 ".
_LEAD_PHRASE_RE = re.compile(
    r"^(?:From|On|In|At|After|Before|During|Since|By|Until|Last|Next|This)\b[^,]*?"
    r"(?:,\s*|\s+(?=(?:the|The|a|an)\s))"
)
#: "a solid-state cell storing ...": a thing a sentence introduces (up to three words, before a verb or clause).
_INTRODUCED_RE = re.compile(
    r"(?<!and )(?<!or )\b(?:a|an)\s+((?:[a-z][\w\-]*\s+){0,2}?[a-z][\w\-]*?)"
    r"(?=\s+(?:that|which|who|storing|with|[a-z]+ing|in|of|for|to|from|at|on)\b|[,.;]|$)"
)


def _pieces(sentence: str) -> list[tuple[int, int]]:
    """[start, end) offsets of the clauses of one sentence."""
    cuts = [(0, 0)]
    conditional = _CONDITIONAL_START_RE.match(sentence) is not None
    for match in _CLAUSE_RE.finditer(sentence):
        if not (conditional and match.group(0).lstrip(", ").startswith("and")):
            cuts.append(match.span())
    for match in _AND_VERB_RE.finditer(sentence):
        if not conditional and not _ends_a_list(sentence[: match.start()]):
            cuts.append(match.span())
    cuts.sort()
    # Each clause runs from the end of one cut to the start of the next (or to the sentence's end).
    ends = [*cuts[1:], (len(sentence), len(sentence))]
    pieces = [(start, end) for (_, start), (end, _) in zip(cuts, ends, strict=True)]
    merged: list[tuple[int, int]] = []
    for start, end in pieces:
        # Never leave a fragment too short to be a claim of its own.
        if (merged and len(sentence[start:end].split()) < MIN_CLAUSE_WORDS) or (
            merged and len(sentence[merged[-1][0] : merged[-1][1]].split()) < MIN_CLAUSE_WORDS
        ):
            merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def _ends_a_list(before: str) -> bool:
    """Whether the text before an "and" ends a comma list ("apples, almonds and ..."): the and adds an item."""
    return re.search(r",\s+[\w'\-]+(?:\s+[\w'\-]+)?$", before) is not None


def _sentences(response: str) -> list[tuple[str, Span]]:
    """Sentences of ``response``, also split after a unit letter that follows a number ("-25 C. At ...")."""
    out: list[tuple[str, Span]] = []
    for sentence, span in split_sentences(response):
        start = 0
        for match in _UNIT_STOP_RE.finditer(sentence):
            out.append(
                (
                    sentence[start : match.start() + 1],
                    Span(start=span.start + start, end=span.start + match.start() + 1),
                )
            )
            start = match.end()
        out.append((sentence[start:], Span(start=span.start + start, end=span.end)))
    return out


def _is_name(phrase: str) -> bool:
    """Whether a capitalised phrase that opens a claim names something ("District 6", "Voltra Labs"), rather
    than opening it with a function word ("About 60", "In 2019")."""
    parts = phrase.split()
    head = [p for p in parts if not p[0].isdigit()]
    return bool(head) and head[-1].lower() not in STOPWORDS and parts[0].lower() not in STOPWORDS - {"the"}


def _with_head_noun(name: str, text: str) -> str:
    """``name`` with the common noun that ends its phrase, when "The" opens it: "The Zephyr bridge is ..." names
    "The Zephyr bridge", so that "It opened in 2003" becomes "The Zephyr bridge opened in 2003"."""
    if not name.startswith("The "):
        return name
    verb = _SUBJECT_END_RE.search(text, len(name))
    between = text[len(name) : verb.start()].split() if verb else []
    if 0 < len(between) <= 2 and all(w.islower() and w.isalpha() and w not in STOPWORDS for w in between):
        return f"{name} {' '.join(between)}"
    return name


def _plural_ok(name: str) -> bool:
    """Whether "They" may stand for ``name``: a plural noun phrase or a name of several words, never one
    capitalised word that opened a sentence ("Modern air-source heat pumps ..." does not make "Modern" a name)."""
    return len(name.split()) > 1 or name.endswith("s")


def _join_subjectless(sentence: str, pieces: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in pieces:
        m = _SUBJECT_END_RE.match(sentence[start:end].strip())
        if out and m is not None and m.start() == 0:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def split_claims(response: str) -> list[tuple[str, Span]]:
    """Claims of ``response`` as (text, span of the words it comes from)."""
    claims: list[tuple[str, Span]] = []
    last_name: str | None = None
    last_thing: str | None = None
    for sentence, span in _sentences(response):
        if is_unevaluatable(sentence):
            claims.append((sentence, span))
            continue
        pieces = _pieces(sentence)
        subject = _subject(sentence[pieces[0][0] : pieces[0][1]]) if pieces else None
        if subject is None:  # a clause that starts with a verb needs a subject: keep it with the one before
            pieces = _join_subjectless(sentence, pieces)
        for index, (start, end) in enumerate(pieces):
            text = sentence[start:end].strip().rstrip(",;")
            if not text:
                continue
            starts_with_verb = (m := _SUBJECT_END_RE.match(text)) is not None and m.start() == 0
            if index > 0 and subject and starts_with_verb:
                text = (
                    f"{subject[0].upper()}{subject[1:]} {text}"  # "and opened in 1998" -> "The bridge opened in 1998"
                )
            text = text[0].upper() + text[1:]
            pronoun = _LEAD_PRONOUN_RE.match(text)
            if pronoun and pronoun.group(1) in ("It", "Its") and last_thing:
                word = pronoun.group(1)
                text = (f"The {last_thing}'s" if word == "Its" else f"The {last_thing}") + text[len(word) :]
            elif pronoun and last_name and (pronoun.group(1) not in ("They", "Their") or _plural_ok(last_name)):
                word = pronoun.group(1)
                replacement = f"{last_name}'s" if word in ("His", "Her", "Its", "Their") else last_name
                if word in ("He", "She", "His", "Her") and last_name.startswith("The "):
                    replacement = word  # a person's pronoun never stands for "the bridge"
                text = replacement + text[len(word) :]
            name = _NAME_RE.match(text)
            if name and not pronoun and _is_name(name.group(0)):
                last_name = _with_head_noun(name.group(0), text)
            elif not pronoun and (own := _subject(text)) and _THE_NOUN_RE.match(own):
                last_name = own  # "The bridge opened in 1998. It carries ..." -> "The bridge carries ..."
            claims.append((text, Span(start=span.start + start, end=span.start + end)))
            # "Voltra announced a new cell. It kept ...": "it" is the thing just introduced, not the company.
            thing = _INTRODUCED_RE.search(text)
            last_thing = thing.group(1) if thing and thing.group(1).split()[-1] not in STOPWORDS else None
    return claims


class OfflineExtractor:
    """``--extractor offline``: rule-based claims with spans, no model and no network."""

    name = "offline"

    def settings(self) -> dict[str, Any]:
        return {"kind": "rules", "min_clause_words": MIN_CLAUSE_WORDS}

    async def extract(self, sample: Sample) -> Extraction:
        return Extraction(claims=self.claims(sample))

    def claims(self, sample: Sample) -> list[Claim]:
        return [
            Claim(id=f"{sample.id}:c{i}", sample_id=sample.id, index=i, text=text, spans=(span,))
            for i, (text, span) in enumerate(split_claims(sample.response))
        ]
