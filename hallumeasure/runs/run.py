"""``Run``: the one read model of a stored run. Every reader of a run (show, view, compare, audit, calibrate,
plan, the reports and the Python API) gets its data from here.

``Run.load`` opens the run's store once, reads everything a reader needs, and closes it again: the
manifest, the typed records (``samples`` with their passages, ``results`` with their claims, verdicts,
evidence and votes) and the pandas frames built from the same read (``responses``, ``claims``,
``summary``, ``skipped``, ``votes``). No reader opens the store a second time to get back what a frame
left out: what the frames do not hold (a verdict's every quote, a sample's passages) is on the records.

The frames are typed so that a missing value stays missing and reads as such: counts are nullable
integers (``Int64``), rates and probabilities nullable floats (``Float64``), flags nullable booleans
(``boolean``), and text columns hold ``str`` or ``None`` (never NaN). A sample not measured yet has
``<NA>`` counts, not 0 or NaN; a claim without a verdict has ``None`` as its label.

Layers above add ways to look at a run without adding data: the report functions take a ``Run``, and
``hallumeasure.api.run.Run`` (what ``hallumeasure.load_run`` returns) is a subclass that adds the
notebook face (HTML reprs, intervals, the viewer, comparison, audit) over the same attributes.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, Self

import pandas as pd
from pydantic import BaseModel

from hallumeasure.core.aggregate import RunTally
from hallumeasure.core.config import redact
from hallumeasure.core.errors import RunStoreError
from hallumeasure.core.labels import Label, Policy
from hallumeasure.core.spans import unsupported_spans
from hallumeasure.core.types import ClaimVerdict, ErrorKind, ResponseResult, RunManifest, Sample
from hallumeasure.runs.parquet_run import ParquetDataset, ParquetRunReader, has_undecided_legacy_rows, is_parquet_run
from hallumeasure.runs.parquet_run import response_columns as parquet_columns
from hallumeasure.runs.store import DATABASE, SAMPLE_FEATURES, RunStore, first_line

#: Columns of the frames that hold counts (nullable integers) and numbers (nullable floats).
INT_COLUMNS = frozenset({"n_claims", "n_evaluated", "n_unsupported", "n_errors", "claim_index", "repeat", "row"})
FLOAT_COLUMNS = frozenset(
    {
        "unsupported_rate",
        "score",
        "probability",
        "unsupported_rate_low",
        "unsupported_rate_high",
        "mean_unsupported_rate",
        "hallucinated_share",
        "decided_share",
        "mean_unsupported_rate_low",
        "mean_unsupported_rate_high",
    }
)


class ErrorReason(BaseModel):
    """One cause of a run's error rows, how many rows it gave, and one of their messages as its example.

    Rows are grouped by their kind (``ErrorKind``), so that one cause whose messages differ in a number (a
    window refused at 2,282 tokens, then at 2,301) is one line; rows whose kind was not recorded are grouped by
    their message."""

    reason: str
    count: int
    #: Whether the rows are whole responses (the sample failed) or single claims (no verdict).
    rows: Literal["response", "claim"]
    kind: ErrorKind = ErrorKind.UNKNOWN


class Run:
    """A stored run, read once: its manifest, its typed records and its frames. Get one with ``Run.load``."""

    def __init__(
        self,
        path: Path,
        *,
        manifest: RunManifest | None,
        samples: list[Sample],
        results: list[ResponseResult],
        responses: pd.DataFrame,
        claims: pd.DataFrame,
        summary: pd.DataFrame,
        skipped: pd.DataFrame,
        votes: pd.DataFrame,
        name: str | None = None,
    ) -> None:
        #: The run directory.
        self.path: Path = path
        #: The name reports give the run: the directory's name (its parent's added where two runs share one).
        self.name: str = name if name is not None else path.name
        #: How the run was measured (stages, policy, settings, counts, usage); None for a damaged run.
        self.manifest: RunManifest | None = manifest
        #: Every sample in input order, with its passages.
        self.samples: list[Sample] = samples
        #: Every stored result in input order, with its claims, verdicts (evidence and citations included) and votes.
        self.results: list[ResponseResult] = results
        #: One row per sample: the response, its counts (``label_counts`` and ``subtype_counts`` are dicts),
        #: ``unsupported_rate``, ``hallucinated`` and ``error``; counts are ``<NA>`` for a sample not measured yet.
        #: ``unsupported_spans`` lists the characters of the response behind its unsupported claims
        #: (``{start, end, text, confidence, label, subtype, claims}``, merged where claims overlap).
        self.responses: pd.DataFrame = responses
        #: One row per claim with its verdict: ``label``, ``subtype``, reasons, ``spans`` (a list of dicts),
        #: evidence and citation columns (``evidence_sources``: the ``{id, kind}`` of each source its evidence
        #: names); a claim without a verdict has ``error`` set.
        self.claims: pd.DataFrame = claims
        #: The whole run and each model: responses, claims, error rows, mean rate, hallucinated share, labels.
        self.summary: pd.DataFrame = summary
        #: Input rows that could not become samples: row number, id when known, and why.
        self.skipped: pd.DataFrame = skipped
        #: Every vote on every claim (repeats or a panel); one per claim when one judge answered once.
        self.votes: pd.DataFrame = votes
        #: Read by ``load_columns``: per-response numbers only, no records, claims or texts.
        self.columns_only: bool = False
        #: Of a run read as columns: the records of the few samples it holds (``with_records``), as a run.
        self._records: Run | None = None
        #: Of a run read by ``load_table``: whether it stored passages or evidence (None: not asked yet).
        self._rag_rows: bool | None = None

    @classmethod
    def load(cls, path: str | Path, *, name: str | None = None) -> Self:
        """Read the run in ``path`` (a directory written by ``measure``, or a run in Parquet form: a folder or a
        URI, see ``runs/parquet_run.py``); its store is opened once."""
        with _reading(path) as store:
            return cls(Path(path), name=name, **_read(store))

    @classmethod
    def load_columns(
        cls,
        path: str | Path,
        derive: Callable[[pd.DataFrame], pd.DataFrame],
        *,
        name: str | None = None,
        chunk_rows: int = 100_000,
    ) -> Self:
        """The run's manifest and its per-response numbers, read as columns in pieces of ``chunk_rows`` rows, for
        readers of large runs (an audit of millions of responses) that need no claim, verdict or text.

        ``responses`` holds the columns of ``RunStore.response_columns`` without the texts: ``derive`` turns each
        piece (texts and JSON counts included) into the columns to keep in their place. ``samples``, ``results``,
        ``claims``, ``votes`` and ``skipped`` are left empty (``columns_only`` is True), so such a run is for the
        readers that say they take one. A run written before decisions were stored is read whole (``load``),
        since only the records can work its decisions out again. A run in Parquet form is read a part at a time
        (``parquet_run.response_columns``), whatever ``chunk_rows`` says.
        """
        if is_parquet_run(path):
            dataset = ParquetDataset(path)
            legacy = has_undecided_legacy_rows(dataset)
            if not legacy:
                manifest = dataset.read_manifest()
                pieces = [_column_piece(piece, derive) for piece in parquet_columns(dataset)]
        else:
            with _reading(path) as store:
                legacy = store.has_undecided_legacy_rows()
                if not legacy:
                    manifest = store.read_manifest()
                    pieces = [_column_piece(piece, derive) for piece in store.response_columns(chunk_rows)]
        if legacy:
            return cls.load(path, name=name)
        responses = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame()
        empty = pd.DataFrame()
        run = cls(
            Path(path),
            name=name,
            manifest=manifest,
            samples=[],
            results=[],
            responses=responses,
            claims=empty,
            summary=empty,
            skipped=empty,
            votes=empty,
        )
        run.columns_only = True
        return run

    @classmethod
    def load_table(
        cls, path: str | Path, derive: Callable[[pd.DataFrame], pd.DataFrame], *, name: str | None = None
    ) -> Self:
        """``load_columns`` with the run's small tables besides: the skipped input rows, and the votes of a run
        measured with repeats or a panel (none otherwise: one vote per claim says nothing of the judge's
        stability). What the summaries of ``show``, ``measure`` and ``compare`` read, whatever the run's size;
        the records of the few samples they print come from ``records_of``."""
        run = cls.load_columns(path, derive, name=name)
        if run.columns_only:
            with _reading(run.path) as store:
                run.skipped = typed(store.input_problems())
                run.votes = typed(store.votes()) if store.has_votes() else pd.DataFrame()
                run._rag_rows = store.has_rag_rows()
        return run

    def records_of(self, sample_ids: Iterable[str]) -> Run:
        """A run of just the samples ``sample_ids`` (run keys), with their records and frames as ``load`` gives
        them: queried by id from the store for a run read as columns, taken from the records otherwise."""
        wanted = list(dict.fromkeys(sample_ids))
        if self._records is not None and set(wanted) <= {s.id for s in self._records.samples}:
            return self._records.records_of(wanted)
        if self.columns_only:
            with _reading(self.path) as store:
                return Run(self.path, name=self.name, **_read(store, wanted))
        keep = set(wanted)
        return Run(
            self.path,
            name=self.name,
            manifest=self.manifest,
            samples=[s for s in self.samples if s.id in keep],
            results=[r for r in self.results if r.sample_id in keep],
            responses=_rows_of(self.responses, keep),
            claims=_rows_of(self.claims, keep),
            summary=typed(_summary((r for r in self.results if r.sample_id in keep), self.policy)),
            skipped=self.skipped,
            votes=_rows_of(self.votes, keep),
        )

    def with_records(self, sample_ids: Iterable[str]) -> Self:
        """This run read as columns, holding the records (``samples``, ``results``) of ``sample_ids`` too: for a
        page that shows a few responses beside numbers of the whole run. A run read whole is returned as it is."""
        if not self.columns_only:
            return self
        part = self.records_of(sample_ids)
        run = self.renamed(self.name)
        run.samples, run.results, run._records = part.samples, part.results, part
        return run

    def input_texts(self) -> Iterator[pd.DataFrame]:
        """Frames with the id as written (``input_id``), model, question, context and response of every sample, in
        pieces of input order (the texts a run read as columns left out)."""
        if not self.columns_only:
            yield self.responses
            return
        with _reading(self.path) as store:
            for piece in store.input_texts():
                yield piece.assign(input_id=piece["input_id"].where(piece["input_id"].notna(), piece["sample_id"]))

    def first_claims(self, limit: int, *, models: Sequence[str] = (), labels: Sequence[str] = ()) -> tuple[Run, int]:
        """A run of the samples that hold the first ``limit`` claims of these ``models`` with these ``labels`` (either
        empty: any), read by id (``records_of``), and how many claims this run has in all."""
        with _reading(self.path) as store:
            ids, total = store.first_claims(limit, models=models, labels=labels)
        return self.records_of(ids), total

    def verdict_tally(self) -> tuple[int, int]:
        """(verdicts with a label and no error, those among them the judge was not confident of)."""
        if self.columns_only:
            with _reading(self.path) as store:
                return store.verdict_tally()
        verdicts = [v for r in self.results for v in r.verdicts if v.ok]
        return len(verdicts), sum(1 for v in verdicts if not v.confident)

    def has_rag_rows(self) -> bool:
        """Whether the run stored passages or any verdict evidence, citation or cut source (the RAG numbers)."""
        if self._rag_rows is None:
            with _reading(self.path) as store:
                self._rag_rows = store.has_rag_rows()
        return self._rag_rows

    @classmethod
    def of(cls, run: Run | str | Path) -> Run:
        """``run`` itself when it is loaded already, else the run loaded from that path."""
        return run if isinstance(run, Run) else cls.load(run)

    def renamed(self, name: str) -> Self:
        """The same run (the same data, not a copy of it) under another name, for a report of several runs."""
        renamed = type(self)(
            self.path,
            name=name,
            manifest=self.manifest,
            samples=self.samples,
            results=self.results,
            responses=self.responses,
            claims=self.claims,
            summary=self.summary,
            skipped=self.skipped,
            votes=self.votes,
        )
        renamed.columns_only, renamed._records, renamed._rag_rows = self.columns_only, self._records, self._rag_rows
        return renamed

    # --- plain facts ----------------------------------------------------------------------------

    @property
    def policy(self) -> Policy:
        """The run's policy (the default for a run without a manifest)."""
        return self.manifest.policy if self.manifest is not None else Policy()

    @property
    def judge(self) -> str | None:
        return self.manifest.judge if self.manifest else None

    @property
    def extractor(self) -> str | None:
        return self.manifest.extractor if self.manifest else None

    @property
    def status(self) -> str | None:
        """``complete``, or ``running`` / ``interrupted`` / ``incomplete`` for a run that did not finish."""
        return self.manifest.status if self.manifest else None

    @property
    def unfinished(self) -> bool:
        """The run never finished: it crashed, was killed, or is still being written."""
        return self.manifest is not None and self.manifest.status not in ("complete",)

    @property
    def n_stored(self) -> int:
        """How many samples have a stored result."""
        if self.columns_only:
            return int(self.responses["n_claims"].notna().sum())
        return len(self.results)

    @property
    def errors(self) -> pd.DataFrame:
        """The claims that ended as error rows (no verdict), with why."""
        return self.claims[self.claims["label"].isna()]

    @cached_property
    def verdicts(self) -> dict[str, ClaimVerdict]:
        """Claim id -> its verdict (claims without one are absent)."""
        return {v.claim_id: v for r in self.results for v in r.verdicts}

    @cached_property
    def error_reasons(self) -> list[ErrorReason]:
        """Distinct reasons of the error rows, most frequent first (redacted, shortened to 300 characters)."""
        return self.error_reasons_within(300)

    def error_reasons_within(self, width: int) -> list[ErrorReason]:
        """The causes of the error rows, most frequent first: one per kind of error (``ErrorReason``), with the first
        row's message as its example, shortened to ``width`` characters.

        Messages are redacted again (they were stored redacted; the environment may hold a secret that
        was not set then).
        """
        counts: Counter[tuple[Literal["response", "claim"], ErrorKind, str]] = Counter()
        examples: dict[tuple[Literal["response", "claim"], ErrorKind, str], str] = {}
        rows: list[tuple[Literal["response", "claim"], ErrorKind | None, str | None]] = []
        r = self.responses
        clean = "error" not in r or (r["error"].isna().all() and not r["n_errors"].fillna(0).any())
        if self.columns_only and not clean:  # only the error rows are read (it holds a few samples' records at most)
            with _reading(self.path) as store:
                stored = store.error_rows()
            rows = [("response" if w == "response" else "claim", ErrorKind(k) if k else None, e) for w, k, e in stored]
        for result in [] if self.columns_only else self.results:
            rows.append(("response", result.error_kind, result.error))
            rows += [("claim", v.error_kind, v.error) for v in result.verdicts]
        for where, kind, error in rows:
            if not (isinstance(error, str) and error.strip()):
                continue
            text = " ".join(redact(error).split())
            text = text if len(text) <= width else text[: width - 1] + "\u2026"
            known = kind is not None and kind is not ErrorKind.UNKNOWN
            key = (where, kind or ErrorKind.UNKNOWN, "" if known else text)
            counts[key] += 1
            examples.setdefault(key, text)
        return [ErrorReason(reason=examples[key], count=n, rows=key[0], kind=key[1]) for key, n in counts.most_common()]


