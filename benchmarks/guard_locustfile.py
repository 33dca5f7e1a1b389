"""Locust users for the guard's load benchmark (benchmarks/guard_load.py starts it; not run alone).

Each user posts the bundled examples (summaries with a context, RAG answers with passages) to
``/v1/check`` in a loop, with no think time. A 429 is recorded as a failure named "429" so the
benchmark can tell backpressure from real errors.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from locust import HttpUser, task

HERE = Path(__file__).resolve().parent


from guard_load_traffic import TRAFFIC

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
