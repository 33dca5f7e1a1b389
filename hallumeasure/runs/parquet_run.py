"""A run as a Parquet dataset: the run store's tables as Parquet part files in a folder, local or in object storage.

A run too large for one SQLite file, or written by many Ray workers at once, is kept as a folder (a local path, or
any URI ``pyarrow.fs.FileSystem.from_uri`` opens, such as ``s3://bucket/runs/nightly``; other fsspec URIs when
fsspec is installed) laid out as::

    manifest.json              the run's manifest, as in a SQLite run
    parts.json                 the format's name and the parts in input order
    <table>/<key>.parquet      one part per table per batch: samples, passages, input_ids, claims, verdicts,
                               votes, verdict_evidence, and results (written last)
    input_problems.parquet     the input rows that could not become samples

Each table has the columns of the SQLite table of the same name (``runs/schema.py``), and a part holds the rows of
one batch of samples, keyed by a hash of their ids (``batch_key``): a batch written again (a retried Ray task)
replaces its files instead of adding rows. A part counts once its ``results`` file exists, which is written after
the others, so the files of a batch cut off half way are never read. ``positions`` in a part count from 0; the
order of ``parts.json`` puts parts in input order (parts it does not list yet, from a writer that was killed, come
after, by key).

Rows are made by the run store's own write methods, into an SQLite database in memory, and read back through the
store's own read methods the same way (``ParquetRunReader``): both forms of a run give the same records and frames.
``pyarrow`` is the ``parquet`` extra.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd
from pydantic import BaseModel, ValidationError

from hallumeasure.core.errors import ConfigError, RunStoreError
from hallumeasure.core.types import ErrorKind, ResponseResult, RunManifest, Sample
from hallumeasure.runs.schema import ADDED_COLUMNS, SCHEMA
from hallumeasure.runs.store import (
    DATABASE,
    MANIFEST,
    SAMPLE_FEATURES,
    SAMPLE_TEXTS,
    RunStore,
    first_line,
    write_json_atomic,
)

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.fs as pafs

#: The file that makes a folder a Parquet run: the format's name and the order of the parts.
INDEX = "parts.json"
#: The run's input rows that did not become samples (one file for the run, written by the driver).
PROBLEMS = "input_problems.parquet"
#: What a user without pyarrow is told.
INSTALL_HINT = "pip install 'hallumeasure[parquet]'"
#: Samples per part when a SQLite run is converted.
EXPORT_PART_ROWS = 100_000


def require_pyarrow() -> Any:
    """The ``pyarrow`` module, or a ``ConfigError`` that names the extra to install."""
    try:
        import pyarrow
        import pyarrow.fs
        import pyarrow.parquet
    except ImportError as exc:
        what = f"a run in Parquet form needs the parquet extra ({exc.name} is missing)"
        raise ConfigError(f"{what}: {INSTALL_HINT}") from None
    return pyarrow


def is_uri(location: str | Path) -> bool:
    """Whether ``location`` names a place in a filesystem other than this machine's (``s3://``, ``gs://`` ...)."""
    return "://" in str(location)


def is_parquet_run(location: str | Path) -> bool:
    """Whether ``location`` holds a run in Parquet form (its ``parts.json``); a URI always is one (a SQLite run
    lives on a local disk only)."""
    if is_uri(location):
        return True
    return (Path(location) / INDEX).is_file()


class PartIndex(BaseModel):
    """``parts.json``: the format, its version, and the keys of the parts in input order."""

    format: Literal["hallumeasure-parquet-run"] = "hallumeasure-parquet-run"
    version: int = 1
    order: list[str] = []


def batch_key(sample_ids: Sequence[str]) -> str:
    """The key of the part that holds these samples: the same for the same ids in the same order, on any worker."""
    return hashlib.sha256("\n".join(sample_ids).encode("utf-8", "surrogatepass")).hexdigest()[:24]


def open_filesystem(location: str | Path) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem of ``location`` and the path of the run in it. A URI pyarrow does not know (such as
    ``memory://``) is opened through fsspec when that is installed."""
    require_pyarrow()
    import pyarrow.fs as pafs

    if not is_uri(location):
        return pafs.LocalFileSystem(), str(Path(location).absolute())
    uri = str(location)
    import pyarrow as pa

    try:
        return pafs.FileSystem.from_uri(uri)  # type: ignore[no-any-return]
    except pa.ArrowInvalid as exc:  # a scheme pyarrow does not know
        try:
            import fsspec.core  # type: ignore[import-untyped]
        except ImportError:
            raise ConfigError(f"{uri}: pyarrow cannot open it ({first_line(exc)}); fsspec is not installed") from None
        fs, path = fsspec.core.url_to_fs(uri)
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), str(path)


