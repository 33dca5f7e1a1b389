"""Paths to test inputs: the bundled examples and (when present) ../shared/data."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "samples.jsonl"
SHARED_DATA = REPO.parent / "shared" / "data"
