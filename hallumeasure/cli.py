"""Command line: a thin shell over the library.

Exit codes: 0 success; 1 unexpected failure; 2 bad usage, input or configuration;
3 the run finished but some samples or claims ended as error rows (see the summary).
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hallumeasure import __version__
from hallumeasure.config import RedactingFilter, cache_path, redact
from hallumeasure.errors import HalluMeasureError
from hallumeasure.labels import Label, Policy, UnevaluatablePolicy

app = typer.Typer(
    help="Measure hallucinations in grounded LLM responses, claim by claim.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True)
out = Console(soft_wrap=True)

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    # One line, always: a script greps it, a person reads it at once.
    message = "; ".join(line.strip() for line in str(message).splitlines() if line.strip())
    console.print(f"[red]error:[/red] {escape(redact(message))}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


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
CacheFile = Annotated[Optional[Path], typer.Option(
    help="Request cache file (default: $HALLUMEASURE_CACHE_DIR/requests.sqlite).")]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the request cache.")]


def _one_line(exc: BaseException) -> str:
    """A one-line message for an exception: the first pydantic error, or the first line of its text."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ()))
        return f"{where}: {first['msg']}" if where else first["msg"]
    text = str(exc).strip()
    line = text.splitlines()[0] if text else ""
    return line or type(exc).__name__


def _columns(pairs: list[str]) -> dict[str, str]:
    mapping = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field or not column:
            raise _fail(f"--column takes field=name, got {pair!r}")
        mapping[field.strip()] = column.strip()
    return mapping


def _policy(unsupported: str, unevaluatable: str, min_claims: int, min_rate: float) -> Policy:
    try:
        labels = frozenset(Label(x.strip()) for x in unsupported.split(",") if x.strip())
        return Policy(unsupported_labels=labels, unevaluatable=UnevaluatablePolicy(unevaluatable),
                      min_unsupported_claims=min_claims, min_unsupported_rate=min_rate)
    except ValueError as exc:
        raise _fail(f"invalid policy: {exc}") from exc


@app.callback()
def main(
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logging (-v info, -vv debug).")] = 0,
) -> None:
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactingFilter())


@app.command()
def version() -> None:
    """Print the package version."""
    out.print(__version__)


