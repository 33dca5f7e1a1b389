"""No code recovers from a message what the code that wrote it knew (issue #43, "meaning in types").

A reason or an error is text for people. What code needs from it (the kind of an error row, what a row
problem lacks, the odds of a keyless verdict) is carried as a field and the text is rendered from the fields
when it is shown. Each rule below is one way the package used to read meaning back out of prose; the test
greps ``hallumeasure/`` for it. A legitimate match is allowed in ``ALLOWED`` with the reason it is one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "hallumeasure"


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    why: str
    #: The line this rule was written against (it must match, so that the rule can fail).
    example: str


RULES = (
    Rule(
        "split-reason",
        re.compile(r"(reason|message|error|msg)[^#\n]*\.(rsplit|split|partition|rpartition)\(\s*[\"']"),
        "a reason or message cut at a separator to rebuild it: keep its parts in fields and render once",
        'tail = (verdict.label_reason or "").rsplit(" (P(unsupported)", 1)',
    ),
    Rule(
        "message-prefix",
        re.compile(r"(error|message|reason|msg|problem)\w*\)?\.(startswith|endswith)\("),
        "an error or message asked what it begins with to learn its kind: carry the kind as a field",
        'hint = f" {column_hint}" if problems and problems[0].message.startswith("has no ") else ""',
    ),
    Rule(
        "sql-error-text",
        re.compile(r"substr\(\s*error|\berror\s+(NOT\s+)?(LIKE|GLOB)\b", re.IGNORECASE),
        "stored rows found by the text of their error: store the kind in its own column and query that",
        'rows = self.db.execute("SELECT sample_id FROM results WHERE substr(error, 1, ?) = ?", (len(p), p))',
    ),
    Rule(
        "temp-path-replace",
        re.compile(r"\.replace\(\s*str\(\s*\w*(path|tmp|temp|folder)\w*\s*\)"),
        "a temporary file's path patched out of a message: read the data in memory and name it in the message",
        "raise InputError(str(exc).replace(str(path), name)) from None",
    ),
)


@dataclass(frozen=True)
class Allowed:
    """A legitimate match: the file under hallumeasure/, the rule, a fragment of the line, and why."""

    file: str
    rule: str
    fragment: str
    why: str


ALLOWED = (
    Allowed(
        "runs/store.py",
        "sql-error-text",
        "UPDATE results SET error_kind = CASE WHEN substr(error",
        "the one-time migration of runs stored before error_kind existed (RunStore._migrate_error_kinds): "
        "their over-limit rows can only be known by the text they were written with",
    ),
)


@dataclass(frozen=True)
class Match:
    file: str
    number: int
    line: str
    rule: Rule

    def allowed_by(self, allowed: Allowed) -> bool:
        return (self.file, self.rule.name) == (allowed.file, allowed.rule) and allowed.fragment in self.line


def _matches() -> list[Match]:
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        relative = path.relative_to(PACKAGE_DIR).as_posix()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            found += [Match(relative, number, line.strip(), rule) for rule in RULES if rule.pattern.search(line)]
    return found


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_each_rule_catches_the_code_it_was_written_against(rule: Rule) -> None:
    assert rule.pattern.search(rule.example)


def test_no_code_reads_meaning_back_out_of_a_message() -> None:
    bad = [m for m in _matches() if not any(m.allowed_by(a) for a in ALLOWED)]
    assert not bad, "\n".join(f"{m.file}:{m.number}: {m.line}\n    ({m.rule.why})" for m in bad)


def test_every_allowance_still_matches() -> None:
    """An allowance whose code has gone is removed, so that the list says only what is still true."""
    found = _matches()
    stale = [a for a in ALLOWED if not any(m.allowed_by(a) for m in found)]
    assert not stale, f"remove from ALLOWED: {stale}"
