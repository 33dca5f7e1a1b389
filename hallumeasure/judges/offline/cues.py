"""Cue words: the words of meaning (negation, modality and plans, quantifiers, superlatives, hyperbole, causes,
attribution, comparisons, completion) that lexical overlap cannot judge, and how a claim and a source sentence
differ in them. The rules of confidence.py read these conflicts; a claim that differs from its sentence in a
cue is never confidently supported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from hallumeasure.judges.offline.lexicon import ATTRIBUTION, HEDGES, INTENSIFIERS, NEGATIONS
from hallumeasure.judges.offline.tokens import stem, words

#: Cue words whose presence changes what a sentence claims, by family. A family "conflicts" when one
#: side holds a cue of it that the other lacks (see ``cue_conflicts``).
CUES: dict[str, frozenset[str]] = {
    "negation": NEGATIONS
    | frozenset({"against", "opposed", "opposes", "rejected", "rejects", "unable", "neither", "instead"}),
    "modality": HEDGES
    | frozenset(
        {
            "will",
            "shall",
            "should",
            "must",
            "planning",
            "proposed",
            "proposes",
            "scheduled",
            "due",
            "aim",
            "aimed",
            "intended",
            "expects",
            "expect",
            "hoped",
            "considering",
            "consider",
            "considered",
            "potential",
            "potentially",
            "forecast",
            "certainly",
            "definitely",
            "surely",
        }
    ),
    "completion": frozenset(
        {"already", "begun", "began", "completed", "finished", "launched", "now", "currently", "underway", "done"}
    ),
    "quantifier": frozenset(
        {
            "all",
            "every",
            "each",
            "entire",
            "whole",
            "only",
            "none",
            "some",
            "most",
            "many",
            "few",
            "several",
            "both",
            "any",
            "always",
            "never",
            "sole",
            "solely",
            "everyone",
            "everybody",
            "unanimously",
            "unanimous",
            "majority",
            "minority",
            "split",
            "divided",
        }
    ),
    "superlative": frozenset({"most", "least", "best", "worst", "top", "leading", "record", "first", "last"}),
    "hyperbole": INTENSIFIERS,
    "cause": frozenset(
        {
            "because",
            "cause",
            "caused",
            "causes",
            "causing",
            "due",
            "thanks",
            "therefore",
            "consequently",
            "hence",
            "so",
            "result",
            "resulted",
            "led",
            "leads",
            "lead",
            "driven",
            "drove",
            "reason",
            "owing",
            "blamed",
            "attributed",
        }
    ),
    "attribution": ATTRIBUTION | frozenset({"according", "estimate", "estimates", "survey", "study", "claimed"}),
    "comparison": frozenset(
        {
            "more",
            "less",
            "fewer",
            "than",
            "twice",
            "double",
            "doubled",
            "triple",
            "tripled",
            "half",
            "halved",
            "higher",
            "lower",
            "larger",
            "smaller",
            "bigger",
            "greater",
            "faster",
            "slower",
            "earlier",
            "later",
            "older",
            "younger",
            "longer",
            "shorter",
            "cheaper",
            "ahead",
            "behind",
            "above",
            "below",
            "over",
            "under",
            "exceeds",
            "exceeded",
            "outnumber",
            "outnumbered",
        }
    ),
}
#: Every cue word, and their stems (what a claim's content words are compared without).
CUE_WORDS = frozenset(w for family in CUES.values() for w in family)
CUE_STEMS = frozenset(stem(w) for w in CUE_WORDS)
#: Families where the source holding a cue the claim drops also changes the claim (a plan told as done, a
#: reported view told as fact, "some" told as all); a source word of degree or cause that a claim leaves out
#: only makes the claim weaker, which is still true.
_BOTH_WAYS = frozenset({"negation", "modality", "quantifier", "attribution"})
#: Comparison words a claim may not drop ("less than half" told as "half"); the others often belong to another
#: clause of a long source sentence ("50 minutes later", "children under 12").
_KEPT_COMPARISONS = frozenset({"than", "twice", "more", "less", "fewer"})
#: Superlatives by form: "-est" adjectives ("largest", "busiest"); a few "-est" words are not superlatives.
_SUPERLATIVE_RE = re.compile(r"^[a-z]{2,}est$")
_NOT_SUPERLATIVE = frozenset(
    {
        "interest",
        "forest",
        "harvest",
        "request",
        "contest",
        "protest",
        "suggest",
        "honest",
        "guest",
        "test",
        "rest",
        "west",
        "nest",
        "chest",
        "quest",
        "invest",
        "arrest",
        "modest",
        "digest",
        "latest",
        "manifest",
        "earnest",
        "priest",
        "pest",
        "vest",
        "crest",
        "best",
    }
)
_DETERMINERS = frozenset({"a", "an", "the", "this", "that", "its", "their", "his", "her", "our", "free", "paid", "new"})


def _cue_stems(tokens: Iterable[str]) -> dict[str, dict[str, str]]:
    low = [t.lower() for t in tokens]
    # "plans a third shop" plans; "the free plan", "approved a plan" name a thing.
    planned = {
        w
        for w, before in zip(low, ["", *low][: len(low)], strict=True)
        if w in ("plan", "plans") and before in _DETERMINERS
    }
    found: dict[str, dict[str, str]] = {}
    for family, cue_words in CUES.items():
        hits = {w for w in low if w in cue_words and w not in planned}
        if family == "negation":
            hits |= {"not" for w in low if w.endswith("n't")}
        if family == "superlative":
            hits |= {w for w in low if _SUPERLATIVE_RE.match(w) and w not in _NOT_SUPERLATIVE}
        if hits:
            found[family] = {stem(w): w for w in sorted(hits)}
    return found


@lru_cache(maxsize=4096)
def text_cues(text: str) -> dict[str, dict[str, str]]:
    """``_cue_stems`` of the words of ``text``, read once per text: a source sentence is compared with every claim
    aligned with it, and a claim with its sentence up to four times (shared: never mutate the result)."""
    return _cue_stems(words(text))


@dataclass(frozen=True)
class CueConflict:
    """A cue family whose words differ between claim and sentence (``claim_only``, ``sentence_only``)."""

    family: str
    claim_only: tuple[str, ...]
    sentence_only: tuple[str, ...]


#: Modal words by what they say, so that a synonym within a class is no conflict ("could" for "may", "intends"
#: for "plans"): a chance, an expectation, a plan, the future, certainty. Words outside these count one by one.
_MODAL_CLASSES = {
    "chance": ("may", "might", "could", "possibly", "perhaps", "potential", "potentially"),
    "likely": ("likely", "probably", "unlikely"),
    "expectation": ("expected", "expect", "expects", "should", "forecast", "due", "scheduled", "estimated"),
    "plan": (
        "plan",
        "plans",
        "planned",
        "planning",
        "intend",
        "intends",
        "intended",
        "aim",
        "aims",
        "aimed",
        "hope",
        "hopes",
        "hoped",
        "proposed",
        "proposes",
        "considering",
        "consider",
        "considered",
        "would",
    ),
    "future": ("will", "shall"),
    "certain": ("certainly", "definitely", "surely", "must"),
}
_MODAL_CLASS = {stem(w): name for name, ws in _MODAL_CLASSES.items() for w in ws}
#: Words that tell an event as already done ("has opened", "began"): a future source sentence does not back them.
_DONE = frozenset(
    {
        "has",
        "have",
        "had",
        "already",
        "was",
        "were",
        "did",
        "began",
        "begun",
        "took",
        "built",
        "won",
        "held",
        "made",
        "went",
        "became",
        "opened",
        "started",
        "completed",
        "finished",
        "launched",
    }
)


def _classes(family: str, found: dict[str, str]) -> dict[str, str]:
    """The cue words of one family keyed by what they mean: modal words by class, attribution words as one
    (who said it is checked by the words around), others by stem."""
    if family == "modality":
        return {_MODAL_CLASS.get(k, k): w for k, w in found.items()}
    if family == "attribution":
        return {"reported": min(found.values())} if found else {}
    return found


def cue_conflicts(claim: str, sentence: str) -> list[CueConflict]:
    """Cue families that a claim and a source sentence do not share: the words lexical overlap cannot judge."""
    mine, theirs = text_cues(claim), text_cues(sentence)
    claim_low = {w.lower() for w in words(claim)}
    out = []
    for family in CUES:
        ours, their = _classes(family, mine.get(family, {})), _classes(family, theirs.get(family, {}))
        extra = sorted(ours[k] for k in ours.keys() - their.keys())
        dropped = sorted(their[k] for k in their.keys() - ours.keys()) if family in _BOTH_WAYS else []
        if family == "comparison":
            dropped = sorted(w for k, w in their.items() if k not in ours and w in _KEPT_COMPARISONS)
        if family == "modality" and "future" in their and not claim_low & _DONE:
            # "will start at 7:30" told as "starts at 7:30" is the same timetable; "has started" is not
            dropped = [w for w in dropped if w != their["future"]]
        if extra or dropped:
            out.append(CueConflict(family, tuple(extra), tuple(dropped)))
    return out


def cue_words(c: CueConflict) -> str:
    """A conflict in words: what the claim says that the source does not, and the other way round."""
    said = ", ".join(f"'{w}'" for w in c.claim_only)
    dropped = ", ".join(f"'{w}'" for w in c.sentence_only)
    if said and dropped:
        return f"the claim says {said} where the source says {dropped}"
    return (
        f"the claim says {said}, which the source does not"
        if said
        else f"the source says {dropped}, the claim does not"
    )
