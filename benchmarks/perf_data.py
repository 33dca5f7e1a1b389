"""Inputs for the performance benchmarks: SummEval-sized responses, and cheap synthetic ones.

SummEval pairs CNN/DailyMail articles with 3-4 sentence summaries. BUMP (in ../shared/data) is
built on the same articles, so its records are used when present; otherwise a deterministic
generator writes article-sized contexts and summary-sized responses.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

from hallumeasure.core.types import Sample
from hallumeasure.runs.datasets import data_dir

CLONE_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # a clone's labelled sets, beside it

_NAMES = [
    "Harwick Council",
    "Lena Ortiz",
    "the ministry",
    "Northgate Rail",
    "Dr Amal Chen",
    "the union",
    "Brightwater Ltd",
    "the mayor",
    "Professor Ida Berg",
    "the club",
]
_THINGS = [
    "the tram line",
    "the new hospital wing",
    "the river bridge",
    "the school budget",
    "the stadium plan",
    "the flood barrier",
    "the research grant",
    "the wind farm",
]
_VERBS = ["announced", "approved", "delayed", "criticised", "defended", "funded", "reviewed", "cancelled"]


def summeval_sized(n: int, *, seed: int = 13) -> tuple[list[Sample], str]:
    """``n`` SummEval-sized samples and a note saying where they came from."""
    path = (data_dir() or CLONE_DATA) / "bump.jsonl"
    if path.exists():
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        rows = [r for r in rows if r["context"].strip() and r["response"].strip()]
        random.Random(seed).shuffle(rows)
        picked = [rows[i % len(rows)] for i in range(n)]
        samples = [
            Sample(id=f"{r['id']}#{i}", context=r["context"], response=r["response"]) for i, r in enumerate(picked)
        ]
        return samples, f"BUMP (CNN/DailyMail articles and summaries, as SummEval), {path.name}, seed {seed}"
    return [synthetic(i, sentences=24) for i in range(n)], "synthetic article-sized samples (no shared data found)"


def synthetic(i: int, *, sentences: int = 3) -> Sample:
    """A deterministic sample: a context of ``sentences`` sentences and a 2-3 sentence response
    whose facts are partly changed (numbers, names, verbs)."""
    r = random.Random(i)
    facts = []
    for _ in range(max(2, sentences)):
        who, what, verb = r.choice(_NAMES), r.choice(_THINGS), r.choice(_VERBS)
        facts.append((who, verb, what, r.randint(2, 900), r.randint(1995, 2025)))
    context = " ".join(
        f"{who.capitalize()} {verb} {what} on Monday, at a cost of {n} million pounds, a plan first drawn up in {y}."
        for who, verb, what, n, y in facts
    )
    said = []
    for who, verb, what, n, _year in facts[: r.randint(2, 3)]:
        if r.random() < 0.3:
            n += r.randint(1, 9)
        if r.random() < 0.2:
            verb = r.choice(_VERBS)
        said.append(f"{who.capitalize()} {verb} {what}, which will cost {n} million pounds.")
    return Sample(id=f"syn{i}", context=context, response=" ".join(said))


def synthetic_stream(n: int) -> Iterator[Sample]:
    for i in range(n):
        yield synthetic(i)
