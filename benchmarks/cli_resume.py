"""Crash and resume of ``hallumeasure measure``, as perf.py (P4) and stress.py (crash and resume) measure it.

The CLI runs in a subprocess against a simulator that runs in the benchmark's process, so that the
simulator's log counts every request the CLI sent; a run is killed with SIGKILL once some results are
stored, then run again with ``--resume``. Only the standard library is imported here: stress.py's child
processes import nothing they do not use.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def stored(run_dir: Path) -> int:
    """How many results ``run_dir`` holds (0 before its store exists or while it cannot be read)."""
    db = run_dir / "run.sqlite"
    if not db.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


@dataclass
class MeasureCLI:
    """``hallumeasure measure`` on the samples of ``folder/samples.jsonl``, with ``spec`` as extractor and
    judge (cot-one, ``--concurrency 4 --max-concurrency 8``), talking to the Anthropic simulator ``srv``;
    each request cache is a folder of ``folder``."""

    srv: Any
    folder: Path
    spec: str

    @classmethod
    def on(cls, srv: Any, folder: Path, samples: Iterable[Any], spec: str) -> MeasureCLI:
        """Write ``samples`` to ``folder/samples.jsonl`` and measure them."""
        (folder / "samples.jsonl").write_text(
            "".join(json.dumps({"id": s.id, "context": s.context, "response": s.response}) + "\n" for s in samples),
            encoding="utf-8",
        )
        return cls(srv, folder, spec)

    def command(self, run_dir: Path, *extra: str) -> list[str]:
        return [
            sys.executable, "-m", "hallumeasure.cli", "measure", str(self.folder / "samples.jsonl"),
            "--out", str(run_dir), "--extractor", self.spec, "--judge", self.spec, "--mode", "cot-one",
            "--concurrency", "4", "--max-concurrency", "8", *extra,
        ]  # fmt: skip

    def env(self, cache: str) -> dict[str, str]:
        return {
            **os.environ,
            "ANTHROPIC_BASE_URL": self.srv.base_url,
            "ANTHROPIC_API_KEY": "sk-benchmark-dummy",
            "HALLUMEASURE_CACHE_DIR": str(self.folder / cache),
            "PYTHONPATH": str(REPO),
        }

    def run(self, run_dir: Path, cache: str, *extra: str, timeout: float = 600) -> tuple[int, float]:
        """Run to the end: the requests it sent and its seconds."""
        before, started = len(self.srv.log), time.perf_counter()
        done = subprocess.run(self.command(run_dir, *extra), env=self.env(cache), capture_output=True, timeout=timeout)
        if done.returncode not in (0, 3):
            raise RuntimeError(f"measure failed: {done.stderr.decode()[-2000:]}")
        return len(self.srv.log) - before, time.perf_counter() - started

    def kill_once_stored(self, run_dir: Path, cache: str, count: int, *, wait: float = 300) -> float:
        """Start a run and SIGKILL it once ``count`` results are stored (or it ended, or ``wait`` seconds
        passed); the ``time.monotonic()`` of the kill."""
        proc = subprocess.Popen(
            self.command(run_dir), env=self.env(cache), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + wait
        while stored(run_dir) < count and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        killed_at = time.monotonic()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        return killed_at
