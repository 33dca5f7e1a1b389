"""Command line: a thin shell over the library.

Exit codes: 0 success; 1 unexpected failure; 2 bad usage, input or configuration;
3 the run finished but some samples or claims ended as error rows (see the summary).
``audit`` has its own table: 0 pass, 1 regression, 2 usage, 3 too many error rows, 4 inconclusive.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from hallumeasure import __version__
from hallumeasure.cli.common import (  # noqa: F401 - re-exported: the command modules and tests use them here
    EXIT_FAILURE,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    _fail,
    _one_line,
    _one_sided_alpha,
    _open_unit,
    _refuse_unfinished,
    _resume_hint,
    _unfinished_message,
    app,
    console,
    out,
)
from hallumeasure.cli.settings import MeasureSettings, with_settings
from hallumeasure.core.config import RedactingFilter, cache_path, redact
from hallumeasure.core.errors import HalluMeasureError
from hallumeasure.core.labels import Label, Policy, UnevaluatablePolicy
from hallumeasure.judges.nli import KEYLESS_JUDGES

if TYPE_CHECKING:
    import pandas as pd

    from hallumeasure.core.types import Mode, Sample
    from hallumeasure.models.batch import BatchProgress
    from hallumeasure.models.model import Model
    from hallumeasure.report.rag import ClaimEvidence
    from hallumeasure.runs.datasets import LabelledSample
    from hallumeasure.runs.store import RunData
    from hallumeasure.sources.rag import SourceOptions


def _positive(value: float | None) -> float | None:
    """Typer callback: a float option that must be above 0 (a deadline or an interval)."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"{value} is not above 0.")
    return value


def _open_probability(value: float | None) -> float | None:
    """Typer callback: a significance level, above 0 and at most 1."""
    if value is not None and not 0 < value <= 1:
        raise typer.BadParameter(f"{value} is not in the range 0<x<=1.")
    return value


# Options of every command that calls providers (measure, mitigate): one definition each.
MaxConcurrency = Annotated[int, typer.Option(min=1, help="Provider calls in flight at once, per model.")]
MaxRetries = Annotated[int, typer.Option(min=0, help="Retries of a failed provider call.")]
Timeout = Annotated[float, typer.Option(callback=_positive, help="Deadline of one provider call, seconds.")]
CacheFile = Annotated[
    Path | None, typer.Option(help="Request cache file (default: $HALLUMEASURE_CACHE_DIR/requests.sqlite).")
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the request cache.")]


def _columns(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field or not column:
            raise _fail(f"--column takes field=name, got {pair!r}")
        mapping[field.strip()] = column.strip()
    return mapping


def _policy(unsupported: str, unevaluatable: str, min_claims: int, min_rate: float) -> Policy:
    names = [x.strip() for x in unsupported.split(",") if x.strip()]
    wrong = [x for x in names if x not in {label.value for label in Label}]
    if wrong or not names:
        raise _fail(
            f"--unsupported-labels takes a comma-separated list of {', '.join(x.value for x in Label)}; "
            f"got {unsupported!r}"
        )
    if unevaluatable not in {x.value for x in UnevaluatablePolicy}:
        raise _fail(
            f"--unevaluatable must be one of {', '.join(x.value for x in UnevaluatablePolicy)}; got {unevaluatable!r}"
        )
    try:
        labels = frozenset(Label(x) for x in names)
        return Policy(
            unsupported_labels=labels,
            unevaluatable=UnevaluatablePolicy(unevaluatable),
            min_unsupported_claims=min_claims,
            min_unsupported_rate=min_rate,
        )
    except ValueError as exc:
        raise _fail(f"invalid policy: {exc}") from exc


def _print_version(value: bool) -> None:
    if value:
        out.print(f"hallumeasure {__version__}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def main(
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose",
            "-v",
            count=True,
            help="Log what hallumeasure does: -v steps and retries, -vv every call, cache hit and timing, "
            "-vvv also the libraries' own debug logs.",
        ),
    ] = 0,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit.")
    ] = False,
) -> None:
    _configure_logging(verbose)


