"""``Run``: a stored run as a notebook or a script sees it, with its tables, numbers and reports.

This ``Run`` is the read model ``hallumeasure.runs.run.Run`` (loaded once, from one open of the run's
store) with the notebook face added: HTML reprs, intervals, drill-down, the viewer, comparison and
audit. It adds methods, never data and never a second read: every report it makes is computed from
the attributes it inherits, and the runs it compares or audits against are loaded the same way.

Every table is a pandas DataFrame whose count and span columns hold Python dicts and lists; every
attribute is data (no attribute is a method in disguise), and every method writes or computes something.
In Jupyter a run shows itself as a short table: its counts, its rates with 95% intervals, its judge.
"""

from __future__ import annotations

import webbrowser
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from hallumeasure.core.config import cache_path
from hallumeasure.report.audit import AuditGates, AuditResult
from hallumeasure.report.compare import ComparisonReport
from hallumeasure.runs import run as read_model
from hallumeasure.runs.run import ErrorReason as ErrorReason  # re-exported: part of the public API

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from hallumeasure.report.calibrate import CalibrationReport
    from hallumeasure.report.stability import StabilityReport

#: Bootstrap resamples and seed of the intervals a run shows (the command line's defaults).
RESAMPLES, SEED = 2000, 0


class Html:
    """A piece of escaped HTML that Jupyter renders (``_repr_html_``) and ``str()`` gives as text."""

    def __init__(self, markup: Markup) -> None:
        self.markup = markup

    def _repr_html_(self) -> str:
        return str(self.markup)

    def __html__(self) -> str:
        return str(self.markup)

    def __str__(self) -> str:
        return str(self.markup)

    def __repr__(self) -> str:
        return f"<Html: {len(self.markup)} characters>"


def _table(header: list[str], rows: Iterable[Iterable[object]]) -> Markup:
    head = Markup("").join(Markup("<th>{}</th>").format(h) for h in header)
    body = Markup("").join(
        Markup("<tr>{}</tr>").format(Markup("").join(Markup("<td>{}</td>").format(cell) for cell in row))
        for row in rows
    )
    return Markup("<table><tr>{}</tr>{}</table>").format(head, body)


def _share(value: object) -> str:
    return "-" if value is None or value != value else f"{float(value):.3f}"  # type: ignore[arg-type]


