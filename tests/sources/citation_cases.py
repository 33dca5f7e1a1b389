"""A hand-written set of RAG answers with planted citation errors, for the citation checks.

Ten topics, each with three short passages. Each answer is a list of sentences; each sentence says
which passage ids it cites and what the citation check must find for it:

- ``correct``: copied from a passage and citing it;
- ``wrong_passage``: copied from one passage, citing another;
- ``uncited``: copied from a passage, citing nothing;
- ``cited_contradicts``: a figure changed, citing the passage that gives the right figure;
- ``cited_unsupported``: a sentence no passage backs, with a citation.

The errors are lexical on purpose (a copied sentence, a changed number, invented words), so that
the offline judge, which reads words and numbers, can find every one of them.
"""

from __future__ import annotations

from hallumeasure.core.types import Passage, Sample

TOPICS: dict[str, tuple[str, str, str]] = {
    "bridge": (
        "The Orwell Bridge is 24 kilometres long. It carries the A14 road over the estuary.",
        "Construction of the Orwell Bridge began in 1979. The bridge opened to traffic in 1982.",
        "The bridge deck is made of prestressed concrete. Wind barriers were added in 2021.",
    ),
    "library": (
        "Harlow Library holds 120,000 books. The library employs 35 staff.",
        "Harlow Library opens at 9 am on weekdays. On Sundays the library is closed.",
        "A children's wing was added to Harlow Library in 2015. The wing cost 3 million pounds.",
    ),
    "volcano": (
        "Mount Keller last erupted in 1914. The eruption lasted eleven days.",
        "Mount Keller rises 2,840 metres above sea level. Its summit holds a crater lake.",
        "About 400 people live in the village of Brenna below Mount Keller. The village grows apples.",
    ),
    "museum": (
        "The Lindqvist Museum was founded in 1923. The museum displays Nordic textiles.",
        "The Lindqvist Museum welcomed 210,000 visitors last year. Entry costs 12 euros.",
        "The museum's director is Karin Holm. Karin Holm previously ran a gallery in Oslo.",
    ),
    "river": (
        "The Tamsa River is 412 kilometres long. It flows into the Baltic Sea.",
        "Salmon return to the Tamsa River every autumn. Fishing is banned in October.",
        "A dam on the Tamsa River was built in 1961. The dam produces 90 megawatts.",
    ),
    "school": (
        "Riverside School has 640 pupils. The school teaches pupils aged 11 to 16.",
        "Riverside School was rated outstanding in 2019. Inspectors praised its science teaching.",
        "The school day at Riverside School starts at 8.40 am. Lessons end at 3.15 pm.",
    ),
    "train": (
        "The Coastal Express runs between Alder and Penmoor. The journey takes 95 minutes.",
        "The Coastal Express has six carriages. One carriage is reserved for bicycles.",
        "Tickets for the Coastal Express cost 18 pounds. Children travel for half price.",
    ),
    "forest": (
        "Greywood Forest covers 5,200 hectares. Most of its trees are beech and oak.",
        "Red deer live in Greywood Forest. Rangers counted 380 deer in the spring survey.",
        "Greywood Forest has 14 marked trails. The longest trail is 22 kilometres.",
    ),
    "festival": (
        "The Marrow Folk Festival takes place every July. It lasts three days.",
        "The Marrow Folk Festival sold 9,000 tickets this year. Camping is included in the ticket.",
        "The festival was first held in 1988 in a farmer's field. It moved to Marrow Park in 2004.",
    ),
    "telescope": (
        "The Hale Ridge telescope has a mirror 4 metres wide. It observes in infrared light.",
        "The Hale Ridge telescope stands at 3,100 metres. Clear skies allow 280 observing nights a year.",
        "The Hale Ridge telescope cost 85 million dollars. It was funded by four universities.",
    ),
}

# Sentence lists per answer: (sentence, cited passage ids, expected finding).
C, W, U, X, N = "correct", "wrong_passage", "uncited", "cited_contradicts", "cited_unsupported"

