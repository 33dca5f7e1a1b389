"""The guard benchmarks' traffic: the bundled examples (summaries with a context, RAG answers with passages)
as ``/v1/check`` requests. Shared by the locust file and the interleaved ratio benchmark."""

from __future__ import annotations

import json
from pathlib import Path

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