class Run(read_model.Run):
    """A run directory loaded for analysis. Get one from ``measure`` or ``load_run``."""

    # --- numbers with intervals -------------------------------------------------------------------

    @cached_property
    def rates(self) -> pd.DataFrame:
        """The whole run and each model: responses, claims, mean unsupported rate and hallucinated share with
        95% bootstrap intervals over responses (as text), error rows."""
        from hallumeasure.report.drilldown import stats_table

        return stats_table(self, resamples=RESAMPLES, seed=SEED)

    @property
    def subtype_mix(self) -> pd.DataFrame:
        """Claims per model (rows) and error subtype (columns)."""
        from hallumeasure.report.drilldown import subtype_counts

        return subtype_counts(self.claims)

    @cached_property
    def citations(self) -> pd.DataFrame:
        """Citation precision and recall, unverified evidence and passage use: the run, then each model
        (empty for a run without passages or citations)."""
        import pandas as pd

        from hallumeasure.report.rag import load_rag

        summaries, _ = load_rag(self)
        return pd.DataFrame(
            [
                s.model_dump(
                    include={
                        "model",
                        "n_citing_responses",
                        "citation_precision",
                        "citation_recall",
                        "n_evidence_unverified",
                        "n_claims_with_evidence",
                        "n_passages_used",
                        "n_passages",
                    }
                )
                | {f"n_{k.value}": v for k, v in s.findings.items()}
                for s in summaries
                if s.applies
            ]
        )

    @cached_property
    def stability(self) -> StabilityReport | None:
        """How stable the judge was, for a run with repeats or a panel (flip rates, kappas, intervals that
        include the judge's variance); None for one judge asked once."""
        from hallumeasure.report.stability import run_stability

        return run_stability(self, resamples=RESAMPLES, seed=SEED)

    # --- claims, found and shown ----------------------------------------------------------------------

    def filter(
        self,
        *,
        model: str | Iterable[str] | None = None,
        label: str | Iterable[str] | None = None,
        subtype: str | Iterable[str] | None = None,
        sample_id: str | Iterable[str] | None = None,
        errors: bool | None = None,
    ) -> pd.DataFrame:
        """Claims matching every filter (one value or several each), beside their response, context and the
        context sentence each aligns to (``source_sentence``; a reading aid, not part of the verdict).
        ``sample_id`` is the id as written (every model's rows of it) or a run key such as
        ``q-ticket@assistant-v1`` (those rows only). ``errors=True`` keeps only error rows, ``False`` drops them."""
        from hallumeasure.report.drilldown import filter_claims

        return filter_claims(
            self._claims_with_sources, model=model, label=label, subtype=subtype, sample_id=sample_id, errors=errors
        )

    @cached_property
    def _claims_with_sources(self) -> pd.DataFrame:
        from hallumeasure.report.drilldown import claims_with_sources

        return claims_with_sources(self)

    def claims_html(self, claims: pd.DataFrame | None = None, *, limit: int = 50) -> Html:
        """A table of claims (default: all; else rows of ``filter``) beside label, reasons and the source
        sentence marked in the context. Everything from the run is escaped."""
        from hallumeasure.report.drilldown import claims_html

        rows = self._claims_with_sources if claims is None else claims
        if "source_start" not in rows:  # rows of run.claims: add the context columns
            rows = self._claims_with_sources[self._claims_with_sources["claim_id"].isin(rows["claim_id"])]
        return Html(claims_html(rows, limit=limit))

    def evidence_html(self, claims: pd.DataFrame | None = None, *, limit: int = 20) -> Html:
        """A table of claims with their citation finding and their evidence quote marked in its passage."""
        from hallumeasure.report.rag import evidence_table_html, load_rag

        _, evidence = load_rag(self)
        return Html(evidence_table_html(self.claims if claims is None else claims, evidence, limit=limit))

    def plot_subtypes(self, ax: Axes | None = None) -> Axes:
        """Draw the error-subtype mix per model (on ``ax``, or on a new figure) and return the axes."""
        import matplotlib.pyplot as plt

        from hallumeasure.report.plots import draw_subtype_mix

        if ax is None:
            _, ax = plt.subplots(figsize=(8, 3.5), layout="constrained")
        counts = self.subtype_mix
        draw_subtype_mix(ax, [str(m) for m in counts.index], [row.to_dict() for _, row in counts.iterrows()])
        return ax

    # --- reports ----------------------------------------------------------------------------------

    def view(
        self,
        out: str | Path | None = None,
        *,
        open: bool = True,  # noqa: A002
        max_responses: int = 2000,
        max_mb: float = 15.0,
        skip: int = 0,
    ) -> Path:
        """Write the viewer page (default: ``view.html`` in the run) and open it in the browser; returns its path.

        As ``hallumeasure view``: at most ``max_responses`` responses and ``max_mb`` megabytes of run data,
        after the first ``skip`` responses; the page notes what it left out."""
        from hallumeasure.report.viewer import write_viewer

        page = write_viewer(
            [self],
            Path(out) if out is not None else self.path / "view.html",
            max_responses=max_responses,
            max_mb=max_mb,
            skip=skip,
        )
        if open:
            webbrowser.open(page.resolve().as_uri())
        return page

    def calibrate(self, labels: str | Path, *, confidence: float = 0.95) -> CalibrationReport:
        """The judge against human labels (a CSV or JSONL of ``calibrate --export-sample``): agreement and
        rates corrected for the judge's errors, each with its interval."""
        from hallumeasure.report.calibrate import calibrate

        return calibrate(self, labels, confidence=confidence)

    def compare(
        self,
        *others: Run | str | Path,
        out: str | Path | None = None,
        allow_mismatch: bool = False,
        resamples: int = RESAMPLES,
        seed: int = SEED,
        worst: int = 3,
        labels: Iterable[str | Path] = (),
    ) -> RunComparison:
        """Compare the models of this run and ``others``: rates with intervals, paired differences, subtype
        mix. The report files go to ``out`` (default: a new folder under the cache directory)."""
        from hallumeasure.report.compare import compare_runs

        runs = [self, *(_loaded(x) for x in others)]
        _refuse_unfinished(runs)
        target = Path(out) if out is not None else _new_folder("compare")
        report = compare_runs(
            runs,
            target,
            allow_mismatch=allow_mismatch,
            resamples=resamples,
            seed=seed,
            worst=worst,
            labels=list(labels),
        )
        return RunComparison(**report.model_dump(), out=str(target))

    def audit(
        self,
        baseline: Run | str | Path,
        *,
        out: str | Path | None = None,
        gates: AuditGates | None = None,
        baseline_model: str | None = None,
        current_model: str | None = None,
        allow_mismatch: bool = False,
        allow_broken_judge: bool = False,
        resamples: int = RESAMPLES,
        seed: int = SEED,
        **gate_settings: Any,
    ) -> RunAudit:
        """Audit this run against ``baseline``: pass, regression, inconclusive or incomplete, with the exit
        code the command line would give; a run whose judge failed its sanity checks is refused unless
        ``allow_broken_judge``. ``gate_settings`` are fields of ``AuditGates`` (``max_rate_rise``,
        ``alpha`` ...). The audit files (JSON, Markdown, JUnit) go to ``out`` when it is given."""
        from hallumeasure.report.audit import audit_runs

        base = _loaded(baseline)
        _refuse_unfinished([base, self])
        if gates is not None and gate_settings:
            raise TypeError("give either gates= or gate settings as keywords, not both")
        result = audit_runs(
            base,
            self,
            gates if gates is not None else AuditGates(**gate_settings),
            out_dir=out,
            allow_mismatch=allow_mismatch,
            allow_broken_judge=allow_broken_judge,
            baseline_model=baseline_model,
            current_model=current_model,
            resamples=resamples,
            seed=seed,
        )
        return RunAudit(**result.model_dump())

    # --- how it shows itself ------------------------------------------------------------------------

    def _overall(self) -> dict[str, Any]:
        rows = self.summary.to_dict(orient="records")
        return rows[0] if rows else {}

    def __repr__(self) -> str:
        s = self._overall()
        return (
            f"<Run {self.name!r}: {s.get('n_responses', 0)} responses, {s.get('n_claims', 0)} claims, "
            f"mean unsupported rate {_share(s.get('mean_unsupported_rate'))}, "
            f"{int(s.get('n_error_responses', 0)) + int(s.get('n_claim_errors', 0))} error rows"
            f"{f', {len(self.skipped)} input rows skipped (run.skipped)' if len(self.skipped) else ''}; "
            f"judge {self.judge}, {self.status}>"
        )

    def _repr_html_(self) -> str:
        m = self.manifest
        how = (
            Markup("judge <b>{}</b> ({}, detector {}), extractor {}; {}").format(
                m.judge, m.mode.value, m.detector, m.extractor, m.status
            )
            if m is not None
            else Markup("no manifest")
        )
        header = list(self.rates.columns)
        table = _table(header, self.rates.itertuples(index=False))
        note = Markup("")
        if self.error_reasons:
            top = self.error_reasons[0]
            note = Markup("<p>most frequent error reason ({} {} rows): {}</p>").format(top.count, top.rows, top.reason)
        return str(
            Markup("<div><p><b>Run {}</b>: {}</p>{}{}<p>{}</p></div>").format(
                self.name, how, table, note, escape(m.policy.describe()) if m is not None else ""
            )
        )


