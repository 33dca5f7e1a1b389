"""Issue #44's first check, at its size: a 10^4-row file measured with ``--engine ray`` on a local cluster equals the
single-process run, row for row.

    PYTHONPATH=. nice python benchmarks/ray_engine_parity.py     # about 3 minutes on a shared 2-core machine

Both runs go through the command line (``hallumeasure measure ... --judge offline``, one with ``--engine ray`` and
no address: a local cluster of this machine's CPUs, one worker). Compared: every sample and every result as
records (claims, verdicts, evidence, counts, rates, intervals), the responses, claims and summary frames, and the
manifests' input hash, counts, usage, judge checks, policy and prompts. Writes
``results/ray_engine_parity.md`` and ``.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from hallumeasure.runs.run import Run

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ray_engine import synthetic  # the benchmarks folder is not a package: found through sys.path

N = 10_000
MANIFEST_FIELDS = ("input_sha256", "n_samples", "status", "counts", "usage", "judge_checks", "policy", "prompts")


def main() -> None:
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        path = synthetic(work / "in.jsonl", N)
        cli = [sys.executable, "-m", "hallumeasure.cli", "measure", str(path), "--judge", "offline"]
        seconds = {}
        for name, extra in (("ray", ["--engine", "ray"]), ("local", [])):
            started = time.perf_counter()
            subprocess.run([*cli, "--out", str(work / name), *extra], check=True, capture_output=True)
            seconds[name] = time.perf_counter() - started
        a, b = Run.load(work / "ray", name="run"), Run.load(work / "local", name="run")
        checks = {
            "samples": [s.model_dump() for s in a.samples] == [s.model_dump() for s in b.samples],
            "results": [r.model_dump() for r in a.results] == [r.model_dump() for r in b.results],
        }
        for frame in ("responses", "claims", "summary"):
            try:
                pd.testing.assert_frame_equal(getattr(a, frame), getattr(b, frame))
                checks[frame] = True
            except AssertionError:
                checks[frame] = False
        for field in MANIFEST_FIELDS:
            checks[f"manifest.{field}"] = getattr(a.manifest, field) == getattr(b.manifest, field)
        data = {
            "command": "PYTHONPATH=. nice python benchmarks/ray_engine_parity.py",
            "responses": len(a.results),
            "claims": len(a.claims),
            "seconds": {k: round(v, 1) for k, v in seconds.items()},
            "load_average": round(load, 1),
            "equal": checks,
        }
    (HERE / "results" / "ray_engine_parity.json").write_text(json.dumps(data, indent=2) + "\n")
    rows = "\n".join(f"| {name} | {'equal' if same else 'DIFFERENT'} |" for name, same in checks.items())
    (HERE / "results" / "ray_engine_parity.md").write_text(
        f"""# The Ray engine's run equals the single-process run: {N:,} responses

Command: `{data["command"]}` (2-core shared machine, load average {data["load_average"]} at the start).

`hallumeasure measure IN --judge offline --engine ray` (a local cluster, one worker) took {seconds["ray"]:.1f} s
and the same command without `--engine ray` {seconds["local"]:.1f} s, for {data["responses"]:,} responses and
{data["claims"]:,} claims.

| compared | outcome |
|---|---|
{rows}
"""
    )
    print(json.dumps(data, indent=2))
    if not all(checks.values()):
        raise SystemExit("the runs differ")


if __name__ == "__main__":
    main()