@contextmanager
def _reading(path: str | Path) -> Iterator[RunStore]:
    """The run's store, open for reading (a run in Parquet form read into one in memory); closed after, and a
    damaged one named as such."""
    store = ParquetRunReader(path) if is_parquet_run(path) else RunStore(path)
    try:
        yield store
    except (sqlite3.Error, pd.errors.DatabaseError, ValueError, KeyError) as exc:
        # A damaged run.sqlite ("file is not a database", a missing table or column) or rows that no
        # longer parse: say which run, not a traceback from deep inside pandas.
        where = path if is_parquet_run(path) else Path(path) / DATABASE
        raise RunStoreError(
            f"{where} cannot be read ({first_line(exc)}); the run is damaged: "
            "measure it again into a new --out (or with --overwrite)"
        ) from None
    finally:
        store.close()


def load_run(path: str | Path) -> Run:
    """``Run.load(path)``: the run in ``path`` as its read model."""
    return Run.load(path)


# --- reading the store, once ------------------------------------------------------------------------


def _read(store: RunStore, only: list[str] | None = None) -> dict[str, Any]:
    """Everything ``Run`` holds, from one open store; with ``only``, of just those sample ids (queried by id)."""
    manifest = store.read_manifest()
    samples = store.samples(only)
    results = list(store.iter_results(only=only))
    params = () if only is None else (json.dumps(only),)
    where = "" if only is None else " WHERE s.sample_id IN (SELECT value FROM json_each(?))"
    responses = pd.read_sql_query(
        "SELECT s.sample_id, s.model, s.question, s.context, s.response, r.n_claims, r.n_evaluated,"
        " r.n_unsupported, r.n_errors, r.unsupported_rate, r.hallucinated, r.score, r.error,"
        " r.label_counts, r.subtype_counts"
        f" FROM samples s LEFT JOIN results r USING (sample_id){where} ORDER BY s.position",
        store.db,
        params=params,
    )
    claims = pd.read_sql_query(
        "SELECT c.sample_id, s.model, c.claim_id, c.idx AS claim_index, c.text AS claim, c.spans, v.label,"
        " v.subtype, v.label_reason, v.subtype_reason, v.probability, v.judge, v.error, v.raw_output"
        f" FROM claims c JOIN samples s USING (sample_id) LEFT JOIN verdicts v USING (claim_id){where}"
        " ORDER BY s.position, c.idx",
        store.db,
        params=params,
    )
    # ``sample_id`` is the run key (unique); ``input_id`` the id as written, which several models' rows may share.
    given = {s.id: s.given_id for s in samples}
    responses["input_id"] = [given.get(k, k) for k in responses["sample_id"]]
    claims["input_id"] = [given.get(k, k) for k in claims["sample_id"]]
    responses["hallucinated"] = responses["hallucinated"].map({1: True, 0: False}).astype("boolean")
    _add_evidence_columns(claims, results)
    _add_decision_columns(responses, claims, results)
    _decode_json_columns(responses, claims)
    policy = manifest.policy if manifest else Policy()
    _add_span_columns(responses, claims, samples, results, policy)
    return {
        "manifest": manifest,
        "samples": samples,
        "results": results,
        "responses": typed(responses),
        "claims": typed(claims),
        "summary": typed(_summary(results, policy)),
        "skipped": typed(store.input_problems()),
        "votes": typed(store.votes(only)),
    }


