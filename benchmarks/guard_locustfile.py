"""Locust users for the guard's load benchmark (benchmarks/guard_load.py starts it; not run alone).

Each user posts the bundled examples (summaries with a context, RAG answers with passages) to
``/v1/check`` in a loop, with no think time. A 429 is recorded as a failure named "429" so the
benchmark can tell backpressure from real errors.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from locust import HttpUser, task

HERE = Path(__file__).resolve().parent


def requests() -> list[dict]:
    out = []
    for line in (HERE.parent / "examples" / "samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        out.append({"response": row["response"], "context": row["context"], "question": row.get("question")})
    for line in (HERE.parent / "examples" / "rag_samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        passages = [
            {"id": p["id"], "text": p["text"], "title": p.get("title")}
            if isinstance(p, dict)
            else {"id": str(i + 1), "text": p}
            for i, p in enumerate(row["retrieved_contexts"])
        ]
        out.append({"response": row["response"], "passages": passages, "question": row.get("user_input")})
    return out


TRAFFIC = requests()
POLICY = os.environ.get("GUARD_POLICY")


class GuardUser(HttpUser):
    @task
    def check(self) -> None:
        payload = dict(random.choice(TRAFFIC))
        if POLICY:
            payload["policy"] = {"policy": POLICY}
        with self.client.post("/v1/check", json=payload, name="/v1/check", catch_response=True) as r:
            if r.status_code == 429:
                r.failure("429")
            elif r.status_code != 200:
                r.failure(f"status {r.status_code}")
