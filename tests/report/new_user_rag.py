"""The new user's audit of issue #45: ten faithful RAG answers copied to 60, against the same 60 with planted errors.

Each answer copies two sentences of its retrieved passage, so a faithful answer is faithful word for word.
The planted errors change a number or a name in one sentence of every answer (each answer then has one
claim of two that its source contradicts: a rise of about 0.4 to 0.5 in the mean unsupported rate).
"""

from __future__ import annotations

import json
from pathlib import Path

#: (question, passage, faithful answer, answer with a planted error)
ANSWERS = [
    (
        "How tall is the Eiffel Tower?",
        "The Eiffel Tower is 330 metres tall. It was completed in 1889 for the World's Fair in Paris. "
        "About seven million people visit it every year.",
        "Standing at roughly 330 metres, the tower was finished in 1889, in time for the Paris World's Fair, "
        "and it draws around seven million visitors a year.",
        "Standing at roughly 450 metres, the tower was finished in 1899, in time for the Paris World's Fair, "
        "and it draws around seven million visitors a year.",
    ),
    (
        "When did the Berlin Wall fall?",
        "The Berlin Wall fell on 9 November 1989. It had divided the city for 28 years. "
        "Germany was reunified less than a year later.",
        "The wall came down on 9 November 1989 after splitting Berlin for 28 years, and reunification "
        "followed within a year.",
        "The wall came down on 9 November 1991 after splitting Berlin for 35 years, and reunification "
        "followed within a year.",
    ),
    (
        "How many people live in Norway?",
        "Norway has a population of about 5.5 million people. Its capital is Oslo. "
        "Most people live in the south of the country.",
        "Roughly 5.5 million people live in Norway, mostly in the south, and Oslo is the capital.",
        "Roughly 9.5 million people live in Norway, mostly in the north, and Bergen is the capital.",
    ),
    (
        "Who wrote Pride and Prejudice?",
        "Pride and Prejudice was written by Jane Austen. It was first published in 1813 by Thomas Egerton. "
        "The novel follows Elizabeth Bennet.",
        "Jane Austen is the author; Thomas Egerton first brought the novel, which follows Elizabeth Bennet, "
        "to print in 1813.",
        "Charlotte Bronte is the author; Thomas Egerton first brought the novel, which follows Elizabeth Bennet, "
        "to print in 1843.",
    ),
    (
        "How long is the Danube?",
        "The Danube is 2,850 kilometres long. It flows through ten countries. It ends in the Black Sea.",
        "Running for some 2,850 kilometres across ten countries, the Danube finally empties into the Black Sea.",
        "Running for some 4,100 kilometres across twelve countries, the Danube finally empties into the Baltic Sea.",
    ),
    (
        "When was the first Moon landing?",
        "Apollo 11 landed on the Moon on 20 July 1969. Neil Armstrong was the first person to walk on its "
        "surface. Buzz Aldrin followed him.",
        "The first crewed landing was Apollo 11 on 20 July 1969; Neil Armstrong stepped out first, with "
        "Buzz Aldrin after him.",
        "The first crewed landing was Apollo 11 on 20 July 1972; Buzz Aldrin stepped out first, with "
        "Neil Armstrong after him.",
    ),
    (
        "How much does the battery hold?",
        "The X200 battery holds 75 kilowatt-hours. A full charge takes about 8 hours on a home charger. "
        "A fast charger fills it to 80 percent in 30 minutes.",
        "Its battery stores 75 kWh: a home charger needs around 8 hours for a full charge, while a fast "
        "charger reaches 80 percent in half an hour.",
        "Its battery stores 120 kWh: a home charger needs around 3 hours for a full charge, while a fast "
        "charger reaches 80 percent in half an hour.",
    ),
    (
        "What is the boiling point of water at sea level?",
        "At sea level water boils at 100 degrees Celsius. On Mount Everest it boils at about 70 degrees. "
        "Lower air pressure lowers the boiling point.",
        "Water boils at 100 degrees Celsius at sea level, but only at about 70 degrees on Everest, because "
        "the air pressure there is lower.",
        "Water boils at 100 degrees Celsius at sea level, but only at about 45 degrees on Everest, because "
        "the air pressure there is higher.",
    ),
    (
        "Who founded the company?",
        "The company was founded by Maria Lopez in 2004. It now employs 1,200 people. Its headquarters are in Madrid.",
        "Maria Lopez started the company in 2004; today it has about 1,200 employees and is based in Madrid.",
        "Ana Garcia started the company in 2009; today it has about 3,400 employees and is based in Madrid.",
    ),
    (
        "How many moons does Mars have?",
        "Mars has two small moons, Phobos and Deimos. Phobos orbits Mars three times a day. "
        "Deimos is the smaller of the two.",
        "Mars is circled by two small moons: Phobos, which goes around it three times a day, and the "
        "even smaller Deimos.",
        "Mars is circled by four small moons: Phobos, which goes around it five times a day, and the "
        "even larger Deimos.",
    ),
]


def write_answers(folder: Path, copies: int = 6) -> tuple[Path, Path]:
    """(faithful.jsonl, planted.jsonl): each answer copied ``copies`` times, the same ids in both files."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"faithful": folder / "faithful.jsonl", "planted": folder / "planted.jsonl"}
    for which, path in files.items():
        rows = []
        for copy in range(copies):
            for i, (question, passage, faithful, planted) in enumerate(ANSWERS):
                rows.append(
                    {
                        "id": f"q{copy * len(ANSWERS) + i}",
                        "user_input": question,
                        "retrieved_contexts": [passage],
                        "response": faithful if which == "faithful" else planted,
                    }
                )
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return files["faithful"], files["planted"]
