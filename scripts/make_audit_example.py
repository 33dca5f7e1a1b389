"""Write a larger audit example: a baseline and a current input file over the same 200 tasks (seeded).

    .venv/bin/python scripts/make_audit_example.py runs/audit-example
    .venv/bin/hallumeasure measure runs/audit-example/baseline.jsonl --out runs/audit-example/baseline
    .venv/bin/hallumeasure measure runs/audit-example/current.jsonl --out runs/audit-example/current
    .venv/bin/hallumeasure audit --baseline runs/audit-example/baseline --current runs/audit-example/current

The tasks reuse the contexts of ``examples/samples.jsonl``. Every response copies two or three
sentences of its context; a copied number is then changed (a digit moved by one) in 8% of the
baseline's responses and in 45% of the current's, so the current model really is worse and the
audit, with its default margin, reports a regression (exit 1). ``--same`` writes the current
file equal to the baseline: the audit then passes (exit 0). Nothing is written outside the
given directory; the files are generated, not committed.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "samples.jsonl"
_NUMBER = re.compile(r"\d+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _contexts() -> list[str]:
    seen: dict[str, None] = {}
    for line in EXAMPLES.read_text(encoding="utf-8").splitlines():
        if line.strip():
            seen.setdefault(json.loads(line)["context"], None)
    return list(seen)


def _with_wrong_number(text: str, rng: random.Random) -> str | None:
    """``text`` with one number changed by one in its last digit; None when it has no number."""
    found = list(_NUMBER.finditer(text))
    if not found:
        return None
    match = rng.choice(found)
    digits = match.group()
    changed = digits[:-1] + str((int(digits[-1]) + 1) % 10)
    return text[: match.start()] + changed + text[match.end() :]


def make_example(
    out: Path,
    *,
    n: int = 200,
    baseline_error: float = 0.08,
    current_error: float = 0.45,
    seed: int = 7,
    same: bool = False,
) -> tuple[Path, Path]:
    """Write ``baseline.jsonl`` and ``current.jsonl`` into ``out``; returns their paths."""
    rng = random.Random(seed)
    contexts = _contexts()
    rows: dict[str, list[dict]] = {"baseline": [], "current": []}
    for i in range(n):
        context = contexts[i % len(contexts)]
        sentences = _SENTENCE.split(context)
        picked = sorted(rng.sample(range(len(sentences)), k=min(len(sentences), rng.choice([2, 3]))))
        faithful = [sentences[j] for j in picked]
        draw = rng.random()  # one draw per task, so the current model errs wherever the baseline does, and more
        for name, error in (("baseline", baseline_error), ("current", baseline_error if same else current_error)):
            response = list(faithful)
            if draw < error:
                numbered = [j for j, s in enumerate(response) if _NUMBER.search(s)]
                if numbered:
                    j = numbered[i % len(numbered)]
                    response[j] = _with_wrong_number(response[j], random.Random(seed * 1000 + i)) or response[j]
            rows[name].append(
                {"id": f"task-{i:03d}", "model": f"model-{name}", "context": context, "response": " ".join(response)}
            )
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, items in rows.items():
        path = out / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
        paths.append(path)
    return paths[0], paths[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="directory for baseline.jsonl and current.jsonl")
    parser.add_argument("--n", type=int, default=200, help="tasks (default 200)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--same", action="store_true", help="current = baseline (the audit then passes)")
    args = parser.parse_args(argv)
    base, cur = make_example(args.out, n=args.n, seed=args.seed, same=args.same)
    print(f"wrote {base} and {cur}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
