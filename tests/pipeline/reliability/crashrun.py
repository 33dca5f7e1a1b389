"""Measurements that die by SIGKILL at a chosen point, for the crash tests.

Each runs in a forked child process (a real process, killed for real, with no interpreter start-up
to pay), which kills itself at the point named by ``kill_at``:

* ``first-manifest`` — half-way through writing the first manifest (its temporary file);
* ``final-manifest`` — half-way through writing the final manifest, after every result is stored;
* ``transaction:N`` — inside the transaction that stores the N-th result, after its claims and
  verdicts were inserted and before the commit;
* ``hammer`` — never by itself: it writes two large manifests alternately with the real atomic
  writer until the parent kills it, at a random moment.

``start_held`` forks a writer that stops in the middle of its run (holding the run's lock) until
the parent releases it: the first of two processes on one run directory.

A kill half-way through a write leaves what a crash there would leave: a partial temporary
manifest next to the old one, or an uncommitted SQLite transaction.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path

from pipeline.reliability.samples import SAMPLES

from hallumeasure.core.labels import Policy
from hallumeasure.core.types import Mode, RunManifest
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.fake import FakeAPI, demo_responder
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.runs.store import MANIFEST, RunStore

PADDING = 2_000_000


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def measure(run_dir: Path, resume: bool = False, api: FakeAPI | None = None) -> None:
    model = Model(api or FakeAPI())
    run_measurement(
        SAMPLES,
        run_dir,
        LLMExtractor(model),
        LLMJudge(model, Mode.COT_ONE),
        mode=Mode.COT_ONE,
        input_sha256="0" * 64,
        resume=resume,
        concurrency=2,
    )


def _kill_in_manifest_write(nth: int) -> None:
    """On the ``nth`` manifest write, write half of the temporary file, then die."""
    real = RunStore.write_manifest
    seen = {"n": 0}

    def write_manifest(self: RunStore, manifest: RunManifest) -> None:
        seen["n"] += 1
        if seen["n"] == nth:
            text = manifest.model_dump_json(indent=2)
            with open(self.path / (MANIFEST + ".tmp"), "w", encoding="utf-8") as handle:
                handle.write(text[: len(text) // 2])
                handle.flush()
                os.fsync(handle.fileno())
            _die()
        real(self, manifest)

    RunStore.write_manifest = write_manifest  # type: ignore[method-assign]


class _KillingConnection:
    """A SQLite connection that dies after the verdicts of the ``nth`` result are inserted, before commit."""

    def __init__(self, db, nth: int) -> None:
        self._db, self._nth, self._seen = db, nth, 0

    def __getattr__(self, name):
        return getattr(self._db, name)

    def __enter__(self):
        return self._db.__enter__()

    def __exit__(self, *exc):
        return self._db.__exit__(*exc)

    def executemany(self, sql, rows):
        out = self._db.executemany(sql, rows)
        if sql.startswith("INSERT INTO verdicts"):
            self._seen += 1
            if self._seen == self._nth:
                _die()
        return out


def _kill_in_transaction(nth: int) -> None:
    real_init = RunStore.__init__

    def init(self: RunStore, *args, **kwargs) -> None:
        real_init(self, *args, **kwargs)
        if self.write:
            self.db = _KillingConnection(self.db, nth)

    RunStore.__init__ = init  # type: ignore[method-assign]


def _hammer(run_dir: Path, ready_fd: int) -> None:
    versions = [
        RunManifest(
            run_id=f"v{i}",
            package_version="test",
            input_sha256="0" * 64,
            n_samples=i,
            extractor="x",
            judge="y",
            mode=Mode.COT_ONE,
            policy=Policy(),
            started_at=datetime.now(UTC),
            settings={"padding": str(i) * PADDING},
        )
        for i in (1, 2)
    ]
    with RunStore(run_dir, write=True) as store:
        store.write_manifest(versions[0])
        os.write(ready_fd, b"r")
        i = 0
        while True:
            i += 1
            store.write_manifest(versions[i % 2])


def start(run_dir: Path, kill_at: str) -> int:
    """Fork a child that measures into ``run_dir`` and dies at ``kill_at``; returns its pid.

    For ``hammer``, returns once the first manifest is written; the caller kills the child.
    """
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into the test runner
        status = 0
        try:
            os.close(ready_r)
            if kill_at == "hammer":
                _hammer(run_dir, ready_w)
            elif kill_at == "first-manifest":
                _kill_in_manifest_write(1)
            elif kill_at == "final-manifest":
                _kill_in_manifest_write(2)
            elif kill_at.startswith("transaction:"):
                _kill_in_transaction(int(kill_at.split(":")[1]))
            else:
                raise ValueError(f"unknown kill point {kill_at!r}")
            measure(run_dir)
        except BaseException:  # noqa: BLE001 - report, then leave without running the parent's code
            traceback.print_exc(file=sys.stderr)
            status = 1
        finally:
            os._exit(status)
    os.close(ready_w)
    if kill_at == "hammer":
        assert os.read(ready_r, 1) == b"r", "the writer died before its first manifest"
    os.close(ready_r)
    return pid


def wait(pid: int) -> int:
    """The signal that killed the child, or minus its exit code (0: it exited normally)."""
    _, status = os.waitpid(pid, 0)
    return os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status)


def start_held(run_dir: Path) -> tuple[int, int]:
    """Fork a writer that blocks at its third model call, holding the run's lock.

    Returns its pid and a pipe: write a byte to it to let the writer finish.
    """
    release_r, release_w = os.pipe()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 0
        try:
            os.close(release_w)
            os.close(ready_r)
            calls = {"n": 0}

            def responder(request):
                calls["n"] += 1
                if calls["n"] == 3:  # blocks the child's event loop: the whole run stands still
                    os.write(ready_w, b"r")
                    os.read(release_r, 1)
                return demo_responder(request)

            measure(run_dir, api=FakeAPI(responder=responder))
        except BaseException:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            status = 1
        finally:
            os._exit(status)
    os.close(release_r)
    os.close(ready_w)
    assert os.read(ready_r, 1) == b"r", "the held writer died before it was held"
    os.close(ready_r)
    return pid, release_w
