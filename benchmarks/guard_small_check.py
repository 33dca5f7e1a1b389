"""Time of a small check in the guard's server, in process: what the request handling costs around the judge.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/guard_small_check.py --rounds 5 --checks 200

The app (``create_app`` with one judge worker, so that small checks take the server's inline path) is
started in this process and called through httpx's ASGI transport: no network, no worker hop. The traffic
is the bundled examples, each sent as a ``context`` / ``passages`` request and as a ``messages``
conversation (a system prompt with the source, the question, the answer). Each round sends every request
``--checks`` times in turn; the figures are the medians over rounds of the mean milliseconds per check, of wall
time and of this process's CPU time (the server, the client and the judge share it; on a busy machine the CPU
time is the steadier of the two).

Run it on two trees (the same command with ``PYTHONPATH`` pointing at each) to compare them; the results
note (``benchmarks/results/guard_small_check.md``) records such a pair.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from hallumeasure.guard.app import create_app
from hallumeasure.guard.settings import GuardSettings

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def requests() -> dict[str, list[dict[str, Any]]]:
    """The bundled examples as source requests and as conversations."""
    sourced, conversations = [], []
    for line in (EXAMPLES / "samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        sourced.append({"response": row["response"], "context": row["context"], "question": row.get("question")})
        conversations.append(
            {
                "messages": [
                    {"role": "system", "content": f"Answer from this document.\n\n{row['context']}"},
                    {"role": "user", "content": row.get("question") or "Summarise the document."},
                    {"role": "assistant", "content": row["response"]},
                ]
            }
        )
    for line in (EXAMPLES / "rag_samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        passages = [
            {"id": str(i), "text": t if isinstance(t, str) else t["text"]}
            for i, t in enumerate(row["retrieved_contexts"], start=1)
        ]
        sourced.append({"response": row["response"], "passages": passages, "question": row.get("user_input")})
    return {"source": sourced, "messages": conversations}


async def timed(app: Any, bodies: list[dict[str, Any]], checks: int) -> tuple[float, float]:
    """Mean milliseconds per check, wall and CPU, of ``bodies`` sent ``checks`` times each."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://guard") as client:
        encoded = [json.dumps(b).encode() for b in bodies]
        for body in encoded:  # warm-up: the judge loads its data on first use
            answer = await client.post("/v1/check", content=body)
            if answer.status_code != 200:
                raise SystemExit(f"a check failed: {answer.status_code} {answer.text}")
        started, cpu = time.perf_counter(), time.process_time()
        for _ in range(checks):
            for body in encoded:
                answer = await client.post("/v1/check", content=body)
                if answer.status_code != 200:
                    raise SystemExit(f"a check failed: {answer.status_code} {answer.text}")
        n = checks * len(encoded)
        return (time.perf_counter() - started) * 1000 / n, (time.process_time() - cpu) * 1000 / n


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--checks", type=int, default=100, help="times each request is sent per round")
    args = parser.parse_args()
    app = create_app(GuardSettings(judge_workers=1))
    traffic = requests()
    figures: dict[str, list[tuple[float, float]]] = {kind: [] for kind in traffic}
    async with app.router.lifespan_context(app):
        for _ in range(args.rounds):
            for kind, bodies in traffic.items():
                figures[kind].append(await timed(app, bodies, args.checks))
    for kind, values in figures.items():
        wall = statistics.median(w for w, _ in values)
        cpu = statistics.median(c for _, c in values)
        print(f"{kind:9s} wall {wall:.3f} ms, cpu {cpu:.3f} ms per check ({len(traffic[kind])} requests)")


if __name__ == "__main__":
    asyncio.run(main())