def run_schema(db: sqlite3.Connection) -> None:
    """Create the run store's tables in ``db``, with every column added since the first runs."""
    db.executescript(SCHEMA)
    for table, column, kind in ADDED_COLUMNS:
        if not any(row[1] == column for row in db.execute(f"PRAGMA table_info({table})")):
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def table_columns() -> dict[str, list[tuple[str, str]]]:
    """Each table of the run schema: its columns and their SQL types, in the order SQLite keeps them."""
    db = sqlite3.connect(":memory:")
    try:
        run_schema(db)
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: [(row[1], row[2]) for row in db.execute(f"PRAGMA table_info({t})")] for t in tables}
    finally:
        db.close()


_COLUMNS = table_columns()
#: The tables stored per batch: every table of the schema keyed by sample (all but the input problems, which are
#: the run's), so a table added to the store is kept too; ``results`` is last, since its file marks a part whole.
PART_TABLES = (*sorted(set(_COLUMNS) - {"input_problems", "results"}), "results")


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of a table's parts: SQLite's TEXT as large strings, INTEGER as int64, REAL as float64."""
    pa = require_pyarrow()
    kinds = {"TEXT": pa.large_string(), "INTEGER": pa.int64(), "REAL": pa.float64()}
    return pa.schema([(name, kinds[kind]) for name, kind in _COLUMNS[table]])


def scratch_store(path: str | Path) -> RunStore:
    """A ``RunStore`` over a new database in memory with the run schema: no directory, no lock. A batch is written
    into one with the store's own methods, then taken out as tables (``tables_of``)."""
    store = RunStore.__new__(RunStore)
    store.path = Path(path)
    store.write = False
    store._lock = None  # as RunStore.__init__ sets it for a reader: no lock to release
    store.db = sqlite3.connect(":memory:", check_same_thread=False)
    run_schema(store.db)
    return store


def tables_of(db: sqlite3.Connection, tables: Iterable[str] = PART_TABLES) -> dict[str, pa.Table]:
    """Every row of ``tables`` in ``db`` as Arrow tables with the part schema (a column the database lacks, in a
    run written before it existed, is all null)."""
    pa = require_pyarrow()
    out = {}
    for table in tables:
        present = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        schema = arrow_schema(table)
        select = ", ".join(c if c in present else f"NULL AS {c}" for c in schema.names)
        rows = db.execute(f"SELECT {select} FROM {table}").fetchall() if present else []
        columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
        out[table] = pa.table([pa.array(col, f.type) for col, f in zip(columns, schema, strict=True)], schema=schema)
    return out


def fill(db: sqlite3.Connection, table: str, rows: pa.Table, *, offset: int = 0) -> None:
    """Insert the rows of a part into ``db``'s ``table`` (samples' positions moved on by ``offset``)."""
    if rows.num_rows == 0:
        return
    columns = [rows.column(name).to_pylist() for name in rows.column_names]
    if table == "samples" and offset:
        at = rows.column_names.index("position")
        columns[at] = [p + offset for p in columns[at]]
    marks = ", ".join("?" * len(columns))
    db.executemany(f"INSERT INTO {table} ({', '.join(rows.column_names)}) VALUES ({marks})", zip(*columns, strict=True))


