"""Finishing a run: the time and the driver's peak memory of ``finish_manifest`` as the run grows (issue #44).

    PYTHONPATH=. nice python benchmarks/finish_memory.py                 # about 6 minutes on a shared 2-core machine
    PYTHONPATH=. nice python benchmarks/finish_memory.py --sizes 2000    # to try the script (writes nothing)

A run store of N keyless responses is written once per size (the results of 64 measured synthetic samples, given
new ids, as ``benchmarks/ray_engine.py`` does), then finished in a fresh process by two versions of the code: the
one before finishing streamed the store (``--before``, a commit taken out of git into a temporary folder), which
read every stored result into memory, and this checkout's, which reads the store a chunk at a time. Each child
reports its time and its peak RSS (the process's high-water mark) before and after ``finish_manifest``; the
growth is the memory finishing itself needed. The two manifests are checked to be equal (timestamps aside).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
#: The last commit whose finish read every result into memory.
BEFORE = "c960d23"
TIMESTAMPS = ("started_at", "finished_at")


def build(path: Path, n: int) -> float:
    """A run store of ``n`` responses at ``path`` (unfinished); the seconds it took."""
    sys.path.insert(0, str(HERE))
    from ray_engine import _offline, _pairs, _renamed

    from hallumeasure.pipeline.run import new_manifest
    from hallumeasure.runs.store import RunStore

    started = time.perf_counter()
    base = _pairs(64)
    stages = _offline().stages()
    with RunStore(path, write=True) as store:
        manifest = new_manifest(
            path,
            stages.extractor,
            stages.judge,
            mode=_offline().settings.mode,
            input_sha256="0" * 64,
            input_path=None,
            n_samples=n,
            policy=stages.policy,
            detector="claims",
            settings={},
        )
        store.write_manifest(manifest)
        for start in range(0, n, 1000):
            pairs = [_renamed(*base[i % len(base)], f"f-{i}") for i in range(start, min(n, start + 1000))]
            store.add_samples([s for s, _ in pairs], start=start)
            store.write_results([r for _, r in pairs])
    return time.perf_counter() - started


def child(path: Path) -> dict[str, Any]:
    """In a fresh process (run by ``finish``): finish the run at ``path``; time and peak RSS."""
    from hallumeasure.pipeline.run import finish_manifest
    from hallumeasure.runs.store import RunStore

    def peak_mb() -> float:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    with RunStore(path, write=True) as store:
        manifest = store.read_manifest()
        assert manifest is not None
        before = peak_mb()
        started = time.perf_counter()
        finish_manifest(store, manifest, n_samples=manifest.n_samples, measured_now=manifest.n_samples, skipped=0)
        took = time.perf_counter() - started
    written = json.loads((path / "manifest.json").read_text())
    return {
        "finish_s": took,
        "peak_mb_before": before,
        "peak_mb_after": peak_mb(),
        "manifest": {k: v for k, v in written.items() if k not in TIMESTAMPS},
    }


def finish(path: Path, code: Path) -> dict[str, Any]:
    """Finish the run at ``path`` in a fresh process whose ``hallumeasure`` is the one under ``code``."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(path)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found: dict[str, Any] = json.loads(out.splitlines()[-1])
    return found


def checkout(rev: str, into: Path) -> Path:
    """The package as it was at ``rev``, under ``into``."""
    archive = subprocess.run(["git", "archive", rev, "hallumeasure"], cwd=ROOT, check=True, capture_output=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--before", default=BEFORE, help="the commit whose finish read every result into memory")
    parser.add_argument("--after-only", type=int, nargs="*", default=[], help="sizes finished by this code only")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child)))
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        before = checkout(args.before, Path(tmp) / "before")
        for n in [*args.sizes, *args.after_only]:
            run = Path(tmp) / f"run-{n}"
            built = build(run, n)
            row: dict[str, Any] = {"n": n, "build_s": built, "sqlite_mb": (run / "run.sqlite").stat().st_size / 2**20}
            after = finish(run, ROOT)
            if n in args.sizes:
                old = finish(run, before)
                assert old.pop("manifest") == after["manifest"], f"the manifests of {n} responses differ"
                row["before"] = old
            after.pop("manifest")
            row["after"] = after
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.sizes == [10_000, 100_000]:
        write(rows, args)


def write(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    env = {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()[0]}
    (RESULTS / "finish_memory.json").write_text(json.dumps({"rows": rows, "env": env}, indent=1) + "\n")
    lines = [
        "# Finishing a run: time and the driver's peak memory",
        "",
        f"Command: `{' '.join(['PYTHONPATH=. nice python benchmarks/finish_memory.py', *sys.argv[1:]])}`  ",
        f"Python {env['python']}, {env['cpus']} CPUs shared with other jobs (load {env['load']:.1f} at the end).",
        "",
        f"Before: commit {args.before}, whose finish read every stored result into memory. After: this checkout,",
        "which streams the store a chunk of 500 responses at a time. Each finish runs in a fresh process; growth is",
        "its peak RSS after `finish_manifest` less its peak before (imports and the open store). The two manifests",
        "were equal, timestamps aside.",
        "",
        "| responses | run.sqlite MB | finish s: before | after | peak RSS growth MB: before | after |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        b, a = row.get("before"), row["after"]
        grow = a["peak_mb_after"] - a["peak_mb_before"]
        old_s = f"{b['finish_s']:.1f}" if b else "-"
        old_grow = f"{b['peak_mb_after'] - b['peak_mb_before']:.0f}" if b else "-"
        lines.append(
            f"| {row['n']:,} | {row['sqlite_mb']:.0f} | {old_s} | {a['finish_s']:.1f} | {old_grow} | {grow:.0f} |"
        )
    (RESULTS / "finish_memory.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