class RunComparison(ComparisonReport):
    """A comparison of models (``Run.compare``); its files are in ``out``."""

    out: str

    def __repr__(self) -> str:
        return f"<RunComparison of {len(self.model_stats)} models, {len(self.comparisons)} pairs; files in {self.out}>"

    def _repr_html_(self) -> str:
        from hallumeasure.report.rates import GroupRates, rates_frame

        unsure = {u.name: u for u in self.unsure}
        frame = rates_frame([GroupRates(stats=s, unsure=unsure.get(s.name)) for s in self.model_stats])
        models = _table(list(frame.columns), frame.itertuples(index=False))
        pairs = _table(
            ["b - a", "rate difference [CI]", "p", "pairing", "shared samples"],
            (
                (
                    f"{c.b} - {c.a}",
                    c.unsupported_rate.diff.format() if c.unsupported_rate.diff else "-",
                    "-" if c.unsupported_rate.p_value is None else f"{c.unsupported_rate.p_value:.3g}",
                    c.pairing,
                    c.n_shared,
                )
                for c in self.comparisons
            ),
        )
        return str(
            Markup("<div><p><b>{}</b></p>{}{}<p>files: {}</p></div>").format(self.title, models, pairs, self.out)
        )


class RunAudit(AuditResult):
    """The outcome of ``Run.audit``; ``exit_code`` is what ``hallumeasure audit`` exits with."""

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def __repr__(self) -> str:
        return f"<RunAudit {self.headline}>"  # the headline opens with the outcome and its exit code

    def _repr_html_(self) -> str:
        gates = _table(
            ["gate", "result", "observed", "threshold", "message"],
            ((g.name, g.status.upper(), g.observed, g.threshold, g.message) for g in self.gates),
        )
        return str(
            Markup("<div><p><b>Audit {} against {}</b>: {}</p>{}</div>").format(
                self.current, self.baseline, self.headline, gates
            )
        )


def _loaded(run: read_model.Run | str | Path) -> read_model.Run:
    """A run given to compare or audit: used as it is when loaded, else loaded (once) from its directory."""
    return run if isinstance(run, read_model.Run) else Run.load(run)


def _refuse_unfinished(runs: list[read_model.Run]) -> None:
    """Numbers from a run that never finished would read as a result: compare and audit refuse them."""
    read_model.refuse_unfinished(runs, lambda run: f"measure(..., out={str(run.path)!r}, resume=True)")


def _new_folder(kind: str) -> Path:
    import secrets
    from datetime import UTC, datetime

    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return cache_path().parent / kind / f"{stamp}-{secrets.token_hex(3)}"


def load_run(path: str | Path) -> Run:
    """Load the run in ``path`` (a directory written by ``measure`` or ``hallumeasure measure``)."""
    return Run.load(path)
