"""The second blind suite (written by someone who saw neither the code nor any result) is frozen: never edited.

Its figure is published once, as aggregates only (benchmarks/results/blind2.md); nothing is tuned on it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

HERE = Path(__file__).parent / "blind2"
FROZEN = {
    "cases.jsonl": "099b5b7133aca696b0131f6065d231bd962225fb55240b7646f5a670fb2a2f5d",
    "README.md": "1183c71f76fec18cc874b763170eb47c07d14dd715af59918770a96259c4117f",
}


def test_the_blind_suite_files_are_byte_for_byte_as_delivered() -> None:
    for name, sha in FROZEN.items():
        assert hashlib.sha256((HERE / name).read_bytes()).hexdigest() == sha, f"{name} was edited"
