"""The run store: one directory per run, holding ``manifest.json`` and ``run.sqlite``.

SQLite (WAL, one transaction per response) because a run must survive a crash at any
point without corrupt or duplicate rows, resume where it stopped, and be queryable with
plain SQL or pandas afterwards. The manifest is replaced atomically (write, then rename).
A lock file stops two processes from writing the same run; clearing a run for a fresh start
happens under that lock, so it can never pull the directory from under a running writer.
Text is stored as UTF-8: lone surrogates (which cannot be encoded) become U+FFFD on the way in.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import socket
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from filelock import FileLock, Timeout
from pydantic import ValidationError

from hallumeasure.core.aggregate import decision_fields
from hallumeasure.core.errors import RunStoreError
from hallumeasure.core.labels import Label, Policy, Subtype
from hallumeasure.core.run_files import DATABASE as DATABASE  # re-exported: the store's own names
from hallumeasure.core.run_files import MANIFEST as MANIFEST
from hallumeasure.core.sample_features import style, task_key
from hallumeasure.core.text import encodable
from hallumeasure.core.types import (
    Claim,
    ClaimVerdict,
    ErrorKind,
    ResponseResult,
    RunManifest,
    Sample,
    Span,
    Usage,
    Vote,
)
from hallumeasure.runs.schema import ADDED_COLUMNS, LEGACY_OVER_LIMIT, SCHEMA

LOCK = ".lock"
#: The columns of the results table, in the order ``write_result`` gives their values.
RESULT_COLUMNS = (
    "sample_id",
    "model",
    "n_claims",
    "n_evaluated",
    "n_unsupported",
    "n_errors",
    "unsupported_rate",
    "hallucinated",
    "score",
    "error",
    "label_counts",
    "subtype_counts",
    "usage",
    "decided",
    "unsupported_rate_low",
    "unsupported_rate_high",
    "error_kind",
)
#: The texts of a sample that ``RunStore.response_columns`` returns only where no features are stored.
SAMPLE_TEXTS = ("question", "context", "response")
#: The columns of the sample_features table after its id (``core/sample_features.py``), as ``response_columns``
#: returns them (NULL for a sample stored before they were).
SAMPLE_FEATURES = ("task_key", "style_words", "style_overlap", "response_hash")
#: Responses that ``RunStore.iter_results`` reads at a time (their claims and verdicts are one query each).
RESULTS_CHUNK = 500
#: Who holds the lock (process id and host), for the message a second writer gets.
LOCK_OWNER = ".lock.owner"


def holds_run(path: Path) -> bool:
    """True when ``path`` holds a run's manifest or database (a finished, crashed or running run)."""
    return (path / MANIFEST).exists() or (path / DATABASE).exists()


def existing_run_error(path: Path, *, resumable: bool) -> RunStoreError:
    """The error for an output directory that already holds a run, naming the flags that go on from there."""
    how = "pass --resume to continue it, --overwrite to replace it" if resumable else "pass --overwrite to replace it"
    return RunStoreError(f"{path} already holds a run; {how}, or choose another --out")


def write_json_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader (or a crash) only ever sees the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    try:  # make the rename itself durable (a power cut, not only a killed process)
        fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _reason(exc: OSError) -> str:
    """The operating system's reason for an ``OSError`` ("Permission denied"), without the path again."""
    return exc.strerror or str(exc)


def first_line(exc: BaseException) -> str:
    """A short reason: the first pydantic error, or the first line of the innermost error's text."""
    while exc.__cause__ is not None:  # pandas wraps sqlite's "file is not a database" with the whole query
        exc = exc.__cause__
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        return f"{where}: {first['msg']}" if where else first["msg"]
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _s(value: Any) -> Any:
    return encodable(value) if isinstance(value, str) else value


@dataclass
class _ResultParts:
    """The claims, verdicts (by claim id) and votes of a chunk of results, by sample id."""

    claims: dict[str, list[Claim]] = field(default_factory=dict)
    verdicts: dict[str, dict[str, ClaimVerdict]] = field(default_factory=dict)
    votes: dict[str, list[Vote]] = field(default_factory=dict)


