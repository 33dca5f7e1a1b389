"""Train the offline judge on the labelled sets in ../shared/data and write hallumeasure/judges/offline/model.json.

    .venv/bin/python scripts/train_offline.py            # all five shared sets, seed 13

Deterministic: fixed seed, fixed file order. Only the fitted trees are written; no data.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

from hallumeasure.judges.offline.model import MODEL_FILE
from hallumeasure.judges.offline.training import GBM_PARAMS, SEED, featurize_all, fit_models
from hallumeasure.runs.datasets import SHARED_SETS, data_dir, load_labelled

CLONE_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"  # a clone's labelled sets, beside it


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=data_dir() or CLONE_DATA, help="folder of the labelled JSONL sets")
    parser.add_argument("--sets", nargs="*", default=list(SHARED_SETS))
    parser.add_argument("--out", type=Path, default=MODEL_FILE)
    args = parser.parse_args(argv)
    if args.data is None or not Path(args.data).is_dir():
        print("no labelled data found: pass --data DIR (the repo expects ../shared/data)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows, digests = [], {}
    for name in args.sets:
        path = Path(args.data) / f"{name}.jsonl"
        digests[name] = hashlib.sha256(path.read_bytes()).hexdigest()
        rows += featurize_all(load_labelled(path))
    model = fit_models(rows)
    model["meta"] = {
        "trained_on": {name: sum(r.dataset == name for r in rows) for name in args.sets},
        "data_sha256": digests,
        "seed": SEED,
        "params": GBM_PARAMS,
        "counts": model.pop("counts"),
    }
    text = json.dumps(model, separators=(",", ":"), sort_keys=True)
    model["meta"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    args.out.write_text(json.dumps(model, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    size = args.out.stat().st_size
    print(f"wrote {args.out} ({size / 1e6:.2f} MB) from {len(rows)} responses in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
