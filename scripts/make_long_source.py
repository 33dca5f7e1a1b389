"""Write a JSONL with one very long source (about 200 pages by default) and a few answers about it.

    .venv/bin/python scripts/make_long_source.py --pages 200 --out /tmp/long_source.jsonl

The source is a made-up municipal yearbook: one chapter per district, each with its own figures,
so that every answer's claims are backed (or contradicted) by one paragraph somewhere in it. The
answers are written here, with two planted errors (a wrong figure and a wrong name). Nothing is
downloaded; the same arguments always give the same file.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

#: About this many words make a printed page.
WORDS_PER_PAGE = 450
_TREES = ("oak", "lime", "plane", "birch", "maple", "rowan")
_TRADES = ("bakeries", "bookshops", "repair workshops", "bicycle shops", "grocers")
_SURNAMES = ("Okafor", "Lindgren", "Moreau", "Tanaka", "Novak", "Reyes")


def district(number: int, rng: random.Random) -> tuple[str, dict]:
    facts = {
        "name": f"District {number}",
        "schools": rng.randint(2, 30),
        "tree": rng.choice(_TREES),
        "trees": rng.randint(200, 9000),
        "trade": rng.choice(_TRADES),
        "shops": rng.randint(3, 80),
        "mayor": f"councillor {rng.choice('ABCDEFGHJKLMNPRSTW')}. {rng.choice(_SURNAMES)}-{number}",
        "year": rng.randint(1850, 1990),
    }
    paragraph = (
        f"{facts['name']} was founded in {facts['year']}. It has {facts['schools']} schools and "
        f"{facts['trees']} street trees, most of them {facts['tree']} trees. The district council is led by "
        f"{facts['mayor']}. Local trade is known for its {facts['shops']} {facts['trade']}. "
    )
    filler = " ".join(
        f"In week {w} of the year the {facts['name']} maintenance crews inspected pavements, lamps and drains "
        f"along route {number}-{w}, and reported the work in the council bulletin."
        for w in range(1, 9)
    )
    return paragraph + filler, facts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--out", default="long_source.jsonl")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    chapters, facts, words, number = [], [], 0, 1
    while words < args.pages * WORDS_PER_PAGE:
        text, known = district(number, rng)
        chapters.append(text)
        facts.append(known)
        words += len(text.split())
        number += 1
    source = "\n\n".join(chapters)
    picked = [facts[len(facts) // 7], facts[len(facts) // 2], facts[-3]]
    a, b, c = picked
    rows = [
        {
            "id": "yearbook-1",
            "model": "assistant",
            "question": f"Tell me about {a['name']}.",
            "context": source,
            "response": f"{a['name']} was founded in {a['year']}. It has {a['schools']} schools. "
            f"Most of its street trees are {a['tree']} trees.",
        },
        {
            "id": "yearbook-2",
            "model": "assistant",
            "question": f"Who leads {b['name']}?",
            "context": source,
            "response": f"The district council of {b['name']} is led by {b['mayor']}. "
            f"{b['name']} has {b['trees'] + 1500} street trees.",
        },
        {
            "id": "yearbook-3",
            "model": "assistant",
            "question": f"What is {c['name']} known for?",
            "context": source,
            "response": f"Local trade in {c['name']} is known for its {c['shops']} {c['trade']}. "
            f"The district council of {c['name']} is led by councillor Z. Fontaine.",
        },
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    print(
        f"wrote {args.out}: {len(rows)} answers over one source of {words:,} words "
        f"(~{words // WORDS_PER_PAGE} pages, {len(source):,} characters)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
