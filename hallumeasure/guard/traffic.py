"""The guard's traffic log: a sampled, opt-in record of checked requests and decisions, for monitoring.

``hallumeasure serve --log-sample 0.05 --log-dir DIR`` appends one JSON line per sampled request to
``DIR/traffic.jsonl``: the request (source and response text: that is what a later LLM judge must
see), the guard's decision and verdict summary, and the time. Each line is written whole with one
call under a lock, so a reader (``hallumeasure monitor``) sees complete lines; a line torn by a crash
is the last one, and readers skip and count it. The log only appends, so a restarted server goes on
writing to the same file.
"""

from __future__ import annotations

import json
import os
import random
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from hallumeasure.guard.core import CheckRequest, CheckResult

TRAFFIC_FILE = "traffic.jsonl"


class TrafficRecord(BaseModel):
    """One sampled request with what the guard decided."""

    request_id: str
    time: str
    request: CheckRequest
    decision: str
    hallucinated: bool | None
    decided: bool | None
    n_claims: int
    n_unsupported: int
    judge: str
    rewritten: str | None = None


class TrafficLog:
    """Appends a ``rate`` share of checks (chosen at random) to ``folder/traffic.jsonl``."""

    def __init__(self, folder: Path, rate: float, *, seed: int | None = None) -> None:
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"the log sample rate must be in (0, 1], got {rate}")
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / TRAFFIC_FILE
        self.rate = rate
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self.written = 0

    def maybe_write(self, request: CheckRequest, result: CheckResult) -> bool:
        if self._random.random() >= self.rate:
            return False
        record = TrafficRecord(
            request_id=result.request_id,
            time=datetime.now(UTC).isoformat(timespec="milliseconds"),
            request=request,
            decision=result.decision.value,
            hallucinated=result.hallucinated,
            decided=result.decided,
            n_claims=result.n_claims,
            n_unsupported=result.n_unsupported,
            judge=result.judge,
            rewritten=result.rewritten,
        )
        line = (record.model_dump_json() + "\n").encode("utf-8")
        with self._lock:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
            self.written += 1
        return True


def read_traffic(folder: Path) -> tuple[list[TrafficRecord], int]:
    """The records of ``folder``'s traffic log, and how many lines were unreadable (a torn last line)."""
    path = folder / TRAFFIC_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: start the server with --log-sample and --log-dir {folder}")
    records, bad = [], 0
    seen: set[str] = set()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            record = TrafficRecord.model_validate(json.loads(line))
        except (ValueError, ValidationError):
            bad += 1
            continue
        if record.request_id not in seen:
            seen.add(record.request_id)
            records.append(record)
    return records, bad


def shared_record(
    record: TrafficRecord, label: int, claims: list[dict[str, Any]], meta: dict[str, Any]
) -> dict[str, Any]:
    """``record`` in the labelled-data format of ../shared/data (label 1: not fully supported)."""
    req = record.request
    context = req.context or "\n\n".join(p.text for p in req.passages or [])
    return {
        "id": record.request_id,
        "dataset": "guard-monitor",
        "split": "dev",
        "context": context,
        "response": req.response,
        "question": req.question,
        "label": label,
        "claims": claims,
        "error_types": None,
        "meta": meta,
    }