def _configure_logging(verbose: int) -> None:
    """Our loggers at the asked level; other libraries stay at warnings until -vvv. Secrets are redacted."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(RedactingFilter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_hallumeasure", False)]:
        root.removeHandler(old)
    handler._hallumeasure = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose >= 3 else logging.WARNING)
    ours = {0: logging.WARNING, 1: logging.INFO}.get(verbose, logging.DEBUG)
    logging.getLogger("hallumeasure").setLevel(ours)


@app.command()
def version() -> None:
    """Print the package version."""
    out.print(__version__)


@app.command()
@with_settings(MeasureSettings)
def measure(
    input: Annotated[  # noqa: A002 - the parameter's name is the argument's name, INPUT, in --help
        Path, typer.Argument(help="Samples: JSONL, CSV or Parquet with context and response.")
    ],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Run directory to write.")],
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run in --out (not with --overwrite).")] = False,
    overwrite: Annotated[bool, typer.Option(help="Delete an existing run in --out first (not with --resume).")] = False,
    column: Annotated[
        list[str] | None, typer.Option(help="Map a field to your column: --column response=answer.")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the expected calls, tokens and cost; call nothing.")] = False,
    *,
    settings: MeasureSettings,
    config_file: Path | None = None,
) -> None:
    """Measure every sample of INPUT into a run directory.

    The options from --extractor on can also be set in hallumeasure.toml or in the tool.hallumeasure table of
    pyproject.toml; an option given here wins.
    """
    s = settings
    from hallumeasure.core.types import Mode
    from hallumeasure.detectors import DETECTORS, build_stages, save_detector_stats
    from hallumeasure.judges.votes import PanelRule, build_voting_judge, repeat_refusal
    from hallumeasure.models.registry import with_options
    from hallumeasure.pipeline.run import run_measurement
    from hallumeasure.runs.inputs import load_samples
    from hallumeasure.runs.store import existing_run_error, holds_run

    judges = s.judge or ["offline"]
    voting = len(judges) > 1 or s.repeats > 1
    if s.panel_rule not in {r.value for r in PanelRule}:
        raise _fail(f"--panel-rule must be one of {[r.value for r in PanelRule]}, got {s.panel_rule!r}")
    if voting and s.detector != "claims":
        raise _fail(
            f"--repeats and several --judge work with --detector claims only; this run uses --detector {s.detector}"
        )
    deterministic = [name for name in judges if name in KEYLESS_JUDGES]
    if s.repeats > 1 and deterministic:  # refused before any input is read; VotingJudge refuses it too
        raise _fail(repeat_refusal(deterministic[0], s.repeats))
    try:
        run_mode = Mode(s.mode)
    except ValueError:
        raise _fail(f"--mode must be one of {[m.value for m in Mode]}, got {s.mode!r}") from None
    if s.detector not in DETECTORS:
        raise _fail(f"--detector must be one of {list(DETECTORS)}, got {s.detector!r}")
    if resume and overwrite:
        raise _fail(
            "--resume and --overwrite cannot be used together: --resume continues the run in --out, "
            "--overwrite deletes it; pass one"
        )
    if s.detector != "cascade":
        given = [
            name
            for name, value in (("--flag-threshold", s.flag_threshold), ("--first-pass", s.first_pass))
            if value is not None
        ]
        if given:
            raise _fail(
                f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for --detector cascade only; "
                f"this run uses --detector {s.detector}"
            )
    if not resume and not overwrite and not dry_run and holds_run(out_dir):
        raise _fail(str(existing_run_error(out_dir, resumable=True)))
    try:  # the options join the specs, so that the manifest and --resume carry them
        extractor = with_options(s.extractor, s.extractor_option or [])
        judges = [with_options(name, s.judge_option or []) for name in judges]  # every judge of a panel
        judge = judges[0]
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from None
    policy = _policy(s.unsupported_labels, s.unevaluatable, s.min_unsupported_claims, s.min_unsupported_rate)
    sources = _source_options(s.max_context_tokens, s.citation_pattern)
    try:
        loaded = load_samples(
            input, columns=_columns(column or []), model=s.model_name, strict=s.strict_input, delimiter=s.delimiter
        )
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    for problem in loaded.problems:
        who = f" (id {problem.sample_id})" if problem.sample_id else ""
        console.print(
            f"[yellow]skipped[/yellow] row {problem.row}{escape(who)}: {escape(problem.message)}",
            highlight=False,
            soft_wrap=True,
        )
    if dry_run:
        from hallumeasure.sources.rag import capped_for_estimate

        _print_estimate(capped_for_estimate(loaded.samples, judge, sources), run_mode, judge, extractor, batch=s.batch)
        if voting:
            out.print(
                f"votes: each claim is judged {s.repeats} time(s) by each of {len(judges)} judge(s); the judge "
                f"calls above are for one judge asked once: multiply them by {s.repeats * len(judges)} "
                "(judges priced differently: see each with its own --judge)"
            )
        return
    try:
        model_for = _model_factory(
            s.cache,
            s.no_cache,
            max_concurrency=s.max_concurrency,
            max_retries=s.max_retries,
            timeout=s.timeout,
            rpm=s.rpm,
            tpm=s.tpm,
            otpm=s.otpm,
            batch=_batch_options(out_dir, s.batch_s3, s.batch_role, s.batch_poll) if s.batch else None,
        )
        ext, jud = build_stages(
            s.detector,
            extractor=extractor,
            judge=judge,
            mode=run_mode,
            first_pass=s.first_pass or "offline",
            policy=policy,
            threshold=0.5 if s.flag_threshold is None else s.flag_threshold,
            model_for=model_for,
        )
        if voting:
            jud = build_voting_judge(
                judges, run_mode, repeats=s.repeats, rule=s.panel_rule, policy=policy, model_for=model_for
            )
        for member in getattr(jud, "voters", [jud]):
            if s.no_warm_cache and hasattr(member, "warm_cache"):
                member.warm_cache = False  # recorded in the manifest through the judge's settings
        with _Progress(len(loaded.samples), already=_stored_count(out_dir) if resume else 0) as advance:
            manifest, _ = run_measurement(
                loaded.samples,
                out_dir,
                ext,
                jud,
                mode=run_mode,
                input_sha256=loaded.sha256,
                input_path=str(input),
                policy=policy,
                resume=resume,
                # In batch mode every sample starts at once, so that each stage becomes one batch.
                concurrency=max(s.concurrency, len(loaded.samples)) if s.batch else s.concurrency,
                settings={
                    "skipped_input_rows": len(loaded.problems),
                    "cache": not s.no_cache,
                    "batch": s.batch,
                    "config_file": str(config_file) if config_file else None,
                    "effective": settings.model_dump(mode="json"),
                },
                detector=s.detector,
                progress=advance,
                sources=sources,
                input_problems=loaded.problems,
                overwrite=overwrite,
            )
        save_detector_stats(out_dir, jud)  # conli / cascade counters, known only after the run
    except KeyboardInterrupt:
        stored = _stored_count(out_dir)
        console.print(
            f"[yellow]interrupted[/yellow]: {stored} of {len(loaded.samples)} samples are stored in "
            f"{escape(str(out_dir))} (marked interrupted; work in flight was dropped). Resume with:",
            highlight=False,
            soft_wrap=True,
        )
        console.print(escape(redact(_resume_command(out_dir))), highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    except OSError as exc:  # the request cache or the run directory cannot be written
        where = f"{exc.filename}: " if exc.filename else ""
        raise _fail(f"{where}{exc.strerror or _one_line(exc)}") from None
    data = _print_summary(out_dir)
    out.print(f"see every claim: hallumeasure view {out_dir}", markup=False, highlight=False, soft_wrap=False)
    errors = manifest.counts.get("error_responses", 0) + manifest.counts.get("claim_errors", 0)
    if errors or loaded.problems:
        console.print(
            f"[yellow]{manifest.counts.get('error_responses', 0)} response(s) and "
            f"{manifest.counts.get('claim_errors', 0)} claim(s) ended as error rows; "
            f"{len(loaded.problems)} input row(s) skipped[/yellow]"
        )
        _print_error_reasons(data, console, run_dir=out_dir)
        raise typer.Exit(EXIT_INCOMPLETE)


def _source_options(max_context_tokens: int | None, patterns: list[str] | None) -> SourceOptions:
    from hallumeasure.sources.citations import compile_patterns
    from hallumeasure.sources.rag import SourceOptions

    try:
        compile_patterns(patterns)
    except ValueError as exc:
        raise _fail(f"--citation-pattern: {exc}") from None
    return SourceOptions(
        max_context_tokens=max_context_tokens, **({"citation_patterns": tuple(patterns)} if patterns else {})
    )


#: Distinct error reasons printed after a run or by 'show' ('show --json' lists them all).
SHOWN_REASONS = 3


def _print_error_reasons(data: RunData, where: Console, *, run_dir: Path) -> None:
    """The distinct reasons of the error rows, counted, most frequent first (the first few)."""
    reasons = data.error_reasons(width=240)
    if not reasons:
        return
    where.print(f"error rows by reason ({len(reasons)} distinct):", highlight=False)
    for item in reasons[:SHOWN_REASONS]:
        noun = "response" if item["rows"] == "response" else "claim"
        where.print(
            f"  {item['count']} {noun}{'s' if item['count'] != 1 else ''}: {escape(item['reason'])}",
            highlight=False,
            soft_wrap=True,
        )
    if len(reasons) > SHOWN_REASONS:
        where.print(
            f"  ... and {len(reasons) - SHOWN_REASONS} more: hallumeasure show {escape(str(run_dir))} --json "
            "lists them all",
            highlight=False,
            soft_wrap=True,
        )


def _stored_count(run_dir: Path) -> int:
    from hallumeasure.runs.store import DATABASE, RunStore

    if not (run_dir / DATABASE).exists():
        return 0
    try:
        with RunStore(run_dir) as store:
            return len(store.done_ids())
    except (HalluMeasureError, OSError):
        return 0


def _resume_command(run_dir: Path) -> str:
    """The command line that was typed, with --resume in place of --overwrite, so that it goes on where it stopped."""
    import shlex

    args = [a for a in sys.argv[1:] if a != "--overwrite"]
    if "measure" not in args:  # called from Python rather than the shell: name the run directory at least
        args = ["measure", "INPUT", "--out", str(run_dir), "(the options it was started with)"]
    if "--resume" not in args:
        args.append("--resume")
    return shlex.join(["hallumeasure", *args])


def _model_factory(
    cache: Path | None,
    no_cache: bool,
    *,
    rpm: str | None = None,
    tpm: str | None = None,
    otpm: str | None = None,
    batch: dict[str, Any] | None = None,
    **wrapper: Any,
) -> Callable[[str], Model]:
    """``model_for(spec)``: one ``Model`` per spec, sharing the request cache, so stages share usage and cache.

    ``rpm`` / ``tpm`` put one shared rate limiter per provider and model in front of the calls;
    ``batch`` (from ``_batch_options``) sends them through the provider's batch service instead.
    """
    from hallumeasure.detectors.scripted import fake_model_options
    from hallumeasure.judges.build import build_model
    from hallumeasure.models.cache import RequestCache
    from hallumeasure.models.limits import parse_limit, shared_limiter

    request_cache = None if no_cache else RequestCache(cache or cache_path())
    rpm_value, tpm_value, otpm_value = parse_limit(rpm), parse_limit(tpm), parse_limit(otpm)
    models: dict[str, Model] = {}

    def model_for(spec: str) -> Model:
        if spec not in models:
            limited = rpm_value or tpm_value or otpm_value
            limiter = shared_limiter(spec, rpm_value, tpm_value, output_tpm=otpm_value) if limited else None
            options = fake_model_options(spec)  # a fake answers the rewrite, NLI and cascade prompts too
            if batch is not None and spec.startswith("bedrock:"):
                options = {"batch_s3_uri": batch["s3"], "batch_role_arn": batch["role"]}
            model = build_model(spec, cache=request_cache, model_options=options, limiter=limiter, **wrapper)
            if batch is not None:
                from hallumeasure.models.batch import Batcher, BatchLedger

                model.batch = Batcher(
                    model.api,
                    ledger=BatchLedger.for_run(batch["run_dir"]),
                    poll_interval=batch["poll"],
                    progress=_batch_progress,
                )
            models[spec] = model
        return models[spec]

    return model_for


def _batch_options(run_dir: Path, s3: str | None, role: str | None, poll: float) -> dict[str, Any]:
    return {"run_dir": run_dir, "s3": s3, "role": role, "poll": poll}


def _batch_progress(progress: BatchProgress) -> None:
    status = progress.status
    resumed = " (submitted by an earlier run)" if progress.resumed else ""
    console.print(
        f"batch {escape(status.batch_id.rsplit('/', 1)[-1])}{resumed}: {status.done}/{status.total} done, "
        f"{escape(status.state)}, {progress.elapsed:.0f} s",
        highlight=False,
    )


@app.command()
def mitigate(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by 'measure' (any detector).")],
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="New run directory for the rewrites and mitigation.{json,md,html}.")
    ],
    rewriter: Annotated[
        str,
        typer.Option(
            help="offline (rule-based, keyless) or a model spec: fake, anthropic:<model>, bedrock:<id>, "
            "langchain:<module:Class>."
        ),
    ] = "offline",
    rounds: Annotated[
        int, typer.Option(min=1, help="Rewrite what is still unsupported again, while the mean rate falls.")
    ] = 1,
    overwrite: Annotated[bool, typer.Option(help="Delete an existing run in --out first.")] = False,
    concurrency: Annotated[int, typer.Option(min=1, help="Responses rewritten / measured at once.")] = 4,
    max_concurrency: MaxConcurrency = 8,
    max_retries: MaxRetries = 4,
    timeout: Timeout = 120.0,
    cache: CacheFile = None,
    no_cache: NoCache = False,
) -> None:
    """Rewrite the responses of RUN_DIR that have unsupported claims, measure the rewrites again, report before/after.

    The source run's extractor, judge, detector and policy are reused. Exit 3 when some rewrites failed.
    """
    from hallumeasure.detectors.rewrite import build_rewriter
    from hallumeasure.mitigate import mitigate_run
    from hallumeasure.report.render import format_number
    from hallumeasure.runs.store import existing_run_error, holds_run

    if out_dir.exists() and out_dir.resolve() == run_dir.resolve():
        raise _fail("--out must be a new directory, not the source run")
    if out_dir.exists() and not overwrite and holds_run(out_dir):
        raise _fail(str(existing_run_error(out_dir, resumable=False)))
    if overwrite and out_dir.exists():
        if out_dir.is_dir() and any(out_dir.iterdir()) and not holds_run(out_dir):
            raise _fail(
                f"{out_dir} is not empty and holds no hallumeasure run; refusing to delete it: "
                "choose a new --out directory"
            )
        try:
            shutil.rmtree(out_dir) if out_dir.is_dir() else out_dir.unlink()
        except OSError as exc:
            raise _fail(f"cannot delete {out_dir} for --overwrite: {exc.strerror or _one_line(exc)}") from None
    try:
        model_for = _model_factory(
            cache, no_cache, max_concurrency=max_concurrency, max_retries=max_retries, timeout=timeout
        )
        rw = build_rewriter(rewriter, model=None if rewriter == "offline" else model_for(rewriter))
        report = mitigate_run(run_dir, out_dir, rw, rounds=rounds, concurrency=concurrency, model_for=model_for)
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    table = Table(title=f"mitigation {run_dir} -> {out_dir}", title_justify="left")
    for name in ("", "before", "after"):
        table.add_column(name, justify="left" if not name else "right")
    table.add_row(
        "mean unsupported rate",
        format_number(report.before.mean_unsupported_rate),
        format_number(report.after.mean_unsupported_rate),
    )
    table.add_row(
        "hallucinated share",
        format_number(report.before.hallucinated_share),
        format_number(report.after.hallucinated_share),
    )
    out.print(table)
    rate = "-" if report.mitigation_rate is None else f"{report.mitigation_rate:.1%}"
    retention = "-" if report.retention is None else f"{report.retention:.1%}"
    clean = "-" if report.clean_rate is None else f"{report.clean_rate:.1%}"
    out.print(
        f"mitigation rate {rate} ({report.n_mitigated}/{report.n_originally_hallucinated} repaired; "
        f"{report.n_emptied} emptied, not counted; clean share {clean}); "
        f"retention {retention} ({report.retained}/{report.supported_before}); "
        f"new unsupported claims {report.n_new_unsupported}; sent {report.n_sent}/{report.n_responses}; "
        f"rewrite output tokens {report.rewrite_usage.output_tokens}; rounds kept {report.rounds_kept}",
        markup=False,
        highlight=False,
    )
    out.print(f"wrote {out_dir} (a run) and mitigation.md / .html / .json in it", markup=False)
    if report.n_rewrite_errors:
        console.print(
            f"[yellow]{report.n_rewrite_errors} rewrite(s) failed; those responses were kept unchanged[/yellow]"
        )
        raise typer.Exit(EXIT_INCOMPLETE)


def _print_estimate(
    samples: Sequence[Sample | LabelledSample],
    mode: Mode | str,
    judge: str,
    extractor: str,
    *,
    gold_claims: bool = False,
    batch: bool = False,
) -> None:
    from hallumeasure.bench.run import estimate_bench, estimate_cost
    from hallumeasure.models.pricing import PRICES_AS_OF, price_for

    est = estimate_bench(samples, mode, gold_claims=gold_claims)
    out.print(
        f"{est.n_samples} samples, mode {est.mode}: about {est.claims} claims, "
        f"{est.extraction_calls} extraction call(s) + {est.judge_calls} judge call(s), "
        f"~{est.input_tokens:,} input and ~{est.output_tokens:,} output tokens"
    )
    if judge in KEYLESS_JUDGES and extractor in ("offline", None):
        out.print(f"cost: 0 (the {judge} judge and offline extractor call no provider)")
    else:
        price = price_for(judge)
        if price is None:
            out.print(f"cost: unknown (no price for {judge!r}; add one with HALLUMEASURE_PRICES)")
        else:
            dollars = estimate_cost(est, price) * (float(1 - price.batch_discount) if batch else 1.0)
            out.print(
                f"cost: about ${dollars:,.2f} at {'batch' if batch else 'list'} prices of {PRICES_AS_OF}, "
                "before prompt caching (which lowers it) and re-asks (which raise it)"
            )
    for assumption in est.assumptions:
        out.print(f"  assumes {assumption}")


class _Progress:
    """Progress the pipeline advances once per finished sample: a rich bar on a terminal, else a line now and then.

    Off a terminal (a CI log, a pipe) a line goes to stderr at every 10% and at least every
    ``LINE_EVERY`` seconds, so a long run shows it is alive without flooding the log.
    """

    LINE_EVERY = 30.0

    def __init__(self, total: int, already: int = 0) -> None:
        import time

        self.clock = time.monotonic
        self.total, self.done = total, already
        self.started = self.last_line = self.clock()
        self.last_tenth = (10 * already) // total if total else 10
        self.terminal = console.is_terminal
        self.bar = Progress(
            TextColumn("measuring"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            disable=not self.terminal,
        )
        self.task = self.bar.add_task("measure", total=total, completed=already)

    def advance(self, _result: object = None) -> None:
        self.done += 1
        if self.terminal:
            self.bar.advance(self.task)
            return
        now, tenth = self.clock(), (10 * self.done) // self.total if self.total else 10
        if tenth > self.last_tenth or now - self.last_line >= self.LINE_EVERY:
            self.last_tenth, self.last_line = tenth, now
            elapsed = now - self.started
            console.print(
                f"measuring: {self.done}/{self.total} samples ({self.done / self.total:.0%}), {elapsed:.0f} s elapsed",
                highlight=False,
                soft_wrap=True,
            )

    def __enter__(self) -> Callable[[object], None]:
        self.bar.start()
        return self.advance

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


def _print_summary(run_dir: Path, data: RunData | None = None) -> RunData:
    """Print a run's summary table and settings; returns the loaded ``RunData``."""
    from hallumeasure.runs.store import load_run

    data = data if data is not None else load_run(run_dir)
    manifest = data.manifest
    table = Table(title=f"run {run_dir}", title_justify="left")
    for name in ("model", "responses", "claims", "mean unsupported rate", "hallucinated share", "error rows"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for row in data.summary.to_dict(orient="records"):
        rate, share = row["mean_unsupported_rate"], row["hallucinated_share"]
        table.add_row(
            str(row["model"]),
            str(row["n_responses"]),
            str(row["n_claims"]),
            "-" if rate is None or rate != rate else f"{rate:.3f}",
            "-" if share is None or share != share else f"{share:.3f}",
            str(row["n_error_responses"] + row["n_claim_errors"]),
        )
    out.print(table)
    if manifest is not None:
        lines = [
            f"judge: {manifest.judge} ({manifest.mode.value}); extractor: {manifest.extractor}",
            f"policy: {manifest.policy.describe()}",
        ]
        if manifest.judge == "offline":
            lines.append(
                "note: the offline judge is a trained lexical/numeric model, not an LLM; "
                "see the README for its measured quality."
            )
        if manifest.judge.startswith("fake"):
            lines.append("note: the fake model is a demo for tests; its labels are not a measurement.")
        for line in lines:  # wrapped to the terminal (80 columns when piped)
            out.print(line, markup=False, highlight=False, soft_wrap=False)
    from hallumeasure.report.stability import run_stability, stability_lines

    stability = run_stability(data)
    for line in stability_lines(stability) if stability is not None else []:
        out.print(line, markup=False, highlight=False)
    return data


@app.command()
def bench(
    datasets: Annotated[
        list[str], typer.Argument(help="Labelled JSONL/CSV files, or shared set names (bump, cliff, ...).")
    ],
    judge: Annotated[str, typer.Option(help="Judge spec.")] = "offline",
    extractor: Annotated[
        str | None, typer.Option(help="Extractor spec (default: offline for the offline judge, else the judge's).")
    ] = None,
    mode: Annotated[list[str] | None, typer.Option(help="Classifier mode(s); repeat to bench several.")] = None,
    gold_claims: Annotated[
        bool, typer.Option(help="Judge the dataset's gold claims directly (no extraction).")
    ] = False,
    limit: Annotated[
        int | None, typer.Option(min=1, help="Stratified sample of N records per dataset (seeded).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for --limit sampling and the bootstrap.")] = 13,
    concurrency: Annotated[int, typer.Option(min=1, help="Samples judged at once.")] = 4,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples for the 95% CIs.")] = 1000,
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Where the JSON and Markdown tables go (the committed tables in benchmarks/bench are written "
            "with an explicit --out benchmarks/bench).",
        ),
    ] = Path("runs/bench"),
    column: Annotated[
        list[str] | None, typer.Option(help="Map a field to your column: --column response=answer.")
    ] = None,
    cache: Annotated[Path | None, typer.Option(help="Request cache file.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the request cache.")] = False,
    dry_run: Annotated[bool, typer.Option(help="Print expected calls, tokens and cost; call nothing.")] = False,
) -> None:
    """Score a judge on labelled data with the papers' metrics (P/R/F1, AUC, subtype F1, usage)."""
    from hallumeasure.bench.run import bench_markdown, run_bench, save_bench
    from hallumeasure.core.types import Mode
    from hallumeasure.judges.build import build_extractor, build_judge, build_model
    from hallumeasure.models.cache import RequestCache
    from hallumeasure.runs.datasets import load_labelled, resolve_dataset, subsample

    modes = mode or ["cot-one"]
    for name in modes:
        if name not in {m.value for m in Mode}:
            raise _fail(f"--mode must be one of {[m.value for m in Mode]}, got {name!r}")
    extractor = extractor or ("offline" if judge in KEYLESS_JUDGES else judge)
    try:
        run_modes = [Mode(m) for m in modes]
        request_cache = None if no_cache else RequestCache(cache or cache_path())
        for name in datasets:
            samples = subsample(load_labelled(resolve_dataset(name), columns=_columns(column or [])), limit, seed=seed)
            for run_mode in run_modes:
                if dry_run:
                    out.print(f"[bold]{name}[/bold]")
                    _print_estimate(samples, run_mode, judge, extractor, gold_claims=gold_claims)
                    continue
                models = {
                    spec: build_model(spec, cache=request_cache) for spec in {judge, extractor} - set(KEYLESS_JUDGES)
                }
                jud = build_judge(judge, run_mode, model=models.get(judge))
                ext = None if gold_claims else build_extractor(extractor, model=models.get(extractor))
                result = run_bench(
                    samples,
                    jud,
                    ext,
                    gold_claims=gold_claims,
                    mode=run_mode,
                    concurrency=concurrency,
                    n_resamples=resamples,
                    seed=seed,
                )
                json_path, md_path = save_bench(result, out_dir)
                out.print(bench_markdown(result), markup=False, highlight=False)
                console.print(f"wrote {json_path} and {md_path}")
    except ValueError as exc:
        raise _fail(str(exc)) from exc
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc


@app.command("bench-compare")
def bench_compare(
    results: Annotated[list[Path], typer.Argument(help="Bench JSON files written by 'bench'.")],
    out_file: Annotated[Path | None, typer.Option("--out", help="Also write the table to this Markdown file.")] = None,
) -> None:
    """Put several bench results side by side (one row per judge x mode x dataset)."""
    from hallumeasure.bench.run import compare_bench, load_bench

    loaded = []
    for path in results:
        if not path.exists():
            raise _fail(f"{path} does not exist; give the JSON files written by 'hallumeasure bench'")
        if path.is_dir():
            raise _fail(f"{path} is a directory; give the JSON files in it, such as {path}/*.json")
        try:
            loaded.append(load_bench(path))
        except (ValidationError, UnicodeDecodeError) as exc:
            raise _fail(
                f"{path} is not a bench result (a JSON file written by 'hallumeasure bench'): {_one_line(exc)}"
            ) from None
        except OSError as exc:
            raise _fail(f"{path} cannot be read: {exc.strerror or _one_line(exc)}") from None
    try:
        table = compare_bench(loaded)
    except (ValueError, KeyError, HalluMeasureError) as exc:
        raise _fail(_one_line(exc)) from exc
    out.print(table, markup=False, highlight=False)
    if out_file:
        out_file.write_text(table + "\n", encoding="utf-8")