class ParquetDataset:
    """The files of one run in Parquet form: the manifest, the index, the parts."""

    def __init__(self, location: str | Path) -> None:
        self.location = str(location)
        self.fs, self.root = open_filesystem(location)

    def _path(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    def exists(self) -> bool:
        import pyarrow.fs as pafs

        return bool(self.fs.get_file_info(self._path(INDEX)).type == pafs.FileType.File)

    def _read_text(self, name: str) -> str | None:
        try:
            with self.fs.open_input_stream(self._path(name)) as stream:
                return bytes(stream.read()).decode("utf-8")
        except FileNotFoundError:
            return None

    def _write_text(self, name: str, text: str) -> None:
        if not is_uri(self.location):  # a local file: replaced atomically; an object store replaces whole objects
            write_json_atomic(Path(self._path(name)), text)
            return
        with self.fs.open_output_stream(self._path(name)) as stream:
            stream.write(text.encode("utf-8"))

    def read_manifest(self) -> RunManifest | None:
        text = self._read_text(MANIFEST)
        if text is None:
            return None
        try:
            return RunManifest.model_validate_json(text)
        except ValidationError as exc:
            where = self._path(MANIFEST)
            raise RunStoreError(f"{where} cannot be read ({first_line(exc)}); the run is damaged") from None

    def write_manifest(self, manifest: RunManifest) -> None:
        self._write_text(MANIFEST, manifest.model_dump_json(indent=2))

    def read_index(self) -> PartIndex:
        text = self._read_text(INDEX)
        if text is None:
            raise RunStoreError(f"{self.location} holds no run in Parquet form (no {INDEX}); give a run folder")
        try:
            return PartIndex.model_validate_json(text)
        except ValidationError as exc:
            raise RunStoreError(f"{self._path(INDEX)} cannot be read ({first_line(exc)}); the run is damaged") from None

    def write_index(self, index: PartIndex) -> None:
        self._write_text(INDEX, index.model_dump_json())

    def create(self, *, overwrite: bool) -> None:
        """Make the folder a new run's (with ``overwrite``, deleting the run it holds; refusing other files)."""
        import pyarrow.fs as pafs

        info = self.fs.get_file_info(self.root)
        if info.type == pafs.FileType.File:
            raise RunStoreError(f"{self.location} is a file, not a run folder; choose another --out")
        if info.type == pafs.FileType.Directory and overwrite:
            entries = self.fs.get_file_info(pafs.FileSelector(self.root))
            names = {Path(e.path).name for e in entries}
            if names and not names & {INDEX, MANIFEST, DATABASE}:
                raise RunStoreError(
                    f"{self.location} is not empty and holds no hallumeasure run; refusing to delete it: "
                    "choose a new --out"
                )
            self.fs.delete_dir_contents(self.root)
        elif self.fs.get_file_info(self._path(DATABASE)).type == pafs.FileType.File:
            raise RunStoreError(
                f"{self.location} holds a run in SQLite form; measure it again without --out-format parquet, "
                "or choose another --out"
            )
        self.fs.create_dir(self.root, recursive=True)
        if overwrite or not self.exists():
            self.write_index(PartIndex())

    def keys(self, table: str) -> set[str]:
        """The keys of ``table``'s part files."""
        import pyarrow.fs as pafs

        selector = pafs.FileSelector(self._path(table), allow_not_found=True)
        return {Path(e.path).stem for e in self.fs.get_file_info(selector) if e.path.endswith(".parquet")}

    def ordered_keys(self) -> list[str]:
        """The whole parts (those with a results file) in input order: as ``parts.json`` lists them, then any it
        does not list yet (written before a writer was killed), by key."""
        whole = self.keys("results")
        listed = [key for key in dict.fromkeys(self.read_index().order) if key in whole]
        return listed + sorted(whole - set(listed))

    def write_part(self, key: str, tables: dict[str, pa.Table]) -> None:
        """Write one batch's tables under ``key``, the results file last (it makes the part count)."""
        import pyarrow.parquet as pq

        for table in PART_TABLES:
            self.fs.create_dir(self._path(table), recursive=True)
            pq.write_table(tables[table], self._path(table, f"{key}.parquet"), filesystem=self.fs)

    def stored_count(self) -> int:
        """How many results the whole parts hold, from each results file's footer (no rows are read)."""
        import pyarrow.parquet as pq

        return sum(
            pq.ParquetFile(self._path("results", f"{key}.parquet"), filesystem=self.fs).metadata.num_rows
            for key in self.keys("results")
        )

    def read_part(self, table: str, key: str, columns: list[str] | None = None) -> pa.Table:
        """One part of ``table`` (an empty table with the part schema when the batch had no such rows)."""
        import pyarrow.parquet as pq

        try:
            return pq.read_table(self._path(table, f"{key}.parquet"), filesystem=self.fs, columns=columns)
        except FileNotFoundError:
            schema = arrow_schema(table)
            return schema.empty_table() if columns is None else schema.empty_table().select(columns)

    def read_problems(self) -> pa.Table | None:
        import pyarrow.parquet as pq

        try:
            return pq.read_table(self._path(PROBLEMS), filesystem=self.fs)
        except FileNotFoundError:
            return None

    def write_problems(self, rows: pa.Table) -> None:
        import pyarrow.parquet as pq

        pq.write_table(rows, self._path(PROBLEMS), filesystem=self.fs)

    def repeated_ids(self, keys: Iterable[str]) -> set[str]:
        """The ids stored in more than one row of the parts ``keys`` (their id columns read, nothing else)."""
        pa = require_pyarrow()
        import pyarrow.compute as pc

        chunks = [c for key in keys for c in self.read_part("samples", key, ["sample_id"]).column(0).chunks]
        if not chunks:
            return set()
        counts = pc.value_counts(pa.chunked_array(chunks, pa.large_string()))
        numbers = counts.field("counts")
        return set(pc.filter(counts.field("values"), pc.greater(numbers, 1)).to_pylist())

    def count_rows(self, table: str, keys: Iterable[str]) -> int:
        """Rows in the parts ``keys`` of ``table``, from the files' footers."""
        import pyarrow.parquet as pq

        total = 0
        for key in keys:
            with self.fs.open_input_file(self._path(table, f"{key}.parquet")) as handle:
                total += pq.ParquetFile(handle).metadata.num_rows
        return total

    def drop_samples(self, key: str, sample_ids: set[str]) -> None:
        """Rewrite the part ``key`` without the rows of ``sample_ids`` (in every table)."""
        pa = require_pyarrow()
        import pyarrow.compute as pc

        drop = pa.array(sorted(sample_ids), pa.large_string())
        tables = {}
        for table in PART_TABLES:
            rows = self.read_part(table, key)
            tables[table] = rows.filter(pc.invert(pc.is_in(rows.column("sample_id"), value_set=drop)))
        self.write_part(key, tables)

    def drop_partial(self) -> None:
        """Delete the files of parts that never got their results file (a batch cut off half way)."""
        whole = self.keys("results")
        for table in PART_TABLES[:-1]:
            for key in self.keys(table) - whole:
                self.fs.delete_file(self._path(table, f"{key}.parquet"))


def write_batch(dataset: ParquetDataset, samples: Sequence[Sample], results: Sequence[ResponseResult]) -> str:
    """Store one batch of samples (numbered from 0) and their results as a part, through the run store's own
    write methods; return the part's key. Writing the same batch again replaces the part."""
    key = batch_key([s.id for s in samples])
    with scratch_store(dataset.location) as store:
        store.add_samples(list(samples))
        store.write_results(list(results))
        dataset.write_part(key, tables_of(store.db))
    return key


class ParquetRunReader(RunStore):
    """A Parquet run read whole into a ``RunStore`` in memory, so that ``Run.load`` reads it with the store's own
    read methods (the records and frames of both forms are made by the same code)."""

    def __init__(self, location: str | Path) -> None:
        self.dataset = ParquetDataset(location)
        scratch = scratch_store(location)
        self.path, self.write, self._lock, self.db = scratch.path, False, None, scratch.db
        offset = 0
        with self.db:
            for key in self.dataset.ordered_keys():
                parts = {table: self.dataset.read_part(table, key) for table in PART_TABLES}
                for table, rows in parts.items():
                    fill(self.db, table, rows, offset=offset)
                positions = parts["samples"].column("position").to_pylist()
                offset += max(positions) + 1 if positions else 0  # a part that lost a repeated id has a gap
            problems = self.dataset.read_problems()
            if problems is not None:
                fill(self.db, "input_problems", problems)

    def read_manifest(self) -> RunManifest | None:
        return self.dataset.read_manifest()


class ParquetRunWriter(RunStore):
    """The driver's side of a run whose workers write its parts: the manifest, the index, the input problems, and
    what a resume and the finished manifest read from the parts (ids stored, results a part at a time). It holds
    no rows of its own, so the driver's memory does not grow with the run."""

    def __init__(self, location: str | Path, *, overwrite: bool = False) -> None:
        self.dataset = ParquetDataset(location)
        scratch = scratch_store(location)
        self.path, self.write, self._lock, self.db = scratch.path, True, None, scratch.db
        self.dataset.create(overwrite=overwrite)
        self.dataset.drop_partial()
        self.order = self.dataset.ordered_keys()

    def add_order(self, key: str) -> None:
        """Note a part that came back (in input order)."""
        if not self.order or self.order[-1] != key:
            self.order.append(key)

    def close(self) -> None:
        self.write_index(self.order)
        super().close()

    def read_manifest(self) -> RunManifest | None:
        return self.dataset.read_manifest()

    def write_manifest(self, manifest: RunManifest) -> None:
        self.dataset.write_manifest(manifest)

    def done_ids(self) -> set[str]:
        return {sid for key in self.dataset.keys("results") for sid in self._results_column(key, "sample_id")}

    def error_ids(self, kind: ErrorKind) -> set[str]:
        found = set()
        for key in self.dataset.keys("results"):
            part = self.dataset.read_part("results", key, ["sample_id", "error_kind"]).to_pydict()
            found |= {s for s, k in zip(part["sample_id"], part["error_kind"], strict=True) if k == kind.value}
        return found

    def _results_column(self, key: str, column: str) -> list[Any]:
        return list(self.dataset.read_part("results", key, [column]).column(column).to_pylist())

    def iter_results(self, chunk: int | None = None, *, only: Sequence[str] | None = None) -> Iterator[ResponseResult]:
        """The stored results, a part at a time (each part read into a store in memory and out again); with
        ``only``, just those of these sample ids."""
        for part in self._parts():
            yield from part.iter_results(chunk, only=only)

    def samples(self, only: Sequence[str] | None = None) -> list[Sample]:
        """The stored samples in input order (with ``only``, just those of these ids), read a part at a time."""
        return [sample for part in self._parts() for sample in part.samples(only)]

    def judges(self) -> set[str]:
        """The judges named by the answered verdicts of every part."""
        return {judge for part in self._parts() for judge in part.judges()}

    def _parts(self) -> Iterator[RunStore]:
        """Each part in input order, as a store in memory that holds that part's rows only."""
        self.write_index(self.order)
        for key in self.dataset.ordered_keys():
            with scratch_store(self.dataset.location) as part:
                with part.db:
                    for table in PART_TABLES:
                        fill(part.db, table, self.dataset.read_part(table, key))
                yield part

    def write_index(self, order: list[str]) -> None:
        """Write ``parts.json`` with the parts in the order they came back."""
        self.order = list(dict.fromkeys(order))
        self.dataset.write_index(PartIndex(order=self.order))

    def write_input_problems(self, problems: Iterable[Any]) -> None:
        with scratch_store(self.dataset.location) as store:
            store.write_input_problems(problems)
            self.dataset.write_problems(tables_of(store.db, ["input_problems"])["input_problems"])


# --- reading as columns ---------------------------------------------------------------------------------------

#: The columns of ``RunStore.response_columns``, in its order.
RESPONSE_COLUMNS = (
    "sample_id input_id model question context response n_claims n_evaluated n_unsupported n_errors unsupported_rate"
    " hallucinated error label_counts subtype_counts decided unsupported_rate_low unsupported_rate_high"
    " n_unsure_claims"
).split() + list(SAMPLE_FEATURES)
#: What ``response_columns`` reads of the results parts.
_RESULT_READ = RESPONSE_COLUMNS[6 : -1 - len(SAMPLE_FEATURES)]


def response_columns(dataset: ParquetDataset) -> Iterator[pd.DataFrame]:
    """What ``RunStore.response_columns`` gives, a part at a time: the per-response columns in input order, read
    with pyarrow (only the columns named), with ``n_unsure_claims`` counted from the verdicts' ``confident``, and
    each sample's stored features (its texts None where it has them, as the store gives them)."""
    for key in dataset.ordered_keys():
        samples = dataset.read_part(
            "samples", key, ["sample_id", "position", "model", "question", "context", "response"]
        ).to_pandas()
        given = dataset.read_part("input_ids", key).to_pandas()
        results = dataset.read_part("results", key, ["sample_id", *_RESULT_READ]).to_pandas()
        verdicts = dataset.read_part("verdicts", key, ["sample_id", "confident"]).to_pandas()
        unsure = verdicts[verdicts["confident"] == 0].groupby("sample_id").size().rename("n_unsure_claims")
        piece = samples.sort_values("position").merge(given, on="sample_id", how="left")
        piece = piece.merge(results, on="sample_id", how="left").merge(unsure, on="sample_id", how="left")
        piece["n_unsure_claims"] = piece["n_unsure_claims"].fillna(0).astype("int64")
        features = dataset.read_part("sample_features", key, ["sample_id", *SAMPLE_FEATURES]).to_pandas()
        piece = piece.merge(features, on="sample_id", how="left", indicator="_featured")
        featured = (piece.pop("_featured") == "both").to_numpy()
        for column in SAMPLE_TEXTS:  # a sample with stored features needs no text
            piece[column] = piece[column].astype(object).where(~featured, None)
        for column in piece.columns:  # as pandas reads SQL: a text column with no value at all holds None
            series = piece[column]
            if series.dtype != object and pd.api.types.is_string_dtype(series) and series.isna().all():
                piece[column] = pd.Series([None] * len(piece), index=piece.index, dtype=object)
        yield piece[RESPONSE_COLUMNS].reset_index(drop=True)


def has_undecided_legacy_rows(dataset: ParquetDataset) -> bool:
    """Whether a result without an error has no stored decision (a run converted from one written before
    decisions were stored): such a run is read whole (``Run.load``), as its SQLite form is."""
    import pyarrow.compute as pc

    for key in dataset.ordered_keys():
        part = dataset.read_part("results", key, ["error", "decided", "unsupported_rate_low", "unsupported_rate_high"])
        missing = pc.and_(
            pc.and_(pc.is_null(part.column("error")), pc.is_null(part.column("decided"))),
            pc.and_(pc.is_null(part.column("unsupported_rate_low")), pc.is_null(part.column("unsupported_rate_high"))),
        )
        if pc.any(missing).as_py():
            return True
    return False


# --- converting a SQLite run ----------------------------------------------------------------------------------


def export_parquet(
    run_dir: str | Path, dest: str | Path, *, overwrite: bool = False, part_rows: int = EXPORT_PART_ROWS
) -> ParquetDataset:
    """Write the run in ``run_dir`` (SQLite form) as a Parquet run at ``dest`` (a folder or a URI), ``part_rows``
    samples to a part; every table goes, and the manifest last."""
    dataset = ParquetDataset(dest)
    if dataset.exists() and not overwrite:
        raise RunStoreError(f"{dest} already holds a run; pass --overwrite to replace it, or choose another --out")
    dataset.create(overwrite=overwrite)
    order: list[str] = []
    with RunStore(run_dir) as store:
        db = store.db
        manifest = store.read_manifest()
        ids = db.execute("SELECT sample_id FROM samples ORDER BY position")
        start = 0
        while batch := ids.fetchmany(part_rows):
            # a temporary database holds the part's rows, taken from the run by id (positions counted from 0)
            part = scratch_store(dest)
            part.db.execute("ATTACH DATABASE ? AS run", (str(Path(run_dir) / DATABASE),))
            part.db.execute("CREATE TEMP TABLE part_ids (sample_id TEXT PRIMARY KEY)")
            part.db.executemany("INSERT INTO temp.part_ids VALUES (?)", batch)
            _copy_part(part.db, start)
            tables = tables_of(part.db)
            part.close()
            key = f"{start:012d}"
            dataset.write_part(key, tables)
            order.append(key)
            start += len(batch)
        problems = tables_of(db, ["input_problems"]) if _has_table(db, "input_problems") else None
    dataset.write_problems(problems["input_problems"] if problems else arrow_schema("input_problems").empty_table())
    dataset.write_index(PartIndex(order=order))
    if manifest is not None:
        dataset.write_manifest(manifest)
    return dataset


def _has_table(db: sqlite3.Connection, table: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def _copy_part(db: sqlite3.Connection, start: int) -> None:
    """Copy the rows of ``temp.part_ids``'s samples from the attached run into ``db``'s tables."""
    with db:
        for table in PART_TABLES:
            if not _has_table_in(db, "run", table):
                continue
            present = {row[1] for row in db.execute(f"PRAGMA run.table_info({table})")}
            names = [name for name, _ in _COLUMNS[table]]
            select = ", ".join(
                (f"t.{c} - {int(start)}" if (table, c) == ("samples", "position") else f"t.{c}")
                if c in present
                else "NULL"
                for c in names
            )
            db.execute(
                f"INSERT INTO main.{table} ({', '.join(names)}) SELECT {select} FROM run.{table} t"
                " JOIN temp.part_ids USING (sample_id)"
            )


def _has_table_in(db: sqlite3.Connection, schema: str, table: str) -> bool:
    query = f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?"
    return db.execute(query, (table,)).fetchone() is not None
