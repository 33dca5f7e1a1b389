"""From ``MeasureSettings`` to what a measurement needs: the policy, the source options, and the extractor
and judge with their models (one ``Model`` per spec, sharing the request cache and the rate limits).

The command line builds the same things from the same settings; the rules between settings are the
settings model's validators, so a keyword argument here fails with the message a command-line option
or a settings-file key gets, naming the setting as the Python keyword.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hallumeasure.core.config import cache_path
from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Label, Policy
from hallumeasure.judges.protocols import ClaimExtractor, ClaimJudge
from hallumeasure.models.batch import BatchProgress
from hallumeasure.models.model import Model
from hallumeasure.pipeline.settings import MeasureSettings, error_message, read_config
from hallumeasure.sources.rag import SourceOptions

log = logging.getLogger(__name__)

#: Told of a batch's progress while it runs.
BatchCallback = Callable[[BatchProgress], None]


def measure_settings(values: Mapping[str, Any], *, config: str | Path | None = None) -> MeasureSettings:
    """Validated settings: the keys of ``config`` (a hallumeasure.toml or pyproject.toml), then ``values``.

    Raises ``ConfigError`` with one line that names the setting (``judge``, ``repeats`` ...).
    """
    from_file = read_config(Path(config)) if config is not None else {}
    unknown = sorted(set(from_file) - set(MeasureSettings.model_fields))
    if unknown:
        raise ConfigError(f"{config}: unknown setting(s) {', '.join(unknown)}")
    unknown = sorted(set(values) - set(MeasureSettings.model_fields))
    if unknown:
        valid = ", ".join(MeasureSettings.model_fields)
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)}; valid settings: {valid}")
    given = {k: v for k, v in values.items() if v is not None}
    try:
        return MeasureSettings(**{**from_file, **given})
    except ValidationError as exc:

        def spell(key: str) -> str:
            return f"{key} in {config}" if key in from_file and key not in given else key

        raise ConfigError(error_message(exc.errors()[0], spell)) from None


def policy_of(settings: MeasureSettings) -> Policy:
    """The counting policy of the settings (their labels already checked by ``MeasureSettings``)."""
    labels = frozenset(Label(x.strip()) for x in settings.unsupported_labels.split(",") if x.strip())
    return Policy(
        unsupported_labels=labels,
        unevaluatable=settings.unevaluatable,
        min_unsupported_claims=settings.min_unsupported_claims,
        min_unsupported_rate=settings.min_unsupported_rate,
    )


def sources_of(settings: MeasureSettings) -> SourceOptions:
    """How sources are cut and citations read; a citation pattern that does not compile is a ``ConfigError``."""
    from hallumeasure.sources.citations import compile_patterns

    patterns = settings.citation_pattern
    try:
        compile_patterns(patterns)
    except ValueError as exc:
        raise ConfigError(f"citation_pattern: {exc}") from None
    extra = {"citation_patterns": tuple(patterns)} if patterns else {}
    return SourceOptions(max_context_tokens=settings.max_context_tokens, **extra)


def model_factory(
    settings: MeasureSettings, *, run_dir: Path | None = None, batch_progress: BatchCallback | None = None
) -> Callable[[str], Model]:
    """``model_for(spec)``: one ``Model`` per spec with the settings' cache, retries, deadline and limits.

    ``run_dir`` is where a batch ledger lives (``batch=True`` needs one); ``batch_progress`` hears of each
    batch's progress (the command line prints it).
    """
    from hallumeasure.detectors.scripted import fake_model_options
    from hallumeasure.judges.build import build_model
    from hallumeasure.models.cache import RequestCache
    from hallumeasure.models.limits import parse_limit, shared_limiter

    request_cache = None if settings.no_cache else RequestCache(settings.cache or cache_path())
    rpm, tpm, otpm = parse_limit(settings.rpm), parse_limit(settings.tpm), parse_limit(settings.otpm)
    if settings.batch and run_dir is None:
        raise ConfigError("batch needs a run directory for its ledger: pass out=")
    models: dict[str, Model] = {}

    def model_for(spec: str) -> Model:
        if spec not in models:
            limiter = shared_limiter(spec, rpm, tpm, output_tpm=otpm) if (rpm or tpm or otpm) else None
            options = fake_model_options(spec)
            if settings.batch and spec.startswith("bedrock:"):
                options = {"batch_s3_uri": settings.batch_s3, "batch_role_arn": settings.batch_role}
            model = build_model(
                spec,
                cache=request_cache,
                model_options=options,
                limiter=limiter,
                max_concurrency=settings.max_concurrency,
                max_retries=settings.max_retries,
                timeout=settings.timeout,
            )
            if settings.batch and run_dir is not None:
                from hallumeasure.models.batch import Batcher, BatchLedger

                model.batch = Batcher(
                    model.api,
                    ledger=BatchLedger.for_run(run_dir),
                    poll_interval=settings.batch_poll,
                    progress=batch_progress,
                )
            models[spec] = model
        return models[spec]

    return model_for


def build_stages_from(
    settings: MeasureSettings, *, run_dir: Path | None = None, batch_progress: BatchCallback | None = None
) -> tuple[ClaimExtractor, ClaimJudge, Policy]:
    """The extractor, the judge (a voting judge for repeats or a panel) and the policy of ``settings``."""
    from hallumeasure.detectors import build_stages
    from hallumeasure.judges.votes import build_voting_judge
    from hallumeasure.models.registry import with_options

    policy = policy_of(settings)
    extractor = with_options(settings.extractor, settings.extractor_option or [])
    judges = [with_options(name, settings.judge_option or []) for name in settings.judge or ["offline"]]
    model_for = model_factory(settings, run_dir=run_dir, batch_progress=batch_progress)
    ext, jud = build_stages(
        settings.detector,
        extractor=extractor,
        judge=judges[0],
        mode=settings.mode,
        first_pass=settings.first_pass or "offline",
        policy=policy,
        threshold=0.5 if settings.flag_threshold is None else settings.flag_threshold,
        model_for=model_for,
    )
    if len(judges) > 1 or settings.repeats > 1:
        jud = build_voting_judge(
            judges,
            settings.mode,
            repeats=settings.repeats,
            rule=settings.panel_rule,
            policy=policy,
            model_for=model_for,
        )
    for member in getattr(jud, "voters", [jud]):
        if settings.no_warm_cache and hasattr(member, "warm_cache"):
            member.warm_cache = False
    return ext, jud, policy