class RunStore:
    """Read and write one run directory. Use as a context manager when writing (it takes the lock).

    With ``overwrite`` (writing only), an existing run in the directory is deleted first, under the lock.
    """

    def __init__(self, path: str | Path, *, write: bool = False, overwrite: bool = False) -> None:
        self.path = Path(path)
        self.write = write
        self._lock: FileLock | None = None
        if write:
            if self.path.exists() and not self.path.is_dir():
                raise RunStoreError(f"{self.path} is a file, not a run directory; choose another --out")
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise RunStoreError(f"cannot create run directory {self.path}: {_reason(exc)}") from None
            self._lock = FileLock(str(self.path / LOCK))
            try:
                self._lock.acquire(timeout=0)
            except Timeout as exc:
                raise RunStoreError(
                    f"{self.path} is being written by another hallumeasure process{self._owner()}; "
                    "wait for it to finish or write to another --out directory"
                ) from exc
            except OSError as exc:
                raise RunStoreError(f"cannot write to run directory {self.path}: {_reason(exc)}") from None
            try:
                (self.path / LOCK_OWNER).write_text(f"pid {os.getpid()} on {socket.gethostname()}\n", encoding="utf-8")
                if overwrite:
                    self._clear()
            except BaseException:
                self._lock.release()
                raise
        elif not self.path.exists():
            raise RunStoreError(f"{self.path} does not exist; give a run directory written by 'hallumeasure measure'")
        elif not self.path.is_dir():
            raise RunStoreError(f"{self.path} is a file; give a run directory written by 'hallumeasure measure'")
        elif not (self.path / DATABASE).exists():
            raise RunStoreError(
                f"{self.path} is not a hallumeasure run (no {DATABASE}); run 'hallumeasure measure' first"
            )
        # check_same_thread=False: run_sync may drive the run from a worker thread (inside Jupyter);
        # the store is still used by one thread at a time.
        self.db = sqlite3.connect(self.path / DATABASE, timeout=30, check_same_thread=False)
        if write:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            for table, column, kind in ADDED_COLUMNS:
                if not self._has_column(table, column):
                    self.db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
                    if (table, column) == ("results", "error_kind"):
                        self._migrate_error_kinds()
            self.db.commit()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()
        if self._lock is not None:
            # The lock files mean "being written" only while a writer runs: a finished (or stopped) run keeps
            # none. They go while the lock is still held, so no other writer can be between the two steps.
            for name in (LOCK_OWNER, LOCK):
                with contextlib.suppress(OSError):
                    (self.path / name).unlink()
            self._lock.release()

    def _has_column(self, table: str, column: str) -> bool:
        return any(row[1] == column for row in self.db.execute(f"PRAGMA table_info({table})"))

    def _column(self, table: str, column: str, default: str = "NULL") -> str:
        """``column`` for a SELECT, or ``default`` when the run was written before the column existed."""
        return column if self._has_column(table, column) else f"{default} AS {column}"

    def _migrate_error_kinds(self) -> None:
        """LEGACY MIGRATION, run once: the error rows of a run stored before ``error_kind`` existed get their kind.

        Only an over-limit row matters to code (a resume measures it again); it is known by the start its message
        had then (``schema.LEGACY_OVER_LIMIT``). Every other old error row is ``unknown``. This is the one place a
        message is read for its meaning, and only for rows written before the kind was stored with them.
        """
        self.db.execute(
            "UPDATE results SET error_kind = CASE WHEN substr(error, 1, ?) = ? THEN ? ELSE ? END"
            " WHERE error IS NOT NULL",
            (len(LEGACY_OVER_LIMIT), LEGACY_OVER_LIMIT, ErrorKind.OVER_LIMIT.value, ErrorKind.UNKNOWN.value),
        )

    def _owner(self) -> str:
        try:
            owner = (self.path / LOCK_OWNER).read_text(encoding="utf-8").strip()
        except OSError:
            return ""
        return f" ({owner})" if owner else ""

    def _clear(self) -> None:
        """Delete the run in this directory (the lock is held). Refuses a directory that holds no run."""
        entries = [p for p in self.path.iterdir() if p.name not in (LOCK, LOCK_OWNER)]
        if entries and not ((self.path / MANIFEST).exists() or (self.path / DATABASE).exists()):
            raise RunStoreError(
                f"{self.path} is not empty and holds no hallumeasure run (no {MANIFEST} or {DATABASE}); "
                "refusing to delete it: choose a new --out directory"
            )
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    # --- manifest -----------------------------------------------------------------------------

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    def read_manifest(self) -> RunManifest | None:
        if not self.manifest_path.exists():
            return None
        try:
            return RunManifest.model_validate_json(self.manifest_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValidationError) as exc:
            raise RunStoreError(
                f"{self.manifest_path} cannot be read ({first_line(exc)}); the run is damaged: "
                "measure it again into a new --out (or with --overwrite)"
            ) from None

    def write_manifest(self, manifest: RunManifest) -> None:
        write_json_atomic(self.manifest_path, manifest.model_dump_json(indent=2))

    # --- writing ------------------------------------------------------------------------------

    def add_samples(self, samples: list[Sample], *, start: int = 0) -> None:
        """Store samples not stored yet, numbered in input order from ``start`` (a run written in pieces
        numbers each piece on from the last)."""
        with self.db:
            self.db.executemany(
                "INSERT OR IGNORE INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    tuple(
                        map(
                            _s,
                            (
                                s.id,
                                i,
                                s.model,
                                s.context,
                                s.response,
                                s.question,
                                json.dumps(list(s.tags)),
                                json.dumps(s.metadata, ensure_ascii=False, default=str),
                            ),
                        )
                    )
                    for i, s in enumerate(samples, start=start)
                ],
            )
            self.db.executemany(
                "INSERT OR IGNORE INTO passages VALUES (?, ?)",
                [(s.id, _s(passages_json(s))) for s in samples if s.passages],
            )
            # What an audit reads of the texts (core/sample_features.py), worked out once here rather than on
            # every read of a run of millions of samples.
            self.db.executemany(
                "INSERT OR IGNORE INTO sample_features VALUES (?, ?, ?, ?, ?)",
                [_features_row(s) for s in samples],
            )
            # Samples keyed by (id, model) keep the id the user wrote; runs with unique ids have no rows here.
            self.db.executemany(
                "INSERT OR IGNORE INTO input_ids VALUES (?, ?)",
                [(s.id, _s(s.input_id)) for s in samples if s.input_id is not None],
            )

    def write_input_problems(self, problems: Iterable[Any]) -> None:
        """Record the input rows that could not become samples (``row``, ``sample_id``, ``message``)."""
        with self.db:
            self.db.execute("DELETE FROM input_problems")
            self.db.executemany(
                "INSERT OR REPLACE INTO input_problems VALUES (?, ?, ?)",
                [(p.row, _s(p.sample_id), _s(p.message)) for p in problems],
            )

    def write_result(self, result: ResponseResult) -> None:
        """Replace everything stored for the result's sample in one transaction."""
        self.write_results([result])

    def write_results(self, results: list[ResponseResult]) -> None:
        """Replace everything stored for each result's sample, all in one transaction (none stored if one fails)."""
        with self.db:
            for result in results:
                self._replace_result(result)

    def _replace_result(self, result: ResponseResult) -> None:
        sid = result.sample_id
        for table in ("votes", "verdicts", "verdict_evidence", "claims", "results"):
            self.db.execute(f"DELETE FROM {table} WHERE sample_id = ?", (sid,))
        self.db.executemany(
            "INSERT INTO claims VALUES (?, ?, ?, ?, ?)",
            [
                tuple(map(_s, (c.id, sid, c.index, c.text, json.dumps([s.model_dump() for s in c.spans]))))
                for c in result.claims
            ],
        )
        self.db.executemany(
            "INSERT INTO verdicts (claim_id, sample_id, label_reason, label, subtype_reason, subtype, probability,"
            " judge, error, raw_output, confident, error_kind) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                tuple(
                    map(
                        _s,
                        (
                            v.claim_id,
                            sid,
                            v.label_reason,
                            v.label,
                            v.subtype_reason,
                            v.subtype,
                            v.probability,
                            v.judge,
                            v.error,
                            v.raw_output,
                            int(v.confident),
                            None if v.error_kind is None else v.error_kind.value,
                        ),
                    )
                )
                for v in result.verdicts
            ],
        )
        self.db.executemany(
            "INSERT INTO votes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                tuple(
                    map(
                        _s,
                        (
                            v.claim_id,
                            sid,
                            v.judge,
                            v.repeat,
                            v.label_reason,
                            v.label,
                            v.subtype_reason,
                            v.subtype,
                            v.probability,
                            v.error,
                            v.raw_output,
                        ),
                    )
                )
                for v in result.votes
            ],
        )
        self.db.executemany(
            "INSERT INTO verdict_evidence VALUES (?, ?, ?)",
            [(v.claim_id, sid, _s(data)) for v in result.verdicts if (data := evidence_json(v))],
        )
        self.db.execute(
            # Columns named: a run resumed from an older version has its added columns in the order they came.
            f"INSERT INTO results ({', '.join(RESULT_COLUMNS)}) VALUES ({', '.join('?' * len(RESULT_COLUMNS))})",
            tuple(
                map(
                    _s,
                    (
                        sid,
                        result.model,
                        result.n_claims,
                        result.n_evaluated,
                        result.n_unsupported,
                        result.n_errors,
                        result.unsupported_rate,
                        None if result.hallucinated is None else int(result.hallucinated),
                        result.score,
                        result.error,
                        json.dumps(result.label_counts),
                        json.dumps(result.subtype_counts),
                        result.usage.model_dump_json(),
                        None if result.decided is None else int(result.decided),
                        result.unsupported_rate_low,
                        result.unsupported_rate_high,
                        None if result.error_kind is None else result.error_kind.value,
                    ),
                )
            ),
        )

    # --- reading ------------------------------------------------------------------------------

    def positions(self, sample_ids: list[str]) -> dict[str, int]:
        """The input position of each of ``sample_ids`` that is stored (the others are left out)."""
        marks = ", ".join("?" * len(sample_ids))
        rows = self.db.execute(f"SELECT sample_id, position FROM samples WHERE sample_id IN ({marks})", sample_ids)
        return dict(rows)

    def note_rows(self, rows: list[tuple[str, int, str | None]]) -> None:
        """Remember the input row and model of each sample id while this store is open (a temporary table, kept
        on disk by SQLite, not in memory), for a writer that reads its input in pieces."""
        with self.db:
            self.db.execute(
                "CREATE TEMP TABLE IF NOT EXISTS input_rows (sample_id TEXT PRIMARY KEY, row INTEGER, model TEXT)"
            )
            self.db.executemany("INSERT OR IGNORE INTO temp.input_rows VALUES (?, ?, ?)", rows)

    def noted_row(self, sample_id: str) -> tuple[int, str | None] | None:
        """The input row and model ``note_rows`` remembered for ``sample_id``, if any."""
        try:
            found = self.db.execute(
                "SELECT row, model FROM temp.input_rows WHERE sample_id = ?", (sample_id,)
            ).fetchone()
        except sqlite3.OperationalError:  # nothing noted yet
            return None
        return None if found is None else (found[0], found[1])

    def done_ids(self) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT sample_id FROM results")}

    def judges(self) -> set[str]:
        """The judges named by the run's answered verdicts (not error rows), in one SQL pass."""
        rows = self.db.execute(
            "SELECT DISTINCT judge FROM verdicts WHERE error IS NULL AND label IS NOT NULL AND judge IS NOT NULL"
        )
        return {row[0] for row in rows}

    def error_ids(self, kind: ErrorKind) -> set[str]:
        """Samples stored as error rows of ``kind`` (a run opened for writing has every row's kind, see
        ``_migrate_error_kinds``; read only, an old run's rows have none and match no kind)."""
        if not self._has_column("results", "error_kind"):
            return set()
        rows = self.db.execute("SELECT sample_id FROM results WHERE error_kind = ?", (kind.value,))
        return {row[0] for row in rows}

    def input_problems(self) -> pd.DataFrame:
        """Input rows that were skipped, with the reason (empty for runs written before this table)."""
        try:
            return pd.read_sql_query("SELECT row, sample_id, message FROM input_problems ORDER BY row", self.db)
        except (sqlite3.Error, pd.errors.DatabaseError):
            return pd.DataFrame(columns=["row", "sample_id", "message"])

    def has_votes(self) -> bool:
        """Whether the run stored votes (repeats or a panel); runs before votes existed have no such table."""
        try:
            return self.db.execute("SELECT 1 FROM votes LIMIT 1").fetchone() is not None
        except sqlite3.OperationalError:
            return False

    def votes(self) -> pd.DataFrame:
        """Every vote with its claim and model, in input order. A run without repeats or a panel
        (one judge, asked once) has one vote per claim: its verdict, as repeat 0."""
        table = "votes" if self.has_votes() else "verdicts"
        repeat = "v.repeat" if table == "votes" else "0"
        return pd.read_sql_query(
            f"SELECT c.sample_id, s.model, c.claim_id, c.idx AS claim_index, v.judge, {repeat} AS repeat, v.label,"
            " v.subtype, v.label_reason, v.probability, v.error"
            f" FROM claims c JOIN samples s USING (sample_id) JOIN {table} v USING (claim_id)"
            " ORDER BY s.position, c.idx, v.judge, repeat",
            self.db,
        )

    def samples(self, ids: Sequence[str] | None = None) -> list[Sample]:
        """The stored samples in input order (only those of ``ids`` when given: a few, read without the rest)."""
        where, params = ("", []) if ids is None else (f" WHERE sample_id IN ({', '.join('?' * len(ids))})", list(ids))
        rows = self.db.execute(
            "SELECT sample_id, model, context, response, question, tags, metadata FROM samples"
            f"{where} ORDER BY position",
            params,
        )
        passages = self._json_rows(f"SELECT sample_id, data FROM passages{where}", params)
        given = self.input_ids()
        return [
            Sample(
                id=r[0],
                input_id=given.get(r[0]),
                model=r[1],
                context=r[2],
                response=r[3],
                question=r[4],
                tags=tuple(json.loads(r[5])),
                metadata=json.loads(r[6]),
                passages=tuple(passages.get(r[0], ())),
            )
            for r in rows
        ]

    def input_ids(self) -> dict[str, str]:
        """Run key -> the id as written, for samples keyed by (id, model); empty for runs with unique ids."""
        try:
            return dict(self.db.execute("SELECT sample_id, input_id FROM input_ids"))
        except sqlite3.OperationalError:  # a run written before samples were keyed by (id, model)
            return {}

    def _json_rows(self, query: str, params: Sequence[Any] = ()) -> dict[str, Any]:
        """key -> parsed JSON of a two-column query; empty for runs written before the table existed."""
        try:
            return {key: json.loads(data) for key, data in self.db.execute(query, params)}
        except sqlite3.OperationalError:
            return {}

    def results(self) -> list[ResponseResult]:
        """All stored results in input order, with their claims and verdicts (``iter_results`` reads them a chunk
        at a time)."""
        return list(self.iter_results())

    def iter_results(self, chunk: int | None = None) -> Iterator[ResponseResult]:
        """The stored results in input order, with their claims, verdicts, votes and evidence, read ``chunk``
        responses (``RESULTS_CHUNK`` by default) at a time: memory holds one chunk, whatever the size of the run."""
        chunk = chunk or RESULTS_CHUNK
        added = [self._column("results", column) for table, column, _ in ADDED_COLUMNS if table == "results"]
        query = (
            "SELECT r.sample_id, r.model, r.n_claims, r.n_evaluated, r.n_unsupported, r.n_errors, r.unsupported_rate,"
            f" r.hallucinated, r.score, r.error, r.label_counts, r.subtype_counts, r.usage, {', '.join(added)}"
            " FROM results r JOIN samples s USING (sample_id) ORDER BY s.position"
        )
        has_votes = self.has_votes()
        policy: list[Policy] = []
        rows = self.db.execute(query)
        while batch := rows.fetchmany(chunk):
            parts = self._result_parts([row[0] for row in batch], has_votes=has_votes)
            for row in batch:
                yield self._result(row, parts, policy)

    def _result_parts(self, sample_ids: list[str], *, has_votes: bool) -> _ResultParts:
        """The claims, verdicts and votes of ``sample_ids``, by sample id."""
        where = f"WHERE sample_id IN ({', '.join('?' * len(sample_ids))})"
        parts = _ResultParts()
        for cid, sid, idx, text, spans in self.db.execute(
            f"SELECT * FROM claims {where} ORDER BY sample_id, idx", sample_ids
        ):
            parts.claims.setdefault(sid, []).append(
                Claim(id=cid, sample_id=sid, index=idx, text=text, spans=tuple(Span(**s) for s in json.loads(spans)))
            )
        extras = self._json_rows(f"SELECT claim_id, data FROM verdict_evidence {where}", sample_ids)
        confident_column = self._column("verdicts", "confident", "1")
        kind_column = self._column("verdicts", "error_kind")
        for row in self.db.execute(
            "SELECT claim_id, sample_id, label_reason, label, subtype_reason, subtype, probability, judge, error,"
            f" raw_output, {confident_column}, {kind_column} FROM verdicts {where}",
            sample_ids,
        ):
            cid, sid, lr, label, sr, subtype, prob, judge, error, raw, confident, kind = row
            parts.verdicts.setdefault(sid, {})[cid] = ClaimVerdict(
                claim_id=cid,
                label_reason=lr,
                label=label,
                subtype_reason=sr,
                subtype=subtype,
                probability=prob,
                judge=judge,
                error=error,
                raw_output=raw,
                confident=confident is None or bool(confident),
                error_kind=kind if error is not None else None,
                **extras.get(cid, {}),
            )
        if has_votes:
            for row in self.db.execute(f"SELECT * FROM votes {where} ORDER BY claim_id, judge, repeat", sample_ids):
                cid, sid, judge, repeat, lr, label, sr, subtype, prob, error, raw = row
                parts.votes.setdefault(sid, []).append(
                    Vote(
                        claim_id=cid,
                        judge=judge,
                        repeat=repeat,
                        label_reason=lr,
                        label=label,
                        subtype_reason=sr,
                        subtype=subtype,
                        probability=prob,
                        error=error,
                        raw_output=raw,
                    )
                )
        return parts

    def _result(self, row: tuple[Any, ...], parts: _ResultParts, policy: list[Policy]) -> ResponseResult:
        """One result from its row of the results table and its ``parts``; ``policy`` caches the run's policy
        for rows written before decisions were stored."""
        (sid, model, n_claims, n_eval, n_unsup, n_err, rate, hall, score, error, lc, sc, usage) = row[:13]
        decided, rate_low, rate_high, error_kind = row[13:]
        sample_claims = parts.claims.get(sid, [])
        by_claim = parts.verdicts.get(sid, {})
        flag = None if hall is None else bool(hall)
        decision: dict[str, Any] = {"decided": decided, "unsupported_rate_low": rate_low}
        decision["unsupported_rate_high"] = rate_high
        if decided is None and rate_low is None and rate_high is None:
            # written before decisions were stored (or nothing to decide): work them out again
            if not policy:
                policy.append(self._policy())
            decision = decision_fields(by_claim.values(), policy[0], rate=rate, hallucinated=flag, error=error)
        return ResponseResult(
            sample_id=sid,
            model=model,
            claims=sample_claims,
            verdicts=[by_claim[c.id] for c in sample_claims if c.id in by_claim],
            votes=parts.votes.get(sid, []),
            label_counts={Label(k): v for k, v in json.loads(lc).items()},
            subtype_counts={Subtype(k): v for k, v in json.loads(sc).items()},
            n_claims=n_claims,
            n_evaluated=n_eval,
            n_unsupported=n_unsup,
            n_errors=n_err,
            unsupported_rate=rate,
            hallucinated=flag,
            score=score,
            error=error,
            error_kind=None if error_kind is None else ErrorKind(error_kind),
            usage=Usage.model_validate_json(usage),
            **decision,
        )

    def _policy(self) -> Policy:
        """The run's policy (the default without a readable manifest)."""
        try:
            return getattr(self.read_manifest(), "policy", None) or Policy()
        except RunStoreError:
            return Policy()

    # --- column reads, for runs too large to read as objects ------------------------------------

    def response_columns(self, chunk_rows: int = 100_000) -> Iterator[pd.DataFrame]:
        """The per-response columns, in input order, ``chunk_rows`` rows at a time: the sample's id (and its id
        as written), model, question, context and response, and its stored result's counts, rate, flag, error,
        label and subtype counts (JSON text), decision and rate bounds, with ``n_unsure_claims`` (its claims
        whose verdict is not confident), and its stored features (``SAMPLE_FEATURES``). A sample with stored
        features has its texts NULL (no reader of columns needs them then); one without has NULL features. No
        claim, verdict or result object is built, so a run of millions of responses is read in bounded pieces."""
        decision = ", ".join(
            self._column("results", c) for c in ("decided", "unsupported_rate_low", "unsupported_rate_high")
        )
        tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        given = "i.input_id" if "input_ids" in tables else "NULL AS input_id"
        joins = " LEFT JOIN input_ids i USING (sample_id)" if "input_ids" in tables else ""
        texts = "s.question, s.context, s.response"
        features = ", ".join(f"NULL AS {c}" for c in SAMPLE_FEATURES)
        if "sample_features" in tables:
            # a sample with stored features needs no text: its texts come back as NULL
            texts = ", ".join(f"CASE WHEN f.sample_id IS NULL THEN s.{c} END AS {c}" for c in SAMPLE_TEXTS)
            features = ", ".join(f"f.{c}" for c in SAMPLE_FEATURES)
            joins += " LEFT JOIN sample_features f USING (sample_id)"
        unsure = "0 AS n_unsure_claims"
        if self._has_column("verdicts", "confident"):
            unsure = "COALESCE(u.n, 0) AS n_unsure_claims"
            joins += (
                " LEFT JOIN (SELECT sample_id, COUNT(*) AS n FROM verdicts WHERE confident = 0 GROUP BY sample_id) u"
                " USING (sample_id)"
            )
        query = (
            f"SELECT s.sample_id, {given}, s.model, {texts}, r.n_claims, r.n_evaluated,"
            " r.n_unsupported, r.n_errors, r.unsupported_rate, r.hallucinated, r.error, r.label_counts,"
            f" r.subtype_counts, {decision}, {unsure}, {features}"
            f" FROM samples s LEFT JOIN results r USING (sample_id){joins} ORDER BY s.position"
        )
        yield from pd.read_sql_query(query, self.db, chunksize=chunk_rows)

    def has_undecided_legacy_rows(self) -> bool:
        """Whether a result without an error has no stored decision (a run written before decisions were
        stored): only ``results()`` works those out again."""
        if not all(self._has_column("results", c) for c in ("decided", "unsupported_rate_low")):
            return self.db.execute("SELECT 1 FROM results LIMIT 1").fetchone() is not None
        row = self.db.execute(
            "SELECT 1 FROM results WHERE error IS NULL AND decided IS NULL AND unsupported_rate_low IS NULL"
            " AND unsupported_rate_high IS NULL LIMIT 1"
        ).fetchone()
        return row is not None


def _features_row(sample: Sample) -> tuple[str, str, int, float | None, int]:
    words, overlap, response_hash = style(sample.response, sample.context)
    key = task_key(sample.context, sample.question)
    return _s(sample.id), key, words, None if math.isnan(overlap) else overlap, response_hash


def passages_json(sample: Sample) -> str:
    return json.dumps([p.model_dump(mode="json", exclude_defaults=True) for p in sample.passages], ensure_ascii=False)


#: ClaimVerdict fields kept in the verdict_evidence table (RAG evidence, citations, what the judge saw, the words
#: it found wrong).
EVIDENCE_FIELDS = ("evidence", "evidence_verified", "citations", "citation", "shown", "focus")


def evidence_json(verdict: ClaimVerdict) -> str | None:
    """The verdict's evidence and citation fields as JSON, or None when it has none."""
    data = verdict.model_dump(mode="json", include=set(EVIDENCE_FIELDS), exclude_defaults=True)
    return json.dumps(data, ensure_ascii=False) if data else None