@app.command()
def show(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by 'measure'.")],
    claims: Annotated[
        bool, typer.Option(help="List every claim with its verdict (with --json: a 'claims' list).")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the manifest, summary and error reasons as JSON.")
    ] = False,
    summary: Annotated[
        bool, typer.Option("--summary/--no-summary", help="Print the summary table (--no-summary: only the claims).")
    ] = True,
) -> None:
    """Summarise a run (and optionally list its claims); with repeats or a panel, also the judge's stability;
    with passages, the evidence and citation checks."""
    from hallumeasure.report.rag import load_rag, print_rag
    from hallumeasure.report.stability import claim_votes, run_stability
    from hallumeasure.runs.store import load_run

    try:
        data = load_run(run_dir)
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    if data.unfinished and data.manifest is not None:  # exit 0: looking at a crashed run is how one finds out why
        stored = int(data.summary.iloc[0]["n_responses"]) if len(data.summary) else 0
        console.print(
            f"[yellow]warning:[/yellow] {escape(redact(_unfinished_message(run_dir, data.manifest, stored)))}",
            highlight=False,
            soft_wrap=True,
        )
    if as_json:
        payload = {
            "manifest": json.loads(data.manifest.model_dump_json()) if data.manifest else None,
            "unfinished": data.unfinished,
            "summary": json.loads(data.summary.to_json(orient="records")),
            "error_reasons": data.error_reasons(),
            "stability": json.loads(stability.model_dump_json()) if (stability := run_stability(data)) else None,
            "rag": [s.model_dump(mode="json") for s in load_rag(run_dir)[0]],
        }
        if claims:
            payload["claims"] = _claim_records(_with_votes(data, claim_votes))
        out.print_json(data=payload)
        return
    summaries, evidence = load_rag(run_dir)
    if summary:
        _print_summary(run_dir, data)
        _print_error_reasons(data, out, run_dir=run_dir)
        print_rag(out, summaries)
    if claims:
        _print_claims(data, run_dir, _with_votes(data, claim_votes), evidence)


