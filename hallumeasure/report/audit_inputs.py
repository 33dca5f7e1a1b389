"""What an audit may compare: two runs measured alike, over the same samples.

An audit answers one question, "did the model get worse?", so everything else must be held
fixed. A run judged by another judge, extractor, mode, detector, prompt version, vote rule or
policy measures differently, and the audit would report the change of instrument as a change of
the model; runs over different samples compare different tasks. Each difference is refused
(exit code 2) with the flag that allows it; an allowed difference is listed in the outputs.
A run whose judge failed its own sanity checks (``pipeline/judge_checks.py``) measured nothing, and is
refused in the same way (``--allow-broken-judge``).
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from hallumeasure.core.errors import ConfigError
from hallumeasure.report.audit_settings import CHANGE_SWITCHES
from hallumeasure.report.runs import Pairing, pairing, votes_of
from hallumeasure.runs.run import Run

#: Each way of measuring a run, and the flag that lets an audit compare runs that differ in it.
CHANGE_FLAGS = {field: flag for field, (flag, _) in CHANGE_SWITCHES.items()}
#: The flag that lets an audit use runs whose judge failed its sanity checks.
BROKEN_FLAG = "--allow-broken-judge"


def _measured(run: Run) -> dict[str, str] | None:
    m = run.manifest
    if m is None:
        return None
    prompts = ", ".join(f"{k}@{v[:12]}" for k, v in sorted(m.prompts.items())) or "(none)"
    return {
        "judge": m.judge,
        "extractor": m.extractor,
        "mode": m.mode.value,
        "detector": str(m.detector),
        "prompts": prompts,
        "votes": votes_of(m),
        "policy": m.policy.describe(),
    }


def measurement_changes(base: Run, cur: Run) -> list[tuple[str, str]]:
    """(field, sentence) for every way in which the two runs were measured differently."""
    a, b = _measured(base), _measured(cur)
    if a is None or b is None:
        return []
    return [
        (field, f"{field} differs (baseline {base.name}: {a[field]}; current {cur.name}: {b[field]})")
        for field in CHANGE_FLAGS
        if a[field] != b[field]
    ]


class SampleOverlap:
    """How the two response tables' samples overlap: shared, and in each run."""

    def __init__(self, base_units: pd.DataFrame, cur_units: pd.DataFrame, paired: Pairing | None = None) -> None:
        paired = paired or pairing(base_units, cur_units)
        self.shared = len(paired.a)
        self.base = paired.samples_a
        self.current = paired.samples_b

    @property
    def complete(self) -> bool:
        return self.shared == self.base == self.current

    def describe(self) -> str:
        if self.shared == 0:
            return f"the runs share no samples ({self.base} in the baseline, {self.current} in the current run)"
        return (
            f"the runs share {self.shared} samples; {self.base - self.shared} are only in the baseline and "
            f"{self.current - self.shared} only in the current run"
        )


def check_audit_inputs(
    base: Run,
    cur: Run,
    overlap: SampleOverlap,
    *,
    allow_changes: Collection[str] = (),
    allow_mismatch: bool = False,
    allow_broken_judge: bool = False,
) -> list[str]:
    """Raise ``ConfigError`` naming every difference not allowed; return the allowed ones as sentences.

    ``allow_changes`` holds fields of ``CHANGE_FLAGS``; ``allow_mismatch`` allows different or
    partly shared samples and runs without a manifest; ``allow_broken_judge`` allows runs whose judge
    failed its sanity checks (``RunManifest.judge_checks``).
    """
    unknown = sorted(set(allow_changes) - set(CHANGE_FLAGS))
    if unknown:
        raise ConfigError(f"unknown changes to allow: {', '.join(unknown)}; known: {', '.join(CHANGE_FLAGS)}")
    refused: list[str] = []
    allowed: list[str] = []
    for run in (base, cur):
        if run.manifest is None:
            text = f"run {run.name} has no manifest, so how it was measured is unknown"
            (allowed if allow_mismatch else refused).append(text + ("" if allow_mismatch else " (--allow-mismatch)"))
    for field, text in measurement_changes(base, cur):
        if field in allow_changes:
            allowed.append(text)
        else:
            refused.append(f"{text} ({CHANGE_FLAGS[field]})")
    if not overlap.complete:
        if allow_mismatch:
            allowed.append(overlap.describe())
        else:
            refused.append(f"{overlap.describe()} (--allow-mismatch)")
    broken = broken_judges(base, cur)
    problems = []
    if refused:
        problems.append(
            "the audit compares like with like, and these runs differ: "
            + "; ".join(refused)
            + ". Each difference names the flag that allows it."
        )
    if broken and not allow_broken_judge:
        problems.append(
            "the audit needs a judge that works: "
            + "; ".join(broken)
            + f". Measure again with a judge that passes them, or add {BROKEN_FLAG} to audit anyway."
        )
    if problems:
        raise ConfigError(" ".join(problems))
    return allowed + broken


def broken_judges(*runs: Run) -> list[str]:
    """A sentence for each run whose judge failed its sanity checks, naming the checks and what was seen."""
    found = []
    for run in runs:
        checks = (run.manifest.judge_checks if run.manifest else None) or []
        if checks:
            seen = "; ".join(f"{c.name.value}: {c.seen}" for c in checks)
            found.append(f"the judge of run {run.name} failed its sanity checks ({seen})")
    return found


def undecided_column(run: Run) -> np.ndarray:
    """1.0 for responses a keyless judge marked undecided (``decided`` is false), else 0.0, in table order.

    Runs without a ``decided`` column (LLM judges, older runs) have no undecided responses.
    """
    responses = run.responses
    if "decided" not in responses.columns:
        return np.zeros(len(responses))
    flags: np.ndarray = (~responses["decided"].astype("boolean").fillna(True)).to_numpy(dtype=float)
    return flags
