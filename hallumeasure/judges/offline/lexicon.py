"""Word lists behind the offline signals. Small on purpose: each entry should be easy to justify."""

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "nor",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "also",
        "said",
        "says",
        "say",
        "one",
        "ones",
        "s",
        "t",
        "re",
        "ve",
        "ll",
        "d",
        "m",
        "o",
        "y",
        "amp",
        "like",
    ]
)

NEGATIONS = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nobody",
        "nothing",
        "neither",
        "nor",
        "cannot",
        "without",
        "n't",
        "denied",
        "denies",
        "deny",
        "refused",
        "refuses",
        "failed",
        "fails",
        "lack",
        "lacks",
    ]
)

#: Words that make a statement stronger than a plain fact (hyperbole when the context lacks them).
INTENSIFIERS = frozenset(
    [
        "very",
        "extremely",
        "highly",
        "hugely",
        "massively",
        "incredibly",
        "enormously",
        "significantly",
        "dramatically",
        "drastically",
        "radically",
        "revolutionary",
        "revolutionize",
        "revolutionized",
        "revolutionizes",
        "transform",
        "transformed",
        "transforms",
        "transformative",
        "unprecedented",
        "record",
        "biggest",
        "largest",
        "greatest",
        "best",
        "worst",
        "first",
        "only",
        "always",
        "never",
        "all",
        "every",
        "entire",
        "completely",
        "totally",
        "entirely",
        "fully",
        "absolutely",
        "definitely",
        "certainly",
        "undoubtedly",
        "clearly",
        "massive",
        "huge",
        "enormous",
        "vast",
        "major",
        "critical",
        "crucial",
        "vital",
        "essential",
        "groundbreaking",
        "breakthrough",
        "landmark",
        "historic",
        "dominant",
        "leading",
        "top",
        "most",
        "least",
        "sole",
    ]
)

#: Words that make a statement weaker or uncertain.
HEDGES = frozenset(
    [
        "may",
        "might",
        "could",
        "possibly",
        "perhaps",
        "likely",
        "unlikely",
        "probably",
        "reportedly",
        "allegedly",
        "apparently",
        "suggest",
        "suggests",
        "suggested",
        "appear",
        "appears",
        "seem",
        "seems",
        "estimated",
        "expected",
        "plans",
        "plan",
        "planned",
        "hopes",
        "hope",
        "aims",
        "intend",
        "intends",
        "would",
    ]
)

#: Verbs and phrases that attribute a statement to a source.
ATTRIBUTION = frozenset(
    [
        "said",
        "says",
        "say",
        "told",
        "tells",
        "according",
        "claimed",
        "claims",
        "claim",
        "stated",
        "states",
        "argued",
        "argues",
        "reported",
        "reports",
        "announced",
        "announces",
        "believes",
        "believed",
        "insisted",
        "warned",
        "added",
        "noted",
        "explained",
        "suggested",
        "revealed",
        "confirmed",
        "denied",
    ]
)

PRONOUNS = frozenset(["he", "she", "it", "they", "his", "her", "its", "their", "him", "them", "this", "these", "those"])

GREETINGS = (
    "hi",
    "hello",
    "hey",
    "thanks",
    "thank you",
    "dear",
    "regards",
    "best wishes",
    "cheers",
    "good morning",
    "good afternoon",
    "good evening",
    "sincerely",
)

IMPERATIVE_STARTS = frozenset(
    [
        "please",
        "let",
        "consider",
        "note",
        "see",
        "check",
        "click",
        "visit",
        "contact",
        "call",
        "try",
        "remember",
        "feel",
        "imagine",
        "ask",
        "read",
        "find",
    ]
)

MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
MONTHS.update({m[:3]: i for m, i in list(MONTHS.items())})
MONTHS["sept"] = 9

SCALES = {
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
    "k": 1e3,
    "m": 1e6,
    "bn": 1e9,
    "mn": 1e6,
    "hundred": 1e2,
    "dozen": 12,
}

_UNITS = (
    "two three four five six seven eight nine ten "
    "eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
)
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
#: Number words worth matching ("one" is left out: it is far more often a pronoun than a count).
NUMBER_WORDS: dict[str, float] = {word: float(i) for i, word in enumerate(_UNITS.split(), start=2)}
NUMBER_WORDS.update({word: float(v) for word, v in _TENS.items()})
NUMBER_WORDS.update(
    {
        f"{t}-{u}": float(tv + uv)
        for t, tv in _TENS.items()
        for u, uv in zip(
            ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"], range(1, 10), strict=True
        )
    }
)
NUMBER_WORDS.update({"zero": 0.0, "twice": 2.0, "dozen": 12.0})

TIME_WORDS = frozenset(
    [
        "yesterday",
        "today",
        "tomorrow",
        "tonight",
        "ago",
        "last",
        "next",
        "previous",
        "later",
        "earlier",
        "recently",
        "soon",
        "currently",
        "now",
        "former",
        "formerly",
        "future",
        "past",
        "will",
        "was",
        "were",
        "has",
        "had",
        "been",
        "since",
        "until",
        "before",
        "after",
        "during",
        "annual",
        "annually",
        "weekly",
        "monthly",
        "daily",
    ]
)

