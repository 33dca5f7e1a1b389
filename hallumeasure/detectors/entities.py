"""Offline entity tagging for the CoNLI entity re-checks and the offline rewriter.

The CoNLI paper tags entities with a cloud NER service and keeps nine kinds (people, roles,
places, events, skills, date ranges, durations, numbers, money). Here simple rules stand in
for that service so that the detector needs no network: regular expressions for money,
dates, durations and numbers, runs of capitalised words for names, and a small word list
for roles, events and skills. The rules miss things a trained tagger would find; each
miss only means one re-check fewer, never a wrong verdict by itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from hallumeasure.core.labels import Subtype


class EntityKind(StrEnum):
    PERSON = "person"
    ROLE = "role"
    LOCATION = "location"
    NAME = "name"  # a capitalised name the rules cannot place as a person or a location
    EVENT = "event"
    SKILL = "skill"
    DATE = "date"
    DURATION = "duration"
    NUMBER = "number"
    MONEY = "money"


#: The error subtype a failed re-check of each kind points to.
KIND_SUBTYPE: dict[EntityKind, Subtype] = {
    EntityKind.PERSON: Subtype.ENTITY,
    EntityKind.ROLE: Subtype.ENTITY,
    EntityKind.LOCATION: Subtype.ENTITY,
    EntityKind.NAME: Subtype.ENTITY,
    EntityKind.EVENT: Subtype.ENTITY,
    EntityKind.SKILL: Subtype.ENTITY,
    EntityKind.DATE: Subtype.TEMPORAL,
    EntityKind.DURATION: Subtype.TEMPORAL,
    EntityKind.NUMBER: Subtype.NUMBER,
    EntityKind.MONEY: Subtype.NUMBER,
}

#: Kinds whose values can stand in for one another when a value is substituted.
FAMILY: dict[EntityKind, str] = {
    EntityKind.NUMBER: "quantity",
    EntityKind.MONEY: "quantity",
    EntityKind.DATE: "time",
    EntityKind.DURATION: "time",
    EntityKind.PERSON: "name",
    EntityKind.LOCATION: "name",
    EntityKind.NAME: "name",
    EntityKind.ROLE: "role",
    EntityKind.EVENT: "event",
    EntityKind.SKILL: "skill",
}


@dataclass(frozen=True)
class Entity:
    """A tagged span of a sentence: its text, kind and character offsets in that sentence."""

    text: str
    kind: EntityKind
    start: int
    end: int


_NUMBER_WORDS = (
    "one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    "seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|a few|several"
)
_NUM = r"\d+(?:[.,]\d+)*"
_SCALE = r"(?:\s?(?:million|billion|trillion|thousand|bn|m|k)\b)?"
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December|"
    "Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_UNITS = r"(?:second|minute|hour|day|week|month|year|decade|century|centuries)s?"

_PATTERNS: list[tuple[EntityKind, re.Pattern[str]]] = [
    (
        EntityKind.MONEY,
        re.compile(
            rf"[$€£¥]\s?{_NUM}{_SCALE}|{_NUM}{_SCALE}\s?(?:euros?|dollars?|pounds?|yen|francs?|USD|EUR|GBP)\b",
            re.IGNORECASE,
        ),
    ),
    (
        EntityKind.DATE,
        re.compile(
            rf"\b(?:(?:early|mid|late)[- ])?(?:{_MONTHS})\.?(?:\s\d{{1,2}}(?:st|nd|rd|th)?)?(?:,?\s(?:1[89]|20)\d\d)?\b"
            rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s(?:{_MONTHS})(?:\s(?:1[89]|20)\d\d)?\b"
            rf"|\b(?:next|last|this|on)?\s?(?:{_DAYS})s?\b"
            r"|\b(?i:in|from|since|by|until|before|after)\s(?:1[89]|20)\d\d\b"
            r"|\b\d{1,2}(?::\d\d)?\s?(?:a\.m\.|p\.m\.|am|pm)(?=\W|$)"
            r"|\b(?i:today|tomorrow|yesterday|next (?:week|month|year)|last (?:week|month|year))\b"
        ),
    ),
    (EntityKind.DURATION, re.compile(rf"\b(?:{_NUM}|{_NUMBER_WORDS})[- ]{_UNITS}\b", re.IGNORECASE)),
    (
        EntityKind.NUMBER,
        re.compile(
            rf"(?<![\w.]){_NUM}{_SCALE}(?:\s?(?:%|percent\b|per cent\b))?"
            rf"|\b(?:{_NUMBER_WORDS})\b(?:\s(?:percent|per cent))?",
            re.IGNORECASE,
        ),
    ),
]

ROLE_WORDS = frozenset(
    "mayor ceo chief president minister governor senator chairman chairwoman chair director manager founder "
    "spokesperson spokesman spokeswoman professor doctor nurse engineer researcher researchers scientist "
    "scientists analyst analysts teacher judge officer police lawyer coach player author editor journalist "
    "residents patients customers users employees workers volunteers opposition council committee board".split()
)
EVENT_WORDS = frozenset(
    "election vote referendum flood storm earthquake hurricane fire war strike protest trial conference summit "
    "festival ceremony launch opening renovation merger acquisition recall outbreak pandemic tournament "
    "championship meeting concert exhibition".split()
)
SKILL_WORDS = frozenset(
    "programming coding surgery nursing accounting translation welding engineering design marketing "
    "negotiation teaching".split()
)
_PERSON_TITLES = frozenset("mr mrs ms dr prof mayor ceo president minister governor senator sir lady".split())
_PLACE_CUES = frozenset(
    "river lake sea ocean mountain mountains city town village street road avenue square park island bay "
    "valley county state province region harbor harbour bridge airport station".split()
)
_ORG_CUES = frozenset(
    "labs lab inc ltd corp company council party foundation library museum university school hospital "
    "bank group agency institute association coffee ministry".split()
)
_PLACE_PREPOSITIONS = frozenset("in at from near to into across".split())
#: Capitalised words that start sentences or titles without being names.
_NOT_NAMES = frozenset(
    "the a an this that these those it its he she they we you i his her their our my your in on at for from "
    "to of and or but if when while after before since during as by with about over under all every each some "
    "most many more no not there here what which who how why however also thanks thank hello yes would could "
    "should will may might can".split()
)
_CAPITALISED = re.compile(r"\b[A-Z][\w'’.-]*(?:\s(?:of|de|van|von|la|du)\s[A-Z][\w'’-]*|\s[A-Z][\w'’.-]*)*")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def find_entities(sentence: str) -> list[Entity]:
    """Entities of ``sentence`` in reading order, without overlaps and without repeats of the same text."""
    found: list[Entity] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(sentence):
            raw = match.group(0)
            text = raw.strip()
            if not text.endswith(("a.m.", "p.m.")):
                text = text.rstrip(".,")  # sentence punctuation, not part of the value
            if not text or text.lower() in ("on", "this", "next", "last"):
                continue
            start = match.start() + raw.index(text)
            found.append(Entity(text, kind, start, start + len(text)))
    found += _names(sentence)
    found += _gazetteer(sentence)
    return _dedupe(_without_overlaps(found))


def _names(sentence: str) -> list[Entity]:
    out = []
    for match in _CAPITALISED.finditer(sentence):
        text = re.sub(r"(?:'s|’s)$", "", match.group(0).rstrip("."))
        start = match.start()
        titled = False
        # Drop leading words capitalised only because they open the sentence, and titles ("Mayor"),
        # which the word list tags as roles of their own.
        while True:
            first, _, rest = text.partition(" ")
            key = first.lower().strip(".")
            if key not in _NOT_NAMES and key not in ROLE_WORDS and key not in _PERSON_TITLES:
                break
            titled = titled or key in _PERSON_TITLES or key in ROLE_WORDS
            start += len(first) + 1
            text = rest
        if not text:
            continue
        tokens = text.split()
        if start == 0 and len(tokens) == 1:
            continue  # one capitalised word opening the sentence is usually an ordinary word
        kind = EntityKind.PERSON if titled else _name_kind(sentence, start, tokens)
        out.append(Entity(text, kind, start, start + len(text)))
    return out


def _name_kind(sentence: str, start: int, tokens: list[str]) -> EntityKind:
    lowered = [t.lower().strip(".") for t in tokens]
    before = _WORD.findall(sentence[:start])
    previous = before[-1].lower() if before else ""
    if lowered[-1] in _ORG_CUES:
        return EntityKind.NAME
    if lowered[-1] in _PLACE_CUES or previous in _PLACE_PREPOSITIONS:
        return EntityKind.LOCATION
    if previous in _PERSON_TITLES or lowered[0] in _PERSON_TITLES or len(tokens) in (2, 3):
        return EntityKind.PERSON
    return EntityKind.NAME


def _gazetteer(sentence: str) -> list[Entity]:
    out = []
    for match in _WORD.finditer(sentence):
        word = match.group(0).lower()
        kind = (
            EntityKind.ROLE
            if word in ROLE_WORDS
            else EntityKind.EVENT
            if word in EVENT_WORDS
            else EntityKind.SKILL
            if word in SKILL_WORDS
            else None
        )
        if kind is not None:
            out.append(Entity(match.group(0), kind, match.start(), match.end()))
    return out


def _without_overlaps(entities: list[Entity]) -> list[Entity]:
    # Longer spans win (``4.2 million euros`` over ``4.2``); earlier rules win ties (money before number).
    order = {kind: i for i, kind in enumerate(EntityKind)}
    ranked = sorted(entities, key=lambda e: (-(e.end - e.start), _rule_rank(e.kind), order[e.kind]))
    kept: list[Entity] = []
    for entity in ranked:
        if all(entity.end <= k.start or entity.start >= k.end for k in kept):
            kept.append(entity)
    return sorted(kept, key=lambda e: e.start)


def _rule_rank(kind: EntityKind) -> int:
    ranks = [EntityKind.MONEY, EntityKind.DATE, EntityKind.DURATION, EntityKind.NUMBER]
    return ranks.index(kind) if kind in ranks else len(ranks)


def _dedupe(entities: list[Entity]) -> list[Entity]:
    seen: set[str] = set()
    out = []
    for entity in entities:
        key = entity.text.lower()
        if key not in seen:
            seen.add(key)
            out.append(entity)
    return out


def mark(sentence: str, entity: Entity) -> str:
    """The sentence with ``entity`` wrapped in ``[ ]``, the way the focused re-check shows it."""
    return f"{sentence[: entity.start]}[ {sentence[entity.start : entity.end]} ]{sentence[entity.end :]}"


#: Short forms a context often spells out.
ALIASES: dict[str, tuple[str, ...]] = {
    "ceo": ("chief executive",),
    "cfo": ("chief financial officer",),
    "cto": ("chief technology officer",),
    "us": ("united states",),
    "usa": ("united states",),
    "uk": ("united kingdom",),
    "eu": ("european union",),
}
_TOKEN_RE = re.compile(r"\d+(?:\.\d+)?|[a-z$€£¥]+")
_QUANTITY_OR_TIME = frozenset({EntityKind.NUMBER, EntityKind.MONEY, EntityKind.DATE, EntityKind.DURATION})
_GAZETTEER_KINDS = frozenset({EntityKind.ROLE, EntityKind.EVENT, EntityKind.SKILL})


def value_tokens(text: str) -> list[str]:
    """Comparable tokens: lower case, thousands separators and hyphens dropped, plural ``s`` cut, % spelled out."""
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text.lower())
    text = text.replace("%", " percent ").replace("per cent", "percent").replace("-", " ")
    text = re.sub(r"'s\b|’s\b", "", text)
    return [t[:-1] if len(t) > 3 and t.endswith("s") and not t.endswith("ss") else t for t in _TOKEN_RE.findall(text)]


def appears_in(entity: Entity, text: str, *, window: int = 6) -> bool:
    """Whether the entity's value is found in ``text``.

    Names must appear as the same run of words. Quantities and times may be spread a little
    ("4.2 million euros" in "4.2 million in euros"): every token must occur within ``window``
    tokens of the number. Role, event and skill words also match longer forms ("flood" in "flooded").
    """
    aliases = ALIASES.get(entity.text.lower(), ())
    if any(appears_in(Entity(alias, entity.kind, 0, len(alias)), text, window=window) for alias in aliases):
        return True
    needle, haystack = value_tokens(entity.text), value_tokens(text)
    if not needle:
        return True
    n = len(needle)
    if any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1)):
        return True
    if entity.kind in _GAZETTEER_KINDS and n == 1 and len(needle[0]) >= 4:
        return any(token.startswith(needle[0]) for token in haystack)
    if entity.kind in _QUANTITY_OR_TIME:
        anchor = next((t for t in needle if t[0].isdigit()), needle[0])
        rest = set(needle) - {anchor}
        for i, token in enumerate(haystack):
            if token == anchor and rest <= set(haystack[max(0, i - window) : i + window + 1]):
                return True
    return False


def other_values(entity: Entity, claim: str, context: str) -> list[Entity]:
    """Values of the entity's family in the context sentence closest to ``claim`` that the claim does not hold.

    When a claim says "42 km" and the closest context sentence says "24 km", this returns the
    "24 km" entity: the value the claim most likely meant. Empty when no sentence aligns.
    """
    from hallumeasure.sources.align import align_claim  # a pure helper; imports nothing heavy

    aligned = align_claim(claim, context)
    if aligned is None:
        return []
    family = FAMILY[entity.kind]
    return [
        candidate
        for candidate in find_entities(aligned.sentence)
        if FAMILY[candidate.kind] == family and not appears_in(candidate, claim)
    ]