def _print_claims(
    data: RunData,
    run_dir: Path,
    rows: pd.DataFrame | None = None,
    evidence: dict[str, ClaimEvidence] | None = None,
) -> None:
    """One line per claim, cut to the terminal's width (80 columns when not a terminal); reasons when it is wide.

    ``rows``: the claims with their votes (``_with_votes``); a run with repeats or a panel shows them.
    ``evidence``: the evidence of each claim by claim id (``load_rag``); a run with passages shows each claim's
    citation finding and its evidence quote.
    """
    from rich import box

    from hallumeasure.report.rag import quote_cell

    wide = out.size.width >= 150
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    sample_width = min(16, max([6, *(len(str(x)) for x in data.claims["sample_id"])]))
    table.add_column("sample", no_wrap=True, overflow="ellipsis", width=sample_width)
    table.add_column("label", no_wrap=True, overflow="ellipsis", width=12)
    table.add_column("subtype", no_wrap=True, overflow="ellipsis", width=11)
    rows = data.claims if rows is None else rows
    evidence = evidence or {}
    voted = "votes" in rows
    if voted:
        table.add_column("votes", no_wrap=True, overflow="ellipsis", width=14)
    # the citation finding when some claim has one (a response that cites passages), the quote when wide
    cited = bool(evidence) and any(getattr(e, "citation", None) for e in evidence.values())
    if cited:
        table.add_column("citation", no_wrap=True, overflow="ellipsis", width=17)
    quoted = bool(evidence) and wide
    # rich squeezes every column when a text is longer than the line, so the rest is shared out here
    n_columns = 4 + voted + cited + wide + quoted
    rest = max(
        20, out.size.width - sample_width - 12 - 11 - (15 if voted else 0) - (18 if cited else 0) - 2 * n_columns
    )
    claim_width = rest * 2 // 5 if wide else rest
    table.add_column("claim", no_wrap=True, overflow="ellipsis", width=claim_width)
    if wide:
        table.add_column("reason", no_wrap=True, overflow="ellipsis", width=(rest - claim_width) // (1 + quoted))
    if quoted:
        table.add_column("evidence", no_wrap=True, overflow="ellipsis", width=(rest - claim_width) // 2)
    for row in rows.to_dict(orient="records"):
        label = _cell(row["label"])
        shown = {"partially_supported": "partial"}.get(label, label)
        cells = [
            _cell(row["sample_id"]),
            shown or "[red]ERROR[/red]",
            _cell(row["subtype"]),
            *((_cell(row["votes"]),) if voted else ()),
            _cell(row["claim"]),
        ]
        if cited:
            cells.insert(3 + voted, _cell(getattr(evidence.get(row["claim_id"]), "citation", None)))
        if wide:
            cells.append(_cell(row["label_reason"]) if label else _cell(row["error"]))
        if quoted:
            cells.append(_cell(quote_cell(evidence.get(row["claim_id"]))))
        table.add_row(*cells)
    out.print(table)
    out.print(
        f"{len(data.claims)} claims, one line each, cut to fit ('partial' = partially_supported); every "
        "reason and the evidence in full: "
        f"hallumeasure view {run_dir} (or: show {run_dir} --json --claims)",
        highlight=False,
        markup=False,
        soft_wrap=False,
    )


@app.command()
def view(
    runs: Annotated[
        list[Path], typer.Argument(help="Run directories; two runs over the same samples are shown side by side.")
    ],
    out_file: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="The HTML file to write (default: view.html in the first run's directory)."),
    ] = None,
    open_browser: Annotated[bool, typer.Option("--open", help="Open the file in the default web browser.")] = False,
    max_responses: Annotated[
        int, typer.Option(min=1, help="Most responses embedded; more are cut, with a note on the page.")
    ] = 2000,
) -> None:
    """Write one self-contained HTML page to look at runs: claims highlighted in the response, reasons, evidence."""
    from hallumeasure.report.viewer import write_viewer

    target = out_file or runs[0] / "view.html"
    try:
        path = write_viewer(runs, target, max_responses=max_responses)
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    except OSError as exc:
        raise _fail(f"{exc.filename or target}: {exc.strerror or _one_line(exc)}") from None
    size = path.stat().st_size
    out.print(
        f"wrote {path} ({size / 1e6:.1f} MB, one file, works offline); open in a browser:",
        markup=False,
        highlight=False,
        soft_wrap=False,
    )
    out.print(path.resolve().as_uri(), markup=False, highlight=False)  # last, whole, so a terminal can link it
    if open_browser:
        import webbrowser

        webbrowser.open(path.resolve().as_uri())


