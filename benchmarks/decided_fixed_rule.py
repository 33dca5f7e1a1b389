"""The shipped offline decision rule, measured leave one dataset out: to compare two versions of the judge.

    HALLUMEASURE_DATA=../shared/data OMP_NUM_THREADS=1 nice .venv/bin/python benchmarks/decided_fixed_rule.py \\
        --cache /tmp/decided-cache.pkl --out /tmp/fixed.json

decided_calibration.py recalibrates the rule on each fold, so two versions of the signals can end with different
thresholds and their decided-wrongly shares are not comparable. Here the rule is held at the shipped one
(judges/offline/decision.json) and only the trees are refitted without the held-out set, as there; the cache
holds the signals of the version that wrote it (give each version its own). Prints and writes, per set, the
share of responses decided and the share of all responses decided wrongly.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hallumeasure.judges.decision import decision_rule
from hallumeasure.runs.datasets import data_dir

HERE = Path(__file__).resolve().parent


def _calibration_module() -> Any:
    spec = importlib.util.spec_from_file_location("decided_calibration", HERE / "decided_calibration.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["decided_calibration"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--data", default=None, help="folder of the labelled sets (default: HALLUMEASURE_DATA)")
    parser.add_argument("--cache", required=True, help="signals cache of this version, outside the repo")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    data = data_dir(args.data)
    if data is None:
        print("no data folder: pass --data or set HALLUMEASURE_DATA", file=sys.stderr)
        return 2
    dc = _calibration_module()
    rule = decision_rule("offline")
    assert rule is not None
    shipped = (rule.clear_at_most, rule.flag_at_least)
    rows = dc.build_cache(Path(args.cache), Path(data), 0)
    training = [dc.featurized(r) for r in rows]
    sets: dict[str, Any] = {}
    out = {"rule": list(shipped), "sets": sets}
    for held in dc.SHARED_SETS:
        part = [r for r in rows if r.dataset == held]
        model = dc.trees(rows, training, [s for s in dc.SHARED_SETS if s != held])
        found = dc.measure_rule(dc.outcomes("offline", part, model, None), np.array([r.label for r in part]), shipped)
        sets[held] = found
        print(held, json.dumps(found), flush=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