def _rows_of(frame: pd.DataFrame, keep: set[str]) -> pd.DataFrame:
    """The rows of a frame whose ``sample_id`` is in ``keep``, numbered from 0 as a read of them would be."""
    if "sample_id" not in frame.columns:
        return frame
    return frame[frame["sample_id"].isin(keep)].reset_index(drop=True)


#: The text and JSON columns of ``RunStore.response_columns`` that ``load_columns`` replaces by what it derives.
_TEXT_COLUMNS = ["question", "context", "response", "label_counts", "subtype_counts"]


def _column_piece(piece: pd.DataFrame, derive: Callable[[pd.DataFrame], pd.DataFrame]) -> pd.DataFrame:
    """One piece of ``Run.load_columns``: typed numbers, the id as written, and ``derive``'s columns for the texts."""
    derived = derive(piece)
    piece["input_id"] = piece["input_id"].where(piece["input_id"].notna(), piece["sample_id"])
    for column in ("hallucinated", "decided"):
        piece[column] = piece[column].map({1: True, 0: False}).astype("boolean")
    for column in ("n_claims", "n_evaluated", "n_unsupported", "n_errors", "n_unsure_claims"):
        piece[column] = piece[column].astype("Int64")
    for column in ("unsupported_rate", "unsupported_rate_low", "unsupported_rate_high"):
        piece[column] = piece[column].astype("Float64")
    piece["model"] = piece["model"].astype(object).where(piece["model"].notna(), None)
    piece["error"] = piece["error"].astype(object).where(piece["error"].notna(), None)
    stored = [c for c in SAMPLE_FEATURES if c in piece.columns]  # read by ``derive``, replaced by what it gives
    return pd.concat([piece.drop(columns=[*_TEXT_COLUMNS, *stored]), derived], axis=1)