#: Irregular inflections mapped to one stem, so that "won" matches "wins" and "fell" matches "falls".
IRREGULAR: dict[str, str] = {}
for _forms in """
win won winning wins | lose lost losing loses | fall fell fallen falling falls | rise rose risen rising rises
go went gone goes going | buy bought buying buys | sell sold selling sells | take took taken taking takes
give gave given giving gives | make made making makes | say said saying says | tell told telling tells
see saw seen seeing sees | come came coming comes | become became becoming becomes | begin began begun begins
run ran running runs | leave left leaving leaves | meet met meeting meets | lead led leading leads
build built building builds | find found finding finds | think thought thinking thinks | bring brought brings
hold held holding holds | keep kept keeping keeps | pay paid paying pays | send sent sending sends
spend spent spending spends | write wrote written writing writes | speak spoke spoken speaking speaks
break broke broken breaking breaks | choose chose chosen choosing chooses | drive drove driven drives
eat ate eaten eating eats | fly flew flown flying flies | grow grew grown growing grows | know knew known knows
throw threw thrown throwing throws | shoot shot shooting shoots | fight fought fighting fights
teach taught teaching teaches | catch caught catching catches | hit hitting hits | put putting puts
cut cutting cuts | set setting sets | hurt hurting hurts | die died dying dies | lie lay lain lying lies
use used using uses | cause caused causing causes
child children | man men | woman women | person people | mouse mice | foot feet | tooth teeth
""".replace("\n", "|").split("|"):
    _words = _forms.split()
    for _w in _words:
        IRREGULAR[_w] = _words[0]


#: Prefixes that turn a word into its opposite ("suitable" / "unsuitable", "motivate" / "demotivate").
NEGATING_PREFIXES = ("un", "in", "im", "il", "ir", "dis", "de", "non", "non-", "sub", "mis", "anti")

WEEKDAYS = frozenset(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])

#: Closed sets of values that exclude one another: a claim that has one member where the context has
#: another ("green" where it says "blue", "wife" where it says "brother", "week" where it says "year")
#: swaps a fact. Each entry maps a written form to its set and its canonical member, so plurals and
#: spelling variants ("grey"/"gray", "kilometres"/"km") count as the same value.
_EXCLUSIVE_SETS: dict[str, tuple[str, ...]] = {
    "colour": (
        "red",
        "orange",
        "yellow",
        "green",
        "blue",
        "purple",
        "violet",
        "pink",
        "brown",
        "black",
        "white",
        "grey|gray",
        "silver",
        "gold|golden",
    ),
    "kin": (
        "brother|brothers",
        "sister|sisters",
        "wife|wives",
        "husband|husbands",
        "son|sons",
        "daughter|daughters",
        "mother|mothers|mum|mom",
        "father|fathers|dad",
        "uncle|uncles",
        "aunt|aunts",
        "nephew|nephews",
        "niece|nieces",
        "cousin|cousins",
        "grandfather|grandfathers",
        "grandmother|grandmothers",
        "grandson|grandsons",
        "granddaughter|granddaughters",
        "boyfriend|boyfriends",
        "girlfriend|girlfriends",
        "fiance|fiancé",
        "fiancee|fiancée",
    ),
    "gender": ("man|men", "woman|women", "boy|boys", "girl|girls"),
    "medal": ("gold", "silver", "bronze"),
    "season": ("spring", "summer", "autumn", "winter"),
    "direction": ("north|northern", "south|southern", "east|eastern", "west|western"),
    "relative_day": ("yesterday", "today", "tomorrow"),
    "period": (
        "hour|hours|hourly",
        "day|days|daily",
        "week|weeks|weekly",
        "month|months|monthly",
        "quarter|quarters|quarterly",
        "year|years|yearly|annual|annually",
        "decade|decades",
        "century|centuries",
    ),
    "ordinal": ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"),
    "distance": (
        "mile|miles",
        "kilometre|kilometres|kilometer|kilometers|km",
        "metre|metres|meter|meters",
        "foot|feet",
        "yard|yards",
        "inch|inches",
        "centimetre|centimetres|centimeter|centimeters|cm",
    ),
    "weight": ("gram|grams", "kilogram|kilograms|kg", "pound|pounds|lb|lbs", "ounce|ounces", "tonne|tonnes|ton|tons"),
    "currency": ("dollar|dollars", "euro|euros", "pound|pounds", "yen", "yuan", "rupee|rupees", "franc|francs"),
    "continent": (
        "africa|african",
        "asia|asian",
        "europe|european",
        "australia|australian",
        "antarctica",
        "america|american",
    ),
}
#: lower-case word -> {(set name, canonical member)}; a word may sit in more than one set ("pound").
EXCLUSIVE: dict[str, frozenset[tuple[str, str]]] = {}
for _name, _members in _EXCLUSIVE_SETS.items():
    for _member in _members:
        _member_forms = _member.split("|")
        for _form in _member_forms:
            EXCLUSIVE[_form] = EXCLUSIVE.get(_form, frozenset()) | {(_name, _member_forms[0])}