ANSWERS: list[tuple[str, list[tuple[str, tuple[str, ...], str]]]] = [
    (
        "bridge",
        [("The Orwell Bridge is 24 kilometres long.", ("1",), C), ("The bridge opened to traffic in 1982.", ("1",), W)],
    ),
    (
        "bridge",
        [
            ("Construction of the Orwell Bridge began in 1979.", ("2",), C),
            ("The bridge deck is made of prestressed concrete.", (), U),
        ],
    ),
    (
        "bridge",
        [("The Orwell Bridge is 31 kilometres long.", ("1",), X), ("Wind barriers were added in 2021.", ("3",), C)],
    ),
    (
        "bridge",
        [
            ("The Orwell Bridge carries the A14 road over the estuary.", ("1",), C),
            ("The bridge was painted bright orange by Italian artists.", ("2",), N),
        ],
    ),
    ("library", [("Harlow Library holds 120,000 books.", ("1",), C), ("On Sundays the library is closed.", ("3",), W)]),
    (
        "library",
        [
            ("Harlow Library employs 35 staff.", ("1",), C),
            ("A children's wing was added to Harlow Library in 2015.", (), U),
        ],
    ),
    (
        "library",
        [("Harlow Library opens at 7 am on weekdays.", ("2",), X), ("The wing cost 3 million pounds.", ("3",), C)],
    ),
    (
        "library",
        [
            ("Harlow Library opens at 9 am on weekdays.", ("2",), C),
            ("The library runs a popular chess tournament for veterans.", ("1",), N),
        ],
    ),
    (
        "volcano",
        [
            ("Mount Keller last erupted in 1914.", ("1",), C),
            ("Mount Keller rises 2,840 metres above sea level.", ("3",), W),
        ],
    ),
    (
        "volcano",
        [
            ("The eruption of Mount Keller lasted eleven days.", ("1",), C),
            ("The village of Brenna grows apples.", (), U),
        ],
    ),
    (
        "volcano",
        [
            ("Mount Keller last erupted in 1958.", ("1",), X),
            ("The summit of Mount Keller holds a crater lake.", ("2",), C),
        ],
    ),
    (
        "volcano",
        [
            ("About 400 people live in the village of Brenna below Mount Keller.", ("3",), C),
            ("Geologists expect Mount Keller to erupt again within a decade.", ("1",), N),
        ],
    ),
    (
        "museum",
        [
            ("The Lindqvist Museum was founded in 1923.", ("1",), C),
            ("Entry to the Lindqvist Museum costs 12 euros.", ("3",), W),
        ],
    ),
    (
        "museum",
        [
            ("The Lindqvist Museum displays Nordic textiles.", ("1",), C),
            ("The museum's director is Karin Holm.", (), U),
        ],
    ),
    (
        "museum",
        [
            ("The Lindqvist Museum welcomed 450,000 visitors last year.", ("2",), X),
            ("Karin Holm previously ran a gallery in Oslo.", ("3",), C),
        ],
    ),
    (
        "museum",
        [
            ("The Lindqvist Museum welcomed 210,000 visitors last year.", ("2",), C),
            ("The museum cafe serves famous cinnamon buns baked daily.", ("2",), N),
        ],
    ),
    (
        "river",
        [
            ("The Tamsa River is 412 kilometres long.", ("1",), C),
            ("Salmon return to the Tamsa River every autumn.", ("3",), W),
        ],
    ),
    (
        "river",
        [
            ("The Tamsa River flows into the Baltic Sea.", ("1",), C),
            ("A dam on the Tamsa River was built in 1961.", (), U),
        ],
    ),
    (
        "river",
        [
            ("The Tamsa River is 590 kilometres long.", ("1",), X),
            ("Fishing on the Tamsa River is banned in October.", ("2",), C),
        ],
    ),
    (
        "river",
        [
            ("The dam on the Tamsa River produces 90 megawatts.", ("3",), C),
            ("Kayakers from Poland race down the river every summer.", ("1",), N),
        ],
    ),
    (
        "school",
        [
            ("Riverside School has 640 pupils.", ("1",), C),
            ("Riverside School was rated outstanding in 2019.", ("3",), W),
        ],
    ),
    (
        "school",
        [
            ("Riverside School teaches pupils aged 11 to 16.", ("1",), C),
            ("Inspectors praised the science teaching at Riverside School.", (), U),
        ],
    ),
    (
        "school",
        [("Riverside School has 910 pupils.", ("1",), X), ("Lessons at Riverside School end at 3.15 pm.", ("3",), C)],
    ),
    (
        "school",
        [
            ("The school day at Riverside School starts at 8.40 am.", ("3",), C),
            ("Its football team won the national trophy with a famous coach.", ("2",), N),
        ],
    ),
    (
        "train",
        [
            ("The Coastal Express runs between Alder and Penmoor.", ("1",), C),
            ("The Coastal Express has six carriages.", ("3",), W),
        ],
    ),
    (
        "train",
        [
            ("The Coastal Express journey takes 95 minutes.", ("1",), C),
            ("Tickets for the Coastal Express cost 18 pounds.", (), U),
        ],
    ),
    (
        "train",
        [
            ("The Coastal Express journey takes 140 minutes.", ("1",), X),
            ("One carriage of the Coastal Express is reserved for bicycles.", ("2",), C),
        ],
    ),
    (
        "train",
        [
            ("Children travel on the Coastal Express for half price.", ("3",), C),
            ("The trains serve hot breakfast prepared by a celebrated chef.", ("1",), N),
        ],
    ),
    (
        "forest",
        [("Greywood Forest covers 5,200 hectares.", ("1",), C), ("Greywood Forest has 14 marked trails.", ("2",), W)],
    ),
    (
        "forest",
        [("Most trees in Greywood Forest are beech and oak.", ("1",), C), ("Red deer live in Greywood Forest.", (), U)],
    ),
    (
        "forest",
        [
            ("Rangers counted 725 deer in the spring survey.", ("2",), X),
            ("The longest trail in Greywood Forest is 22 kilometres.", ("3",), C),
        ],
    ),
    (
        "forest",
        [
            ("Rangers counted 380 deer in the spring survey.", ("2",), C),
            ("Wolves were reintroduced to the woods by a Scottish charity.", ("1",), N),
        ],
    ),
    (
        "festival",
        [
            ("The Marrow Folk Festival takes place every July.", ("1",), C),
            ("The Marrow Folk Festival sold 9,000 tickets this year.", ("3",), W),
        ],
    ),
    (
        "festival",
        [
            ("The Marrow Folk Festival lasts three days.", ("1",), C),
            ("The festival moved to Marrow Park in 2004.", (), U),
        ],
    ),
    (
        "festival",
        [
            ("The Marrow Folk Festival sold 16,000 tickets this year.", ("2",), X),
            ("The festival was first held in 1988 in a farmer's field.", ("3",), C),
        ],
    ),
    (
        "festival",
        [
            ("Camping is included in the Marrow Folk Festival ticket.", ("2",), C),
            ("Headline acts included a Grammy winning banjo quartet.", ("1",), N),
        ],
    ),
    (
        "telescope",
        [
            ("The Hale Ridge telescope has a mirror 4 metres wide.", ("1",), C),
            ("The Hale Ridge telescope cost 85 million dollars.", ("2",), W),
        ],
    ),
    (
        "telescope",
        [
            ("The Hale Ridge telescope observes in infrared light.", ("1",), C),
            ("The Hale Ridge telescope stands at 3,100 metres.", (), U),
        ],
    ),
    (
        "telescope",
        [
            ("The Hale Ridge telescope has a mirror 9 metres wide.", ("1",), X),
            ("The Hale Ridge telescope was funded by four universities.", ("3",), C),
        ],
    ),
    (
        "telescope",
        [
            ("Clear skies allow 280 observing nights a year at Hale Ridge.", ("2",), C),
            ("Astronomers there discovered a comet named after a poet.", ("3",), N),
        ],
    ),
]


def citation_samples() -> list[Sample]:
    """The answers as samples: passages with ids 1..3, sentences followed by their citation markers."""
    samples = []
    for number, (topic, sentences) in enumerate(ANSWERS):
        passages = tuple(
            Passage(id=str(i), text=text, title=f"{topic} {i}") for i, text in enumerate(TOPICS[topic], start=1)
        )
        response = " ".join(s[:-1] + "".join(f" [{c}]" for c in cites) + s[-1] for s, cites, _ in sentences)
        samples.append(Sample(id=f"{topic}-{number}", passages=passages, response=response))
    return samples


def expected_findings() -> list[str]:
    return [finding for _, sentences in ANSWERS for _, _, finding in sentences]