def typed(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with missing values that stay missing: counts ``Int64``, numbers ``Float64``, text ``str`` or None.

    pandas reads a missing SQL number as NaN (turning counts into floats) and a missing text as NaN;
    readers would have to tell NaN from a value. Here a missing count or number is ``<NA>`` and a
    missing text ``None``.
    """
    for column in frame.columns:
        series = frame[column]
        if column in INT_COLUMNS:
            frame[column] = series.astype("Int64")
        elif column in FLOAT_COLUMNS:
            frame[column] = series.astype("Float64")
        elif pd.api.types.is_string_dtype(series.dtype) and not pd.api.types.is_bool_dtype(series.dtype):
            frame[column] = pd.Series(
                [None if value is None or value is pd.NA or value != value else value for value in series],
                index=frame.index,
                dtype=object,
            )
    return frame


def _summary(results: Iterable[ResponseResult], policy: Policy) -> pd.DataFrame:
    """The whole run, then each model: counts, mean rate, hallucinated share, unsure claims, labels (one pass over
    ``results``, with a running tally per model: an iterator over a store's chunks does not fill memory)."""
    rows = []
    tallies: dict[str, RunTally] = {"(all)": RunTally(policy)}
    for r in results:
        model = r.model or "(no model)"
        if model not in tallies:
            tallies[model] = RunTally(policy)
        tallies["(all)"].add(r)
        tallies[model].add(r)
    for name, tally in tallies.items():
        s = tally.summary()
        rows.append(
            {
                "model": name,
                "n_responses": s.n_responses,
                "n_error_responses": s.n_error_responses,
                "n_claims": s.n_claims,
                "n_claim_errors": s.n_claim_errors,
                "mean_unsupported_rate": s.mean_unsupported_rate,
                "hallucinated_share": s.hallucinated_share,
                "n_unsure_claims": s.n_unsure_claims,
                "decided_share": s.decided_share,
                "mean_unsupported_rate_low": s.mean_unsupported_rate_low,
                "mean_unsupported_rate_high": s.mean_unsupported_rate_high,
                **{f"n_{label.value}": s.label_counts.get(label, 0) for label in Label},
            }
        )
    return pd.DataFrame(rows)


def _add_evidence_columns(claims: pd.DataFrame, results: Iterable[ResponseResult]) -> None:
    """Evidence and citation columns on the claims frame: passage ids, first quote, verified, citations."""
    by_id = {v.claim_id: v for r in results for v in r.verdicts}
    rows = [by_id.get(cid) for cid in claims["claim_id"]]
    claims["evidence_passages"] = pd.Series(
        [tuple(dict.fromkeys(e.passage_id for e in v.evidence if e.passage_id)) if v else () for v in rows],
        index=claims.index,
        dtype=object,
    )
    # Each source the evidence names, with its kind (passage, tool_result, user_context ...; None when the
    # id names no source of the sample).
    claims["evidence_sources"] = pd.Series(
        [tuple(_evidence_sources(v)) if v else () for v in rows], index=claims.index, dtype=object
    )
    claims["evidence_quote"] = [v.evidence[0].quote if v and v.evidence else None for v in rows]
    claims["evidence_verified"] = pd.array([v.evidence_verified if v else None for v in rows], dtype="boolean")
    claims["citations"] = pd.Series([v.citations if v else () for v in rows], index=claims.index, dtype=object)
    claims["citation"] = [v.citation.value if v and v.citation else None for v in rows]


def _evidence_sources(verdict: ClaimVerdict) -> list[dict[str, str | None]]:
    """``{"id", "kind"}`` of each source a verdict's evidence names, once per id, in order."""
    kinds: dict[str, str | None] = {}
    for e in verdict.evidence:
        if e.passage_id and (e.passage_id not in kinds or kinds[e.passage_id] is None):
            kinds[e.passage_id] = e.source_kind.value if e.source_kind else None
    return [{"id": pid, "kind": kind} for pid, kind in kinds.items()]


def _add_decision_columns(responses: pd.DataFrame, claims: pd.DataFrame, results: list[ResponseResult]) -> None:
    """``confident`` on the claims frame; ``decided`` and the rate bounds on the responses frame."""
    by_claim = {v.claim_id: v for r in results for v in r.verdicts}
    claims["confident"] = pd.array(
        [v.confident if (v := by_claim.get(cid)) else None for cid in claims["claim_id"]], dtype="boolean"
    )
    by_sample = {r.sample_id: r for r in results}
    rows = [by_sample.get(sid) for sid in responses["sample_id"]]
    responses["decided"] = pd.array([r.decided if r else None for r in rows], dtype="boolean")
    responses["unsupported_rate_low"] = pd.array([r.unsupported_rate_low if r else None for r in rows], dtype="Float64")
    responses["unsupported_rate_high"] = pd.array(
        [r.unsupported_rate_high if r else None for r in rows], dtype="Float64"
    )


def _add_span_columns(
    responses: pd.DataFrame,
    claims: pd.DataFrame,
    samples: list[Sample],
    results: list[ResponseResult],
    policy: Policy,
) -> None:
    """``unsupported_spans`` on the responses frame (a list of ``{start, end, text, confidence, label, subtype,
    claims}`` dicts, empty for a sample not measured yet) and ``located`` on the claims frame."""
    texts = {s.id: s.response for s in samples}
    by_sample = {r.sample_id: r for r in results}
    spans = []
    for sid in responses["sample_id"]:
        result = by_sample.get(sid)
        found = (
            unsupported_spans(texts.get(sid, ""), result.claims, result.verdicts, policy) if result is not None else []
        )
        spans.append([s.model_dump(mode="json") for s in found])
    responses["unsupported_spans"] = pd.Series(spans, index=responses.index, dtype=object)
    claims["located"] = pd.array([bool(x) for x in claims["spans"]], dtype="boolean")


def _decode_json_columns(responses: pd.DataFrame, claims: pd.DataFrame) -> None:
    """Counts and spans as Python objects, not the JSON text they are stored as: ``label_counts`` and
    ``subtype_counts`` become dicts (empty for a sample not measured yet), ``spans`` a list of
    ``{"start", "end"}`` dicts."""
    for column in ("label_counts", "subtype_counts"):
        responses[column] = pd.Series(
            [json.loads(x) if isinstance(x, str) else {} for x in responses[column]],
            index=responses.index,
            dtype=object,
        )
    claims["spans"] = pd.Series(
        [json.loads(x) if isinstance(x, str) else [] for x in claims["spans"]], index=claims.index, dtype=object
    )


def unfinished_message(run: Run, how_to_finish: str) -> str:
    """Why ``run`` is unfinished and how to finish it (``how_to_finish``: the command or call that resumes it)."""
    manifest = run.manifest
    status = manifest.status if manifest is not None else "unknown"
    total = manifest.n_samples if manifest is not None else "?"
    return (
        f"{run.path} is an unfinished run (status {status!r}: it crashed, was stopped, or is still being "
        f"written; {run.n_stored} of {total} samples stored); finish it with: {how_to_finish}"
    )


def refuse_unfinished(runs: Iterable[Run], how_to_finish: Callable[[Run], str], *, then: str = "") -> None:
    """Numbers from a run that never finished would read as a result: compare, audit, plan and calibrate
    refuse them with ``unfinished_message`` (``then`` says what to do after finishing)."""
    for run in runs:
        if run.manifest is not None and run.manifest.status != "complete":
            raise RunStoreError(unfinished_message(run, how_to_finish(run)) + then)
