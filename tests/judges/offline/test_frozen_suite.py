"""The frozen test suite (tests/judges/offline/contrast/frozen/) is never edited after it was committed: tuning
happens on the dev suite only, so that its figures stay out of sample."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

FROZEN = Path(__file__).resolve().parent / "contrast" / "frozen" / "pairs.jsonl"
SHA256 = "a23764e23493fe41f813514ac98089a2b23c11e9980abe752cd8f6a909a8f46f"


def test_the_frozen_suite_is_unchanged() -> None:
    assert hashlib.sha256(FROZEN.read_bytes()).hexdigest() == SHA256, (
        "tests/judges/offline/contrast/frozen/pairs.jsonl changed: the frozen suite must never be edited"
    )


def test_the_frozen_suite_is_well_formed() -> None:
    rows = [json.loads(line) for line in FROZEN.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 400
    assert len({r["id"] for r in rows}) == len(rows)
    assert all(set(r) == {"id", "kind", "expected", "subtype", "context", "claim"} for r in rows)
    assert all(r["kind"].split(":")[0] == r["expected"] for r in rows)
    kinds = Counter(r["kind"] for r in rows)
    for kind in [
        "changed:modality",
        "changed:comparative",
        "changed:superlative",
        "changed:attribution",
        "changed:group_all",
        "changed:plan_vs_done",
        "changed:hyperbole",
        "changed:cause",
    ]:
        assert kinds[kind] >= 10, kind
