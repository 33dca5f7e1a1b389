"""Large synthetic runs, written straight into a run store, for tests and benchmarks of readers at scale.

``write_large_run(path, n)`` stores ``n`` responses of one to four claims each, every claim judged
``supported`` or ``contradicted`` (subtype ``number``) by a hash of its sample and position, with each
result's counts, rate, flag and decision worked out from its claims exactly as a measured run stores them,
and a complete manifest. The rows go in with SQL inserts through ``RunStore``'s own schema, not as
result objects, so a million responses take about a minute.

Two runs written with the same ``n`` share their sample ids and contexts (they pair in an audit);
``rise`` adds to the share of contradicted claims and ``changed`` is the share of responses whose text
differs from the baseline's (a hash of the id picks them).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from hallumeasure.core.labels import Policy
from hallumeasure.core.sample_features import style, task_key
from hallumeasure.core.types import Mode, RunManifest, Usage
from hallumeasure.runs.store import RunStore

#: Rows written per transaction.
CHUNK = 50_000
_USAGE = Usage().model_dump_json()


def _uniform(ids: np.ndarray, salt: int) -> np.ndarray:
    """A uniform number in [0, 1) for each integer id, the same on every call (a multiplicative hash)."""
    mixed = (ids.astype(np.uint64) + np.uint64(salt)) * np.uint64(0x9E3779B97F4A7C15)
    mixed ^= mixed >> np.uint64(29)
    mixed *= np.uint64(0xBF58476D1CE4E5B9)
    mixed ^= mixed >> np.uint64(32)
    return (mixed >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def write_large_run(
    path: str | Path,
    n: int,
    *,
    unsupported_share: float = 0.10,
    rise: float = 0.0,
    changed: float = 0.0,
    salt: int = 0,
    judge: str = "test-judge",
    features: bool = True,
) -> Path:
    """Write a complete run of ``n`` synthetic responses into ``path`` (a new directory) and return it.

    Each claim is contradicted with probability ``unsupported_share + rise``; ``salt`` draws other labels
    for the same samples (two runs with different salts differ by chance alone). ``features=False`` leaves out
    the samples' stored features, as a run written before they were stored."""
    path = Path(path)
    with RunStore(path, write=True) as store:
        for start in range(0, n, CHUNK):
            ids = np.arange(start, min(start + CHUNK, n))
            _write_chunk(store, ids, unsupported_share + rise, changed, salt, features=features)
        store.write_manifest(
            RunManifest(
                run_id=path.name,
                package_version="synthetic",
                input_sha256=hashlib.sha256(f"synthetic {n}".encode()).hexdigest(),
                n_samples=n,
                extractor="test-extractor",
                judge=judge,
                mode=Mode.COT_ONE,
                policy=Policy(),
                prompts={"classify_cot_one.v1": "a" * 64},
                started_at=datetime(2025, 1, 1, tzinfo=UTC),
                finished_at=datetime(2025, 1, 1, tzinfo=UTC),
                status="complete",
                counts={"samples": n, "results": n},
            )
        )
    return path


def _write_chunk(store: RunStore, ids: np.ndarray, share: float, changed: float, salt: int, *, features: bool) -> None:
    n_claims = 1 + (_uniform(ids, 7) * 4).astype(int)
    bad = np.stack([_uniform(ids, 100 + salt * 16 + j) < share for j in range(4)], axis=1)
    bad &= np.arange(4)[None, :] < n_claims[:, None]
    n_bad = bad.sum(axis=1)
    moved = _uniform(ids, 3) < changed
    rate = n_bad / n_claims
    db = store.db
    texts = [
        (
            f"s{i}",
            f"The bridge number {i} is 24 km long. It opened in 2019.",
            f"The bridge number {i} is {42 if m else 24} km long.",
        )
        for i, m in zip(ids.tolist(), moved.tolist(), strict=True)
    ]
    with db:
        db.executemany(
            "INSERT INTO samples VALUES (?, ?, NULL, ?, ?, NULL, '[]', '{}')",
            ((sid, int(i), context, response) for (sid, context, response), i in zip(texts, ids.tolist(), strict=True)),
        )
        if features:
            db.executemany("INSERT INTO sample_features VALUES (?, ?, ?, ?, ?)", (_features(*t) for t in texts))
        db.executemany("INSERT INTO claims VALUES (?, ?, ?, ?, '[]')", _claims(ids, n_claims))
        db.executemany(
            "INSERT INTO verdicts (claim_id, sample_id, label_reason, label, subtype_reason, subtype, judge,"
            " confident) VALUES (?, ?, 'synthetic', ?, ?, ?, 'test-judge', 1)",
            _verdicts(ids, n_claims, bad),
        )
        db.executemany(
            "INSERT INTO results (sample_id, model, n_claims, n_evaluated, n_unsupported, n_errors, unsupported_rate,"
            " hallucinated, score, error, label_counts, subtype_counts, usage, decided, unsupported_rate_low,"
            " unsupported_rate_high) VALUES (?, NULL, ?, ?, ?, 0, ?, ?, NULL, NULL, ?, ?, ?, 1, ?, ?)",
            (
                (f"s{i}", k, k, b, r, int(b > 0), _label_counts(k, b), _subtype_counts(b), _USAGE, r, r)
                for i, k, b, r in zip(ids.tolist(), n_claims.tolist(), n_bad.tolist(), rate.tolist(), strict=True)
            ),
        )


def _features(sample_id: str, context: str, response: str) -> tuple[str, str, int, float | None, int]:
    words, overlap, response_hash = style(response, context)
    return sample_id, task_key(context, None), words, None if math.isnan(overlap) else overlap, response_hash


def _claims(ids: np.ndarray, n_claims: np.ndarray) -> Iterator[tuple[str, str, int, str]]:
    for i, k in zip(ids.tolist(), n_claims.tolist(), strict=True):
        for j in range(k):
            yield f"s{i}:c{j}", f"s{i}", j, f"Claim {j} about bridge {i}."


def _verdicts(
    ids: np.ndarray, n_claims: np.ndarray, bad: np.ndarray
) -> Iterator[tuple[str, str, str, str | None, str | None]]:
    for i, k, row in zip(ids.tolist(), n_claims.tolist(), bad.tolist(), strict=True):
        for j in range(k):
            if row[j]:
                yield f"s{i}:c{j}", f"s{i}", "contradicted", "synthetic", "number"
            else:
                yield f"s{i}:c{j}", f"s{i}", "supported", None, None


def _label_counts(k: int, bad: int) -> str:
    counts = {"supported": k - bad, "contradicted": bad}
    return json.dumps({label: count for label, count in counts.items() if count})


def _subtype_counts(bad: int) -> str:
    return json.dumps({"number": bad} if bad else {})