@app.command()
def measure(
    input: Annotated[Path, typer.Argument(help="Samples: JSONL, CSV or Parquet with context and response.")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Run directory to write.")],
    extractor: Annotated[str, typer.Option(help="Claim extractor: offline, fake, anthropic:<model>, bedrock:<id>, langchain:<module:Class>.")] = "offline",
    judge: Annotated[str, typer.Option(help="Claim judge spec (same forms as --extractor).")] = "offline",
    mode: Annotated[str, typer.Option(help="Classifier prompt: cot-one, cot-all, nocot-one, nocot-all.")] = "cot-one",
    detector: Annotated[str, typer.Option(help="claims (extract + judge claims), conli (sentence then entity NLI with --judge), cascade (--first-pass judge, then --judge explains its flags).")] = "claims",
    first_pass: Annotated[Optional[str], typer.Option("--first-pass", help="Cascade only: the cheap first-pass judge (default: offline).")] = None,
    flag_threshold: Annotated[Optional[float], typer.Option(min=0.0, max=1.0, help="Cascade only: flag a claim when the first pass gives it at least this probability of being unsupported (default: 0.5).")] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted run in --out (not with --overwrite).")] = False,
    overwrite: Annotated[bool, typer.Option(help="Delete an existing run in --out first (not with --resume).")] = False,
    column: Annotated[Optional[list[str]], typer.Option(help="Map a field to your column: --column response=answer.")] = None,
    model_name: Annotated[Optional[str], typer.Option("--model-name", help="Model name for rows without one.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Samples measured at once.")] = 4,
    max_concurrency: MaxConcurrency = 8,
    max_retries: MaxRetries = 4,
    timeout: Timeout = 120.0,
    cache: CacheFile = None,
    no_cache: NoCache = False,
    unsupported_labels: Annotated[str, typer.Option(help="Labels counted as unsupported.")] = "contradicted,absent,partially_supported",
    unevaluatable: Annotated[str, typer.Option(help="How unevaluatable claims count: exclude, supported, unsupported.")] = "exclude",
    min_unsupported_claims: Annotated[int, typer.Option(min=1, help="Unsupported claims that make a response hallucinated.")] = 1,
    min_unsupported_rate: Annotated[float, typer.Option(min=0.0, max=1.0, help="...and the unsupported rate it needs.")] = 0.0,
    strict_input: Annotated[bool, typer.Option(help="Stop at the first bad input row instead of skipping it.")] = False,
    delimiter: Annotated[Optional[str], typer.Option(help="CSV delimiter (default: detected from the header line among , ; tab |).")] = None,
    max_context_tokens: Annotated[Optional[int], typer.Option(min=1, help="Source tokens shown to the judge per call; a longer source is cut, per response, to the chunks that matter to its claims (default: what the judge model's window leaves; the offline judge reads the whole source).")] = None,
    citation_pattern: Annotated[Optional[list[str]], typer.Option("--citation-pattern", help="Regular expression of a citation marker, with the cited id(s) in a group named ids; repeat for several (default: [1], [1, 2], [doc2], [^3], superscripts).")] = None,
    dry_run: Annotated[bool, typer.Option(help="Print the expected calls, tokens and cost; call nothing.")] = False,
    batch: Annotated[bool, typer.Option("--batch", help="Send each stage's requests through the provider's batch service: half price, results in minutes to hours. Batch ids are kept in the run directory; --resume polls them instead of submitting again.")] = False,
    batch_s3: Annotated[Optional[str], typer.Option("--batch-s3", help="Bedrock --batch: s3://bucket/prefix where the batch records and results go.")] = None,
    batch_role: Annotated[Optional[str], typer.Option("--batch-role", help="Bedrock --batch: ARN of the IAM role Bedrock uses to read and write --batch-s3.")] = None,
    batch_poll: Annotated[float, typer.Option(callback=_positive, help="--batch: seconds between the first polls (then up to 60).")] = 10.0,
    rpm: Annotated[Optional[str], typer.Option("--rpm", help="Requests per minute allowed per model, such as 50 or 4k; calls wait for their turn instead of collecting 429s.")] = None,
    tpm: Annotated[Optional[str], typer.Option("--tpm", help="Tokens per minute allowed per model (input and output), such as 40k or 2m.")] = None,
    no_warm_cache: Annotated[bool, typer.Option("--no-warm-cache", help="One-claim modes: send all claims of a response at once instead of one first and the rest when it has answered (faster; each claim then pays the prompt-cache write).")] = False,
) -> None:
    """Measure every sample of INPUT into a run directory."""
    from hallumeasure.detectors import DETECTORS, build_stages, save_detector_stats
    from hallumeasure.inputs import load_samples
    from hallumeasure.pipeline.run import run_measurement
    from hallumeasure.store import existing_run_error, holds_run
    from hallumeasure.types import Mode

    try:
        run_mode = Mode(mode)
    except ValueError:
        raise _fail(f"--mode must be one of {[m.value for m in Mode]}, got {mode!r}") from None
    if detector not in DETECTORS:
        raise _fail(f"--detector must be one of {list(DETECTORS)}, got {detector!r}")
    if resume and overwrite:
        raise _fail("--resume and --overwrite cannot be used together: --resume continues the run in --out, "
                    "--overwrite deletes it; pass one")
    if detector != "cascade":
        given = [name for name, value in (("--flag-threshold", flag_threshold), ("--first-pass", first_pass))
                 if value is not None]
        if given:
            raise _fail(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for --detector cascade only; "
                        f"this run uses --detector {detector}")
    if not resume and not overwrite and not dry_run and holds_run(out_dir):
        raise _fail(str(existing_run_error(out_dir, resumable=True)))
    policy = _policy(unsupported_labels, unevaluatable, min_unsupported_claims, min_unsupported_rate)
    sources = _source_options(max_context_tokens, citation_pattern)
    try:
        loaded = load_samples(input, columns=_columns(column or []), model=model_name, strict=strict_input,
                              delimiter=delimiter)
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    for problem in loaded.problems:
        who = f" (id {problem.sample_id})" if problem.sample_id else ""
        console.print(f"[yellow]skipped[/yellow] row {problem.row}{escape(who)}: {escape(problem.message)}",
                      highlight=False, soft_wrap=True)
    if dry_run:
        from hallumeasure.rag import capped_for_estimate

        _print_estimate(capped_for_estimate(loaded.samples, judge, sources), run_mode, judge, extractor, batch=batch)
        return
    try:
        model_for = _model_factory(cache, no_cache, max_concurrency=max_concurrency, max_retries=max_retries,
                                   timeout=timeout, rpm=rpm, tpm=tpm,
                                   batch=_batch_options(out_dir, batch_s3, batch_role, batch_poll) if batch else None)
        ext, jud = build_stages(detector, extractor=extractor, judge=judge, mode=run_mode,
                                first_pass=first_pass or "offline", policy=policy,
                                threshold=0.5 if flag_threshold is None else flag_threshold, model_for=model_for)
        if no_warm_cache and hasattr(jud, "warm_cache"):
            jud.warm_cache = False  # recorded in the manifest through the judge's settings
        with _progress(len(loaded.samples)) as advance:
            manifest, results = run_measurement(
                loaded.samples, out_dir, ext, jud, mode=run_mode, input_sha256=loaded.sha256,
                input_path=str(input), policy=policy, resume=resume,
                # In batch mode every sample starts at once, so that each stage becomes one batch.
                concurrency=max(concurrency, len(loaded.samples)) if batch else concurrency,
                settings={"skipped_input_rows": len(loaded.problems), "cache": not no_cache, "batch": batch},
                detector=detector, progress=advance, sources=sources,
                input_problems=loaded.problems, overwrite=overwrite,
            )
        save_detector_stats(out_dir, jud)  # conli / cascade counters, known only after the run
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    except OSError as exc:  # the request cache or the run directory cannot be written
        where = f"{exc.filename}: " if exc.filename else ""
        raise _fail(f"{where}{exc.strerror or _one_line(exc)}") from None
    data = _print_summary(out_dir)
    errors = manifest.counts.get("error_responses", 0) + manifest.counts.get("claim_errors", 0)
    if errors or loaded.problems:
        console.print(
            f"[yellow]{manifest.counts.get('error_responses', 0)} response(s) and "
            f"{manifest.counts.get('claim_errors', 0)} claim(s) ended as error rows; "
            f"{len(loaded.problems)} input row(s) skipped[/yellow]"
        )
        _print_error_reasons(data, console, run_dir=out_dir)
        raise typer.Exit(EXIT_INCOMPLETE)


def _source_options(max_context_tokens: int | None, patterns: list[str] | None):
    from hallumeasure.citations import compile_patterns
    from hallumeasure.rag import SourceOptions

    try:
        compile_patterns(patterns)
    except ValueError as exc:
        raise _fail(f"--citation-pattern: {exc}") from None
    return SourceOptions(max_context_tokens=max_context_tokens, **({"citation_patterns": tuple(patterns)} if patterns else {}))


#: Distinct error reasons printed after a run or by 'show' ('show --json' lists them all).
SHOWN_REASONS = 3


def _print_error_reasons(data, where: Console, *, run_dir: Path) -> None:
    """The distinct reasons of the error rows, counted, most frequent first (the first few)."""
    reasons = data.error_reasons(width=240)
    if not reasons:
        return
    where.print(f"error rows by reason ({len(reasons)} distinct):", highlight=False)
    for item in reasons[:SHOWN_REASONS]:
        noun = "response" if item["rows"] == "response" else "claim"
        where.print(f"  {item['count']} {noun}{'s' if item['count'] != 1 else ''}: {escape(item['reason'])}",
                    highlight=False, soft_wrap=True)
    if len(reasons) > SHOWN_REASONS:
        where.print(f"  ... and {len(reasons) - SHOWN_REASONS} more: hallumeasure show {escape(str(run_dir))} --json "
                    "lists them all", highlight=False, soft_wrap=True)


def _resume_hint(path: Path, m) -> str:
    """The command that finishes an unfinished run (with the stages it was started with)."""
    parts = ["hallumeasure measure", m.input_path or "INPUT", "--out", str(path)]
    if m.detector != "claims":
        parts += ["--detector", m.detector]
    parts += ["--extractor", m.extractor, "--judge", m.judge, "--mode", m.mode.value, "--resume"]
    return " ".join(parts)


def _unfinished_message(path: Path, manifest, n_stored: int) -> str:
    return (f"{path} is an unfinished run (status {manifest.status!r}: it crashed, was stopped, or is still being "
            f"written; {n_stored} of {manifest.n_samples} samples stored); finish it with: "
            f"{_resume_hint(path, manifest)} (and the other options it was started with)")


def _refuse_unfinished(paths: list[Path]) -> None:
    """compare / audit: numbers from a run that never finished would be read as a result; refuse them."""
    from hallumeasure.store import RunStore

    for path in paths:
        with RunStore(path) as store:
            manifest = store.read_manifest()
            if manifest is not None and manifest.status != "complete":
                raise HalluMeasureError(_unfinished_message(path, manifest, len(store.done_ids())) + ", then "
                                        "compare or audit it")


def _model_factory(cache: Path | None, no_cache: bool, *, rpm: str | None = None, tpm: str | None = None,
                   batch: dict | None = None, **wrapper):
    """``model_for(spec)``: one ``Model`` per spec, sharing the request cache, so stages share usage and cache.

    ``rpm`` / ``tpm`` put one shared rate limiter per provider and model in front of the calls;
    ``batch`` (from ``_batch_options``) sends them through the provider's batch service instead.
    """
    from hallumeasure.models.cache import RequestCache
    from hallumeasure.models.limits import parse_limit, shared_limiter
    from hallumeasure.pipeline.build import build_model

    request_cache = None if no_cache else RequestCache(cache or cache_path())
    rpm_value, tpm_value = parse_limit(rpm), parse_limit(tpm)
    models: dict = {}

    def model_for(spec: str):
        if spec not in models:
            limiter = shared_limiter(spec, rpm_value, tpm_value) if rpm_value or tpm_value else None
            options = {}
            if batch is not None and spec.startswith("bedrock:"):
                options = {"batch_s3_uri": batch["s3"], "batch_role_arn": batch["role"]}
            model = build_model(spec, cache=request_cache, model_options=options, limiter=limiter, **wrapper)
            if batch is not None:
                from hallumeasure.batch import BatchLedger, Batcher

                model.batch = Batcher(model.api, ledger=BatchLedger.for_run(batch["run_dir"]),
                                      poll_interval=batch["poll"], progress=_batch_progress)
            models[spec] = model
        return models[spec]

    return model_for


def _batch_options(run_dir: Path, s3: str | None, role: str | None, poll: float) -> dict:
    return {"run_dir": run_dir, "s3": s3, "role": role, "poll": poll}


def _batch_progress(progress) -> None:
    status = progress.status
    resumed = " (submitted by an earlier run)" if progress.resumed else ""
    console.print(f"batch {escape(status.batch_id.rsplit('/', 1)[-1])}{resumed}: {status.done}/{status.total} done, "
                  f"{escape(status.state)}, {progress.elapsed:.0f} s", highlight=False)


@app.command()
def mitigate(
    run_dir: Annotated[Path, typer.Argument(help="A run directory written by 'measure' (any detector).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="New run directory for the rewrites and mitigation.{json,md,html}.")],
    rewriter: Annotated[str, typer.Option(help="offline (rule-based, keyless) or a model spec: fake, anthropic:<model>, bedrock:<id>, langchain:<module:Class>.")] = "offline",
    rounds: Annotated[int, typer.Option(min=1, help="Rewrite what is still unsupported again, while the mean rate falls.")] = 1,
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
    from hallumeasure.mitigate import mitigate_run
    from hallumeasure.pipeline.rewrite import build_rewriter
    from hallumeasure.report.render import format_number
    from hallumeasure.store import existing_run_error, holds_run

    if out_dir.exists() and out_dir.resolve() == run_dir.resolve():
        raise _fail("--out must be a new directory, not the source run")
    if out_dir.exists() and not overwrite and holds_run(out_dir):
        raise _fail(str(existing_run_error(out_dir, resumable=False)))
    if overwrite and out_dir.exists():
        if out_dir.is_dir() and any(out_dir.iterdir()) and not holds_run(out_dir):
            raise _fail(f"{out_dir} is not empty and holds no hallumeasure run; refusing to delete it: "
                        "choose a new --out directory")
        try:
            shutil.rmtree(out_dir) if out_dir.is_dir() else out_dir.unlink()
        except OSError as exc:
            raise _fail(f"cannot delete {out_dir} for --overwrite: {exc.strerror or _one_line(exc)}") from None
    try:
        model_for = _model_factory(cache, no_cache, max_concurrency=max_concurrency, max_retries=max_retries,
                                   timeout=timeout)
        rw = build_rewriter(rewriter, model=None if rewriter == "offline" else model_for(rewriter))
        report = mitigate_run(run_dir, out_dir, rw, rounds=rounds, concurrency=concurrency, model_for=model_for)
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    table = Table(title=f"mitigation {run_dir} -> {out_dir}", title_justify="left")
    for name in ("", "before", "after"):
        table.add_column(name, justify="left" if not name else "right")
    table.add_row("mean unsupported rate", format_number(report.before.mean_unsupported_rate),
                  format_number(report.after.mean_unsupported_rate))
    table.add_row("hallucinated share", format_number(report.before.hallucinated_share),
                  format_number(report.after.hallucinated_share))
    out.print(table)
    rate = "-" if report.mitigation_rate is None else f"{report.mitigation_rate:.1%}"
    retention = "-" if report.retention is None else f"{report.retention:.1%}"
    clean = "-" if report.clean_rate is None else f"{report.clean_rate:.1%}"
    out.print(f"mitigation rate {rate} ({report.n_mitigated}/{report.n_originally_hallucinated} repaired; "
              f"{report.n_emptied} emptied, not counted; clean share {clean}); retention {retention} ({report.retained}/{report.supported_before}); "
              f"new unsupported claims {report.n_new_unsupported}; sent {report.n_sent}/{report.n_responses}; "
              f"rewrite output tokens {report.rewrite_usage.output_tokens}; rounds kept {report.rounds_kept}",
              markup=False, highlight=False)
    out.print(f"wrote {out_dir} (a run) and mitigation.md / .html / .json in it", markup=False)
    if report.n_rewrite_errors:
        console.print(f"[yellow]{report.n_rewrite_errors} rewrite(s) failed; those responses were kept unchanged[/yellow]")
        raise typer.Exit(EXIT_INCOMPLETE)


def _print_estimate(samples, mode, judge: str, extractor: str, *, gold_claims: bool = False,
                    batch: bool = False) -> None:
    from hallumeasure.bench import estimate_bench, estimate_cost
    from hallumeasure.pricing import PRICES_AS_OF, price_for

    est = estimate_bench(samples, mode, gold_claims=gold_claims)
    out.print(f"{est.n_samples} samples, mode {est.mode}: about {est.claims} claims, "
              f"{est.extraction_calls} extraction call(s) + {est.judge_calls} judge call(s), "
              f"~{est.input_tokens:,} input and ~{est.output_tokens:,} output tokens")
    if judge == "offline" and extractor in ("offline", None):
        out.print("cost: 0 (the offline judge and extractor call no provider)")
    else:
        price = price_for(judge)
        if price is None:
            out.print(f"cost: unknown (no price for {judge!r}; add one with HALLUMEASURE_PRICES)")
        else:
            dollars = estimate_cost(est, price) * (float(1 - price.batch_discount) if batch else 1.0)
            out.print(f"cost: about ${dollars:,.2f} at {'batch' if batch else 'list'} prices of {PRICES_AS_OF}, "
                      "before prompt caching (which lowers it) and re-asks (which raise it)")
    for assumption in est.assumptions:
        out.print(f"  assumes {assumption}")


class _progress:
    """A rich progress bar that the pipeline advances once per finished sample."""

    def __init__(self, total: int) -> None:
        self.bar = Progress(TextColumn("measuring"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=console, transient=True, disable=not console.is_terminal)
        self.task = self.bar.add_task("measure", total=total)

    def __enter__(self):
        self.bar.start()
        return lambda _result: self.bar.advance(self.task)

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


def _print_summary(run_dir: Path, data=None):
    """Print a run's summary table and settings; returns the loaded ``RunData``."""
    from hallumeasure.store import load_run

    data = data if data is not None else load_run(run_dir)
    manifest = data.manifest
    table = Table(title=f"run {run_dir}", title_justify="left")
    for name in ("model", "responses", "claims", "mean unsupported rate", "hallucinated share", "error rows"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for row in data.summary.to_dict(orient="records"):
        rate, share = row["mean_unsupported_rate"], row["hallucinated_share"]
        table.add_row(
            str(row["model"]), str(row["n_responses"]), str(row["n_claims"]),
            "-" if rate is None or rate != rate else f"{rate:.3f}",
            "-" if share is None or share != share else f"{share:.3f}",
            str(row["n_error_responses"] + row["n_claim_errors"]),
        )
    out.print(table)
    if manifest is not None:
        out.print(f"judge: {manifest.judge} ({manifest.mode.value}); extractor: {manifest.extractor}")
        out.print(f"policy: {manifest.policy.describe()}")
        if manifest.judge == "offline":
            out.print("note: the offline judge is a trained lexical/numeric model, not an LLM; "
                      "see the README for its measured quality.")
        if manifest.judge.startswith("fake"):
            out.print("note: the fake model is a demo for tests; its labels are not a measurement.")
    return data


@app.command()
def bench(
    datasets: Annotated[list[str], typer.Argument(help="Labelled JSONL/CSV files, or shared set names (bump, cliff, ...).")],
    judge: Annotated[str, typer.Option(help="Judge spec.")] = "offline",
    extractor: Annotated[Optional[str], typer.Option(help="Extractor spec (default: offline for the offline judge, else the judge's).")] = None,
    mode: Annotated[Optional[list[str]], typer.Option(help="Classifier mode(s); repeat to bench several.")] = None,
    gold_claims: Annotated[bool, typer.Option(help="Judge the dataset's gold claims directly (no extraction).")] = False,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Stratified sample of N records per dataset (seeded).")] = None,
    seed: Annotated[int, typer.Option(help="Seed for --limit sampling and the bootstrap.")] = 13,
    concurrency: Annotated[int, typer.Option(min=1, help="Samples judged at once.")] = 4,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples for the 95% CIs.")] = 1000,
    out_dir: Annotated[Path, typer.Option("--out", help="Where the JSON and Markdown tables go (the committed tables in benchmarks/bench are written with an explicit --out benchmarks/bench).")] = Path("runs/bench"),
    column: Annotated[Optional[list[str]], typer.Option(help="Map a field to your column: --column response=answer.")] = None,
    cache: Annotated[Optional[Path], typer.Option(help="Request cache file.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not use the request cache.")] = False,
    dry_run: Annotated[bool, typer.Option(help="Print expected calls, tokens and cost; call nothing.")] = False,
) -> None:
    """Score a judge on labelled data with the papers' metrics (P/R/F1, AUC, subtype F1, usage)."""
    from hallumeasure.bench import run_bench, save_bench, bench_markdown
    from hallumeasure.datasets import load_labelled, resolve_dataset, subsample
    from hallumeasure.models.cache import RequestCache
    from hallumeasure.pipeline.build import build_extractor, build_judge, build_model
    from hallumeasure.types import Mode

    modes = mode or ["cot-one"]
    for name in modes:
        if name not in {m.value for m in Mode}:
            raise _fail(f"--mode must be one of {[m.value for m in Mode]}, got {name!r}")
    extractor = extractor or ("offline" if judge == "offline" else judge)
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
                models = {spec: build_model(spec, cache=request_cache) for spec in {judge, extractor} - {"offline"}}
                jud = build_judge(judge, run_mode, model=models.get(judge))
                ext = None if gold_claims else build_extractor(extractor, model=models.get(extractor))
                result = run_bench(samples, jud, ext, gold_claims=gold_claims, mode=run_mode,
                                   concurrency=concurrency, n_resamples=resamples, seed=seed)
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
    out_file: Annotated[Optional[Path], typer.Option("--out", help="Also write the table to this Markdown file.")] = None,
) -> None:
    """Put several bench results side by side (one row per judge x mode x dataset)."""
    from hallumeasure.bench import compare_bench, load_bench

    loaded = []
    for path in results:
        if not path.exists():
            raise _fail(f"{path} does not exist; give the JSON files written by 'hallumeasure bench'")
        if path.is_dir():
            raise _fail(f"{path} is a directory; give the JSON files in it, such as {path}/*.json")
        try:
            loaded.append(load_bench(path))
        except (ValidationError, UnicodeDecodeError) as exc:
            raise _fail(f"{path} is not a bench result (a JSON file written by 'hallumeasure bench'): "
                        f"{_one_line(exc)}") from None
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
    claims: Annotated[bool, typer.Option(help="List every claim with its verdict (with --json: a 'claims' list).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest, summary and error reasons as JSON.")] = False,
) -> None:
    """Summarise a run (and optionally list its claims)."""
    from hallumeasure.report.rag import evidence_cell, load_rag, print_rag
    from hallumeasure.store import load_run

    try:
        data = load_run(run_dir)
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    if data.unfinished:  # still exit 0: looking at a crashed run is how one finds out what happened
        stored = int(data.summary.iloc[0]["n_responses"]) if len(data.summary) else 0
        console.print(f"[yellow]warning:[/yellow] {escape(redact(_unfinished_message(run_dir, data.manifest, stored)))}",
                      highlight=False, soft_wrap=True)
    if as_json:
        payload = {
            "manifest": json.loads(data.manifest.model_dump_json()) if data.manifest else None,
            "unfinished": data.unfinished,
            "summary": json.loads(data.summary.to_json(orient="records")),
            "error_reasons": data.error_reasons(),
            "rag": [s.model_dump(mode="json") for s in load_rag(run_dir)[0]],
        }
        if claims:
            payload["claims"] = _claim_records(data.claims)
        out.print_json(data=payload)
        return
    _print_summary(run_dir, data)
    _print_error_reasons(data, out, run_dir=run_dir)
    summaries, evidence = load_rag(run_dir)
    print_rag(out, summaries)
    if claims:
        table = Table(show_lines=False)
        for name in ("sample", "claim", "label", "subtype", "reason", *(("evidence",) if evidence else ())):
            table.add_column(name, overflow="fold")
        for row in data.claims.to_dict(orient="records"):
            label = _cell(row["label"]) or f"ERROR: {_cell(row['error'])}"
            extra = (_cell(evidence_cell(evidence.get(row["claim_id"]))),) if evidence else ()
            table.add_row(_cell(row["sample_id"]), _cell(row["claim"]), label, _cell(row["subtype"]),
                          _cell(row["label_reason"]), *extra)
        out.print(table)


@app.command()
def compare(
    runs: Annotated[list[Path], typer.Argument(help="Run directories written by 'measure' (one may hold several models).")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory for report.md, report.html, report.json and plots.")],
    allow_mismatch: Annotated[bool, typer.Option("--allow-mismatch", help="Compare runs measured with different judges, modes, prompts or policies; the report is marked.")] = False,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples per interval.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutation tests.")] = 0,
    worst: Annotated[int, typer.Option(min=0, help="Worst examples shown per model.")] = 3,
) -> None:
    """Compare models: rates with bootstrap intervals, paired differences, subtype mix, worst examples."""
    from hallumeasure.report.compare import compare_runs
    from hallumeasure.report.render import format_p, format_signed

    try:
        _refuse_unfinished(runs)
        report = compare_runs(runs, out_dir, allow_mismatch=allow_mismatch, resamples=resamples, seed=seed,
                              worst=worst)
    except HalluMeasureError as exc:
        raise _fail(str(exc)) from exc
    except ValidationError as exc:
        raise _fail(_one_line(exc)) from None
    table = Table(title="models", title_justify="left")
    for name in ("model", "responses", "mean unsupported rate [95% CI]", "hallucinated share [95% CI]", "error rows"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for s in report.model_stats:
        table.add_row(escape(s.name), str(s.n_responses), s.mean_unsupported_rate.format(),
                      s.hallucinated_share.format(), str(s.n_error_rows))
    out.print(table)
    for c in report.comparisons:
        d = c.unsupported_rate
        out.print(f"unsupported rate, {c.b} - {c.a}: {format_signed(d.diff)} (p {format_p(d.p_value)}; "
                  f"{c.pairing}, {c.n_shared} shared samples)", highlight=False, markup=False)
    for line in report.policy:
        out.print(line, highlight=False, markup=False)
    for note in report.notes:
        out.print(f"note: {note}", highlight=False, markup=False)
    for problem in report.mismatches:
        console.print(f"[yellow]warning:[/yellow] {escape(problem)}", highlight=False)
    out.print(f"wrote {out_dir / 'report.html'} and {out_dir / 'report.md'}", markup=False)


@app.command()
def audit(
    baseline: Annotated[Path, typer.Option("--baseline", help="The baseline run directory.")],
    current: Annotated[Path, typer.Option("--current", help="The run to audit against the baseline.")],
    out_dir: Annotated[Path, typer.Option("--out", "-o", help="Directory for audit.json, audit.md and audit.junit.xml.")],
    max_rate_rise: Annotated[float, typer.Option(min=0.0, max=1.0, help="Tolerated rise of the mean unsupported rate (absolute).")] = 0.02,
    alpha: Annotated[float, typer.Option(callback=_open_probability, help="Significance level of the paired/unpaired test, in (0, 1] (1.0 = margin only).")] = 0.05,
    max_hallucinated_share_rise: Annotated[Optional[float], typer.Option(min=0.0, max=1.0, help="Tolerated rise of the hallucinated share (default: not checked).")] = None,
    subtype_shift: Annotated[bool, typer.Option("--subtype-shift/--no-subtype-shift", help="Fail when an error subtype becomes significantly more frequent.")] = True,
    subtype_alpha: Annotated[Optional[float], typer.Option(callback=_open_probability, help="Significance level of the subtype test, in (0, 1] (default: --alpha).")] = None,
    min_samples: Annotated[int, typer.Option(min=1, help="Fewest compared samples for a verdict.")] = 5,
    max_error_share: Annotated[float, typer.Option(min=0.0, max=1.0, help="Tolerated share of error rows in either run.")] = 0.05,
    baseline_model: Annotated[Optional[str], typer.Option(help="Audit only this model of the baseline run.")] = None,
    current_model: Annotated[Optional[str], typer.Option(help="Audit only this model of the current run.")] = None,
    allow_mismatch: Annotated[bool, typer.Option("--allow-mismatch", help="Audit runs measured differently; the outputs are marked.")] = False,
    resamples: Annotated[int, typer.Option(min=1, help="Bootstrap resamples per interval.")] = 2000,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap and permutation tests.")] = 0,
) -> None:
    """Audit CURRENT against BASELINE. Exit 0 pass, 1 regression, 2 usage error, 3 incomplete."""
    from hallumeasure.report.audit import AuditGates, audit_runs, write_usage_error

    try:
        gates = AuditGates(max_rate_rise=max_rate_rise, alpha=alpha,
                           max_hallucinated_share_rise=max_hallucinated_share_rise, subtype_shift=subtype_shift,
                           subtype_alpha=subtype_alpha, min_samples=min_samples, max_error_share=max_error_share)
        _refuse_unfinished([baseline, current])
        result = audit_runs(baseline, current, gates, out_dir=out_dir, allow_mismatch=allow_mismatch,
                            baseline_model=baseline_model, current_model=current_model, resamples=resamples,
                            seed=seed)
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
    table = Table(title=f"audit: {result.status.upper()}", title_justify="left")
    for name in ("gate", "result", "observed", "message"):
        table.add_column(name, overflow="fold")
    for gate in result.gates:
        table.add_row(escape(gate.name), gate.status.upper(), escape(str(gate.observed)), escape(gate.message))
    out.print(table)
    for line in result.policy:
        out.print(line, highlight=False, markup=False)
    for note in result.notes:
        out.print(f"note: {note}", highlight=False, markup=False)
    out.print(f"wrote {out_dir / 'audit.md'}, audit.json and audit.junit.xml; exit code {result.exit_code}", markup=False)
    raise typer.Exit(result.exit_code)


def _claim_records(claims) -> list[dict]:
    """Claims with their verdicts as JSON-ready records (spans parsed; the raw model output left out)."""
    from hallumeasure.config import redact as _redact

    records = json.loads(claims.drop(columns=["raw_output"], errors="ignore").to_json(orient="records"))
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


def run() -> None:  # pragma: no cover - console entry wrapper
    app()


if __name__ == "__main__":  # pragma: no cover
    app()
