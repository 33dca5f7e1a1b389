"""A persistent request cache: an identical request is answered from disk, never paid for twice."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from hallumeasure.models.base import GenerateRequest, GenerateResponse


def request_key(model_spec: str, request: GenerateRequest, settings: dict[str, Any] | None = None) -> str:
    """A stable sha256 over everything that can change the answer.

    ``settings`` are the provider's (``ModelAPI.settings()``): the resolved model name and the
    endpoint, so that two servers or two models never share an answer. A re-ask's ``attempt`` is
    part of the key, so a re-ask identical to an earlier one is not answered from the cache; a
    first ask leaves it out, which keeps the keys of first asks as they were. A repeat above 0
    (``measure --repeats``) is part of the key too, so each repeat is asked (and paid for) once;
    repeat 0 keys as before repeats existed.
    """
    payload: dict[str, Any] = {
        "model": model_spec,
        "settings": settings or {},
        "request": request.model_dump(mode="json", exclude={"repeat"} if request.attempt else {"repeat", "attempt"}),
    }
    if request.repeat:
        payload["repeat"] = request.repeat
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class RequestCache:
    """SQLite key-value store of successful responses, safe to share between runs and threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            # Each answer is committed the moment it arrives (a killed run keeps it); in WAL mode NORMAL
            # still survives a killed process, and a commit without an fsync does not hold the event
            # loop back from the next answer that has arrived.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                "key TEXT PRIMARY KEY, model TEXT NOT NULL, response TEXT NOT NULL,"
                " created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )
            self._db.commit()

    def get(self, key: str) -> GenerateResponse | None:
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return GenerateResponse.model_validate_json(row[0])

    def put(self, key: str, model_spec: str, response: GenerateResponse) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, model, response) VALUES (?, ?, ?)",
                (key, model_spec, response.model_dump_json()),
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._db.close()