@app.command()
def compare(
    runs: Annotated[
        list[Path], typer.Argument(help="Run directories written by 'measure' (one may hold several models).")
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="Directory for report.md, report.html, report.json and plots.")
    ],
    allow_mismatch: Annotated[
        bool,
        typer.Option(
            "--allow-mismatch",
            help="Compare runs measured with different judges, modes, prompts or policies; the report is marked.",
        ),
    ] = False,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples per interval.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutation tests.")] = 0,
    worst: Annotated[int, typer.Option(min=0, help="Worst examples shown per model.")] = 3,
    labels: Annotated[
        list[Path] | None,
        typer.Option(
            "--labels",
            help="Human labels (see 'calibrate'): adds the judge's agreement and corrected rates "
            "for the run they match.",
        ),
    ] = None,
) -> None:
    """Compare models: rates with bootstrap intervals, paired differences, subtype mix, worst examples."""
    from hallumeasure.report.compare import compare_runs
    from hallumeasure.report.render import format_p, format_signed

    try:
        _refuse_unfinished(runs)
        report = compare_runs(
            runs, out_dir, allow_mismatch=allow_mismatch, resamples=resamples, seed=seed, worst=worst, labels=labels
        )
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    except ValidationError as exc:
        raise _fail(_one_line(exc)) from None
    table = Table(title="models", title_justify="left")
    for name in ("model", "responses", "mean unsupported rate [95% CI]", "hallucinated share [95% CI]", "error rows"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for s in report.model_stats:
        table.add_row(
            escape(s.name),
            str(s.n_responses),
            s.mean_unsupported_rate.format(),
            s.hallucinated_share.format(),
            str(s.n_error_rows),
        )
    out.print(table)
    for c in report.comparisons:
        d = c.unsupported_rate
        out.print(
            f"unsupported rate, {c.b} - {c.a}: {format_signed(d.diff)} (p {format_p(d.p_value)}; "
            f"{c.pairing}, {c.n_shared} shared samples)",
            highlight=False,
            markup=False,
        )
    for cal in report.calibrations:
        for corrected in cal.corrected:
            out.print(
                f"{corrected.metric} of {cal.run}, corrected by {cal.labels_file}: {corrected.ppi.format()} "
                f"(PPI; judge {corrected.judge.format()}, {corrected.n_labelled} labelled responses)",
                highlight=False,
                markup=False,
            )
    for line in report.policy:
        out.print(line, highlight=False, markup=False)
    for note in report.notes:
        out.print(f"note: {note}", highlight=False, markup=False)
    for problem in report.mismatches:
        console.print(f"[yellow]warning:[/yellow] {escape(problem)}", highlight=False)
    out.print(
        f"wrote {out_dir / 'report.html'}, {out_dir / 'report.md'} and {out_dir / 'view.html'} (every claim)",
        markup=False,
    )


@app.command()
def audit(
    baseline: Annotated[Path, typer.Option("--baseline", help="The baseline run directory.")],
    current: Annotated[Path, typer.Option("--current", help="The run to audit against the baseline.")],
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Directory for audit.json, audit.md and audit.junit.xml (default: runs/audit/<baseline>__<current>).",
        ),
    ] = None,
    max_rate_rise: Annotated[
        float,
        typer.Option(
            min=0.0, max=1.0, help="Tolerated rise of the mean unsupported rate (absolute; the non-inferiority margin)."
        ),
    ] = 0.02,
    alpha: Annotated[
        float, typer.Option(callback=_one_sided_alpha, help="One-sided error level of each decision, in (0, 0.5).")
    ] = 0.05,
    max_hallucinated_share_rise: Annotated[
        float | None,
        typer.Option(min=0.0, max=1.0, help="Tolerated rise of the hallucinated share (default: not gated)."),
    ] = None,
    fail_on_any_significant_rise: Annotated[
        bool,
        typer.Option(
            "--fail-on-any-significant-rise",
            help="Regression as soon as a rise is shown above 0, even within the tolerated rise.",
        ),
    ] = False,
    inconclusive: Annotated[
        str, typer.Option(help="Exit code of an inconclusive audit: exit4 (4), pass (0) or fail (1).")
    ] = "exit4",
    power: Annotated[
        float,
        typer.Option(
            callback=_open_unit,
            help="Power, in (0, 1), at which the minimum detectable rise and the samples needed are stated.",
        ),
    ] = 0.8,
    subtype_shift: Annotated[
        bool,
        typer.Option(
            "--subtype-shift/--no-subtype-shift", help="Fail when an error subtype becomes significantly more frequent."
        ),
    ] = True,
    subtype_alpha: Annotated[
        float | None,
        typer.Option(
            callback=_open_probability, help="Significance level of the subtype test, in (0, 1] (default: --alpha)."
        ),
    ] = None,
    min_samples: Annotated[
        int, typer.Option(min=1, help="Fewest compared samples for a verdict (fewer: inconclusive).")
    ] = 5,
    max_error_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Tolerated share of error rows in either run.")
    ] = 0.05,
    baseline_model: Annotated[str | None, typer.Option(help="Audit only this model of the baseline run.")] = None,
    current_model: Annotated[str | None, typer.Option(help="Audit only this model of the current run.")] = None,
    allow_mismatch: Annotated[
        bool, typer.Option("--allow-mismatch", help="Audit runs measured differently; the outputs are marked.")
    ] = False,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples per interval.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutation tests.")] = 0,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="Settings file whose audit table sets the gates not given here "
            "(default: the nearest hallumeasure.toml or pyproject.toml).",
        ),
    ] = None,
    ctx: typer.Context = None,  # type: ignore[assignment]  # typer passes it
) -> None:
    """Audit CURRENT against BASELINE.

    Exit 0 pass, 1 regression, 2 usage error, 3 too many error rows, 4 inconclusive.
    """
    from hallumeasure.cli.settings import explicit_options, find_config, merge, read_config
    from hallumeasure.report.audit import INCONCLUSIVE_EXITS, AuditGates, audit_runs, write_usage_error

    out_dir = out_dir or Path("runs") / "audit" / f"{baseline.name}__{current.name}"
    try:
        if inconclusive not in INCONCLUSIVE_EXITS:
            raise HalluMeasureError(
                f"--inconclusive must be one of {', '.join(INCONCLUSIVE_EXITS)}, got {inconclusive!r}"
            )
        given = {
            "max_rate_rise": max_rate_rise,
            "alpha": alpha,
            "max_hallucinated_share_rise": max_hallucinated_share_rise,
            "subtype_shift": subtype_shift,
            "subtype_alpha": subtype_alpha,
            "min_samples": min_samples,
            "max_error_share": max_error_share,
            "fail_on_any_significant_rise": fail_on_any_significant_rise,
            "inconclusive": inconclusive,
            "power": power,
        }
        # gates not given as options come from the settings file's audit table, else AuditGates' defaults
        source = config or find_config(Path.cwd())
        gates = merge(
            AuditGates,
            read_config(source, section="audit") if source else {},
            given,
            explicit=explicit_options(ctx, list(given)),
            source=source,
        )
        _refuse_unfinished([baseline, current])
        result = audit_runs(
            baseline,
            current,
            gates,
            out_dir=out_dir,
            allow_mismatch=allow_mismatch,
            baseline_model=baseline_model,
            current_model=current_model,
            resamples=resamples,
            seed=seed,
        )
    except Exception as exc:  # noqa: BLE001 - exit 1 means "regression" here, so no failure may escape as 1
        if isinstance(exc, HalluMeasureError):
            message = redact(str(exc))
        elif isinstance(exc, ValidationError):
            message = redact(_one_line(exc))
        else:
            message = redact(f"the audit could not run: {type(exc).__name__}: {_one_line(exc)}")
        try:
            write_usage_error(out_dir, message)
        except Exception as write_exc:  # noqa: BLE001 - the message on stderr matters more than the files
            message += f" (and {out_dir} cannot be written: {_one_line(write_exc)})"
        raise _fail(message, EXIT_USAGE) from None
    out.print(f"audit: {result.headline}", markup=False, highlight=False)
    table = Table()
    for name in ("gate", "result", "observed", "message"):
        table.add_column(name, overflow="fold")
    for gate in result.gates:
        table.add_row(escape(gate.name), gate.status.upper(), escape(str(gate.observed)), escape(gate.message))
    out.print(table)
    for line in result.policy:
        out.print(line, highlight=False, markup=False)
    for note in result.notes:
        out.print(f"note: {note}", highlight=False, markup=False)
    out.print(
        f"wrote {out_dir / 'audit.md'}, audit.json and audit.junit.xml; exit code {result.exit_code}", markup=False
    )
    raise typer.Exit(result.exit_code)


