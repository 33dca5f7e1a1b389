"""Roles swapped around a relation word: every word of the claim is in one source sentence, the other way round.

"French cuisine was influenced by Italian cuisine" holds every word of "Italian cuisine was influenced by French
cuisine", so word overlap alone would clear it. Here a claim word before a relation word ("influenced") and one
after it stand on the opposite sides of the same word in the source sentence. Such a claim is never confidently
supported (confidence.py); the judge cannot tell a swap from a paraphrase that turns the sentence round, so it
is not flagged either: it is left for an LLM. A change of voice ("A influenced B" for "B was influenced by A")
and relations that read the same both ways ("met", "married", "played") are no swap. A word in a list
("apples, pears and plums") is no relation.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from hallumeasure.judges.offline.tokens import is_content, stem

#: Relations that say the same whichever way round their two sides stand.
SYMMETRIC = frozenset(
    stem(w)
    for w in (
        "met meet married marry played play drew draw tied tie merged merge partnered partner collaborated "
        "collaborate shared share bordered border neighbour neighbor equal similar same like near next "
        "versus vs against between together both related linked connected"
    ).split()
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z'\-]*|\d[\d,.]*\d|\d|[,;]")
#: Words that join the members of a list: a word beside one is a member, not a relation.
_LISTING = frozenset({",", ";", "and", "or", "nor"})


class RoleSwap(NamedTuple):
    """The claim's word before the relation, the relation, and its word after it (all as the claim writes them)."""

    before: str
    relation: str
    after: str


def role_swap(claim: str, sentence: str) -> RoleSwap | None:
    """Two words of ``claim`` on either side of a relation word that ``sentence`` holds the other way round.

    Only within one clause of each (no comma between the two words) and in the same voice throughout (a "by" in
    both or in neither): a phrase moved to the front ("On Thursday, the bridge was opened by ...") is no swap."""
    mine, theirs = _TOKEN.findall(claim), _TOKEN.findall(sentence)
    if _voice(mine) != _voice(theirs):
        return None
    their_stems = [stem(t) for t in theirs]
    for at, word in enumerate(mine):
        relation = stem(word)
        if not _relation(mine, at) or relation in SYMMETRIC or their_stems.count(relation) != 1:
            continue
        there = their_stems.index(relation)
        if not _relation(theirs, there) or _passive(mine, at) != _passive(theirs, there):
            continue
        before, after = _sides(mine, at)
        their_before, their_after = _sides(theirs, there)
        first = next((i for i in range(at) if stem(mine[i]) in before & their_after), None)
        second = next((i for i in range(at + 1, len(mine)) if stem(mine[i]) in after & their_before), None)
        if first is None or second is None:
            continue
        a, b = stem(mine[first]), stem(mine[second])
        if _one_clause(mine[first : second + 1]) and _one_clause(
            theirs[their_stems.index(b) : their_stems.index(a) + 1]
        ):
            return RoleSwap(mine[first], word, mine[second])
    return None


def _voice(tokens: list[str]) -> bool:
    """Whether a passive "by" is anywhere in ``tokens``."""
    return any(t.lower() == "by" for t in tokens)


def _one_clause(tokens: list[str]) -> bool:
    return "," not in tokens and ";" not in tokens


def _relation(tokens: list[str], at: int) -> bool:
    """Whether the word at ``at`` may be a relation: a lower-case content word outside a list."""
    word = tokens[at]
    if not word[0].islower() or not is_content(word):
        return False
    beside = {t.lower() for t in tokens[max(0, at - 1) : at + 2 : 2]}
    return beside.isdisjoint(_LISTING)


def _passive(tokens: list[str], at: int) -> bool:
    """Whether a "by" follows the relation within two words ("was influenced by", "was bought last year by")."""
    return any(t.lower() == "by" for t in tokens[at + 1 : at + 4])


def _sides(tokens: list[str], at: int) -> tuple[set[str], set[str]]:
    """The content stems only before the word at ``at`` and those only after it."""
    before = {stem(t) for t in tokens[:at] if is_content(t)}
    after = {stem(t) for t in tokens[at + 1 :] if is_content(t)}
    return before - after, after - before