def _with_votes(data: RunData, claim_votes: Callable[[pd.DataFrame, Policy], pd.DataFrame | None]) -> pd.DataFrame:
    """The run's claims, with each claim's vote tally and flip rate when it has repeats or a panel."""
    votes = claim_votes(data.votes, data.manifest.policy if data.manifest else Policy())
    return data.claims if votes is None else data.claims.merge(votes, on="claim_id", how="left")


def _claim_records(claims: pd.DataFrame) -> list[dict[str, Any]]:
    """Claims with their verdicts as JSON-ready records (spans parsed; the raw model output left out)."""
    from hallumeasure.core.config import redact as _redact

    records: list[dict[str, Any]] = json.loads(
        claims.drop(columns=["raw_output"], errors="ignore").to_json(orient="records")
    )
    for record in records:
        if isinstance(record.get("spans"), str):
            record["spans"] = json.loads(record["spans"])
        if isinstance(record.get("error"), str):
            record["error"] = _redact(record["error"])
    return records


def _cell(value: object) -> str:
    """Table text for a DataFrame value (None and NaN become empty); markup in data is escaped."""
    if value is None or (isinstance(value, float) and value != value):
        return ""
    return escape(str(value))


# The plan and calibrate commands live in their own module; importing it registers them on ``app``.
from hallumeasure.cli import plan_calibrate  # noqa: E402,F401


def run() -> None:  # pragma: no cover - console entry wrapper
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
