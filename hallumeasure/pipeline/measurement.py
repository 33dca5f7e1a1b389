"""The one door to a run: ``Measurement(settings).run(loaded, out)`` turns settings and samples into a stored run.

It owns what every front door used to repeat: reading the settings (a settings file, then keywords), the
counting policy and source options, one ``Model`` per spec (``models.factory``), the stages of the
registered detector (with a voting judge for repeats or a panel), the existing-run and
resume/overwrite checks, the settings recorded in the manifest, and the detector's counters written
after the run. ``hallumeasure measure``, ``hallumeasure.measure``, ``check``, ``bench``, ``mitigate``,
``monitor`` and the guard all build their runs or stages here and only parse and print around it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from hallumeasure.core.activity import Activity
from hallumeasure.core.errors import ConfigError, InputError
from hallumeasure.core.labels import Label, Policy
from hallumeasure.core.sampling import in_sample
from hallumeasure.core.types import ResponseResult, RunManifest
from hallumeasure.judges.protocols import (
    ClaimExtractor,
    ClaimJudge,
    CountingJudge,
    StageRequest,
    VotingStage,
    WarmableJudge,
)
from hallumeasure.models.batch import BatchProgress
from hallumeasure.models.budget import Budget, BudgetSpentError
from hallumeasure.models.factory import BatchOptions, ModelFactory, ModelOptions
from hallumeasure.models.model import Model
from hallumeasure.pipeline.budget import BudgetRecord, BudgetStoppedError, RunBudget, pick_within, stage_prices
from hallumeasure.pipeline.limits import LIMIT_SETTINGS, WorkLimits
from hallumeasure.pipeline.settings import MeasureSettings, error_message, read_config
from hallumeasure.registry import PartKind, registry
from hallumeasure.registry.specs import with_options
from hallumeasure.runs.inputs import LoadedInput
from hallumeasure.sources.rag import SourceOptions

log = logging.getLogger(__name__)

#: Told of a batch's progress while it runs.
BatchCallback = Callable[[BatchProgress], None]


def measure_settings(
    values: Mapping[str, Any], *, config: str | Path | None = None, base: MeasureSettings | None = None
) -> MeasureSettings:
    """Validated settings: the keys of ``config`` (a hallumeasure.toml or pyproject.toml), then the fields set
    in ``base`` (a ``MeasureSettings`` a caller made), then ``values`` (keywords; None: not given).

    Raises ``ConfigError`` with one line that names the setting (``judge``, ``repeats`` ...).
    """
    if base is not None and not isinstance(base, MeasureSettings):
        raise ConfigError(f"settings= takes a MeasureSettings, not a {type(base).__name__}")
    from_file = read_config(Path(config)) if config is not None else {}
    if base is not None:
        from_file = {**from_file, **base.model_dump(mode="json", exclude_unset=True)}
    unknown = sorted(set(from_file) - set(MeasureSettings.model_fields))
    if unknown:
        raise ConfigError(f"{config}: unknown setting(s) {', '.join(unknown)}")
    unknown = sorted(set(values) - set(MeasureSettings.model_fields))
    if unknown:
        valid = ", ".join(MeasureSettings.model_fields)
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)}; valid settings: {valid}")
    # None means "not given", except for a work limit, where it means "no limit"
    given = {k: v for k, v in values.items() if v is not None or k in LIMIT_SETTINGS}
    try:
        return MeasureSettings(**{**from_file, **given})
    except ValidationError as exc:

        def spell(key: str) -> str:
            if key in from_file and key not in given and (base is None or key not in base.model_fields_set):
                return f"{key} in {config}"
            return key

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


def policy_values(policy: Policy) -> dict[str, Any]:
    """The ``MeasureSettings`` values of a counting policy (``policy_of`` turns them back into it)."""
    return {
        "unsupported_labels": ",".join(sorted(label.value for label in policy.unsupported_labels)),
        "unevaluatable": policy.unevaluatable.value,
        "min_unsupported_claims": policy.min_unsupported_claims,
        "min_unsupported_rate": policy.min_unsupported_rate,
    }


def sources_of(settings: MeasureSettings) -> SourceOptions:
    """How sources are cut and citations read; a citation pattern that does not compile is a ``ConfigError``."""
    from hallumeasure.sources.citations import compile_patterns

    patterns = settings.citation_pattern
    try:
        compile_patterns(patterns)
    except ValueError as exc:
        raise ConfigError(f"citation_pattern: {exc}") from None
    extra = {"citation_patterns": tuple(patterns)} if patterns else {}
    return SourceOptions(
        max_context_tokens=settings.max_context_tokens,
        user_turns=settings.user_turns,
        context_in_user_turns=settings.context_in_user_turns,
        **extra,
    )


def model_options(
    settings: MeasureSettings,
    *,
    run_dir: Path | None = None,
    batch_progress: BatchCallback | None = None,
    budget: Budget | None = None,
) -> ModelOptions:
    """How the run's models are wrapped: its cache, limits, retries, deadline, (with ``batch``) batches and
    (with ``max_cost``) the ``budget`` they share."""
    batch = None
    if settings.batch:
        if run_dir is None:
            raise ConfigError("batch needs a run directory for its ledger: pass out=")
        batch = BatchOptions(
            run_dir=run_dir,
            s3_uri=settings.batch_s3,
            role_arn=settings.batch_role,
            poll_interval=settings.batch_poll,
            progress=batch_progress,
        )
    return ModelOptions(
        cache=settings.cache,
        no_cache=settings.no_cache,
        rpm=settings.rpm,
        tpm=settings.tpm,
        otpm=settings.otpm,
        max_concurrency=settings.max_concurrency,
        max_retries=settings.max_retries,
        timeout=settings.timeout,
        batch=batch,
        budget=budget,
    )


#: Gives the one ``Model`` of an LLM spec (a ``ModelFactory``, or a test's scripted models).
ModelFor = Callable[[str], Model]


@dataclass
class Stages:
    """The built stages of a run: extractor, judge, counting policy, and what made their models."""

    extractor: ClaimExtractor
    judge: ClaimJudge
    policy: Policy
    models: ModelFor


def recorded_settings(manifest: RunManifest) -> MeasureSettings:
    """The settings that measured a stored run: those its manifest records as ``effective``.

    A run stored before they were recorded (or made by ``mitigate`` or ``monitor`` then) has them rebuilt from
    the manifest's stages, policy and source settings. A re-measure runs live, so batch mode is off, and without
    the run's budget.
    """
    effective = manifest.settings.get("effective")
    values: dict[str, Any] = dict(effective) if isinstance(effective, Mapping) else _settings_of_stages(manifest)
    values["batch"] = False
    values["max_cost"] = None  # a budget belongs to the run it picked and capped, not to a re-measure of it
    try:
        return MeasureSettings.model_validate(values)
    except ValidationError as exc:
        raise ConfigError(f"the run {manifest.run_id} records settings that no longer validate: {exc}") from None


def _settings_of_stages(manifest: RunManifest) -> dict[str, Any]:
    """``MeasureSettings`` values from a manifest's stages, policy and source settings (runs stored before the
    effective settings were recorded)."""
    from hallumeasure.sources.citations import DEFAULT_PATTERNS
    from hallumeasure.sources.retrieval import context_budget

    recorded: dict[str, Any] = manifest.settings
    judge: dict[str, Any] = recorded.get("judge") or {}
    values: dict[str, Any] = {"detector": manifest.detector, "extractor": manifest.extractor, "mode": manifest.mode}
    votes = judge.get("votes")
    if manifest.detector == "cascade":
        values |= {
            "judge": [judge["model"]],
            "first_pass": judge.get("first_pass"),
            "flag_threshold": judge.get("threshold"),
        }
    elif manifest.detector == "conli":
        values["judge"] = [judge.get("nli", manifest.judge)]
    elif votes:  # repeats or a panel: the same judges, repeats and rule
        values |= {"judge": list(votes["judges"]), "repeats": votes["repeats"], "panel_rule": votes["rule"]}
    else:
        values["judge"] = [manifest.judge]
    values |= policy_values(manifest.policy)
    sources: dict[str, Any] = recorded.get("sources") or {}
    budget = sources.get("context_budget_tokens")
    if budget is not None and budget != context_budget(values["judge"][0]):  # given, not the judge's window
        values["max_context_tokens"] = budget
    patterns = sources.get("citation_patterns")
    if patterns is not None and tuple(patterns) != DEFAULT_PATTERNS:
        values["citation_pattern"] = list(patterns)
    values["user_turns"] = bool(sources.get("user_turns", False))
    values["context_in_user_turns"] = bool(sources.get("context_in_user_turns", True))
    return values


def detector_stats(judge: ClaimJudge) -> dict[str, Any] | None:
    """The judge's counters (conli and cascade keep them), or None for judges without."""
    return judge.stats() if isinstance(judge, CountingJudge) else None


def save_detector_stats(run_dir: str | Path, judge: ClaimJudge) -> dict[str, Any] | None:
    """Write the judge's counters into the run manifest as ``settings.detector_stats`` (after the run).

    The manifest is written before any claim is judged, so counters that grow during the run are added once
    it has finished.
    """
    from hallumeasure.runs.store import RunStore

    stats = detector_stats(judge)
    if stats is None:
        return None
    with RunStore(run_dir, write=True) as store:
        manifest = store.read_manifest()
        if manifest is None:
            raise ConfigError(f"{run_dir} has no manifest to record detector stats in")
        settings = {**manifest.settings, "detector_stats": stats}
        store.write_manifest(manifest.model_copy(update={"settings": settings}))
    return stats


class Measurement:
    """A run set up from ``MeasureSettings``: build its stages, then measure samples into a run directory.

    >>> from hallumeasure.pipeline.measurement import Measurement, measure_settings
    >>> m = Measurement(measure_settings({"judge": ["offline"]}))
    >>> m.stages().judge.name
    'offline'
    """

    def __init__(
        self,
        settings: MeasureSettings | None = None,
        *,
        config_file: str | Path | None = None,
        batch_progress: BatchCallback | None = None,
    ) -> None:
        self.settings = settings or MeasureSettings()
        self.config_file = config_file
        self.batch_progress = batch_progress
        self.policy = policy_of(self.settings)
        self.sources = sources_of(self.settings)
        self.limits = WorkLimits(self.settings.max_response_chars, self.settings.max_claims)
        #: What the run's requests may cost (``max_cost``), shared by every model this measurement builds.
        self.budget = Budget(self.settings.max_cost) if self.settings.max_cost is not None else None

    @classmethod
    def of_run(cls, manifest: RunManifest) -> Measurement:
        """The measurement that made a stored run (``recorded_settings``): its stages, policy, sources and limits."""
        return cls(recorded_settings(manifest))

    @classmethod
    def from_values(
        cls, values: Mapping[str, Any], *, config: str | Path | None = None, base: MeasureSettings | None = None
    ) -> Measurement:
        """Settings from ``config``, then ``base``'s, then ``values`` (keyword names of ``MeasureSettings``),
        validated (``measure_settings``)."""
        return cls(measure_settings(values, config=config, base=base), config_file=config)

    @property
    def judges(self) -> list[str]:
        """The judge specs (a panel has several), with their ``judge_option``s joined on."""
        return [with_options(name, self.settings.judge_option or []) for name in self.settings.judge or ["offline"]]

    @property
    def extractor(self) -> str:
        """The extractor spec with its ``extractor_option``s joined on."""
        return with_options(self.settings.extractor, self.settings.extractor_option or [])

    @property
    def voting(self) -> bool:
        """Whether claims are judged by votes (repeats or a panel)."""
        return len(self.judges) > 1 or self.settings.repeats > 1

    def models(self, run_dir: Path | None = None) -> ModelFactory:
        """One ``Model`` per spec, wrapped as the settings say (a batch ledger lives in ``run_dir``)."""
        options = model_options(self.settings, run_dir=run_dir, batch_progress=self.batch_progress, budget=self.budget)
        return ModelFactory(options)

    def stages(self, run_dir: Path | None = None, *, models: ModelFor | None = None) -> Stages:
        """The extractor, the judge (a voting judge for repeats or a panel) and the policy of the settings."""
        from hallumeasure.judges.votes import build_voting_judge

        s = self.settings
        judges = self.judges
        models = models or self.models(run_dir)
        request = StageRequest(
            model_for=models,
            extractor=self.extractor,
            judge=judges[0],
            mode=s.mode,
            first_pass=s.first_pass or "offline",
            policy=self.policy,
            threshold=0.5 if s.flag_threshold is None else s.flag_threshold,
        )
        extractor, judge = registry().part(PartKind.DETECTOR, s.detector).load()(request)
        if self.voting:
            judge = build_voting_judge(
                judges, s.mode, repeats=s.repeats, rule=s.panel_rule, policy=self.policy, model_for=models
            )
        if s.no_warm_cache:
            for member in judge.voters if isinstance(judge, VotingStage) else [judge]:
                if isinstance(member, WarmableJudge):
                    member.warm_cache = False
        return Stages(extractor, judge, self.policy, models)

    def sampled(self, loaded: LoadedInput) -> LoadedInput:
        """``loaded`` with only the samples ``sample_rate`` and ``max_cost`` pick (by a hash of each id;
        ``core/sampling.py``, ``pipeline/budget.py``)."""
        return self.pick(loaded)[0]

    def pick(self, loaded: LoadedInput, *, threshold: float | None = None) -> tuple[LoadedInput, BudgetRecord | None]:
        """The samples ``sample_rate`` and ``max_cost`` pick, and the record of the budget's pick (None without
        one). ``threshold``: a pick made before (a resumed run keeps the responses it started with)."""
        s = self.settings
        if s.sample_rate is None and s.max_cost is None:
            return loaded, None
        record = None
        budget = self.run_budget()
        if threshold is not None or budget is None:
            rate = threshold if threshold is not None else s.sample_rate
            kept = [sample for sample in loaded.samples if in_sample(sample.id, rate)]
        else:
            kept, record = pick_within(
                loaded.samples,
                budget.max_cost,
                budget.prices,
                mode=s.mode,
                judge=self.judges[0],
                sources=self.sources,
                limits=self.limits,
                rate=s.sample_rate,
            )
        return LoadedInput(samples=kept, problems=loaded.problems, sha256=loaded.sha256, path=loaded.path), record

    def run_budget(self) -> RunBudget | None:
        """The budget of ``max_cost`` with the prices of this measurement's stages (None without one); a
        ``ConfigError`` when a stage's price is unknown."""
        s = self.settings
        if s.max_cost is None or self.budget is None:
            return None
        prices = stage_prices(
            self.extractor,
            self.judges,
            repeats=s.repeats,
            first_pass=(s.first_pass or "offline") if s.detector == "cascade" else None,
        )
        return RunBudget(s.max_cost, prices, self.budget)

    def recorded(self, loaded: LoadedInput, *, sampled_out: int = 0) -> dict[str, Any]:
        """What the manifest records of this measurement besides its stages (``sampled_out``: the responses
        ``sample_rate`` or ``max_cost`` left out)."""
        s = self.settings
        return {
            **({"sampled_out": sampled_out} if s.sample_rate is not None or s.max_cost is not None else {}),
            "skipped_input_rows": len(loaded.problems),
            "cache": not s.no_cache,
            "batch": s.batch,
            "config_file": str(self.config_file) if self.config_file is not None else None,
            "effective": s.model_dump(mode="json"),
        }

    def run(
        self,
        loaded: LoadedInput,
        out: str | Path,
        *,
        resume: bool = False,
        overwrite: bool = False,
        progress: Callable[[ResponseResult], None] | None = None,
        stages: Stages | None = None,
        activity: Activity | None = None,
    ) -> RunManifest:
        """Measure ``loaded``'s samples into ``out`` and return the manifest (counters of the detector included).

        A directory that already holds a run needs ``resume`` (go on where it stopped) or ``overwrite``.
        ``progress`` is told of each finished sample; ``activity`` records the samples in flight (for a
        heartbeat while none finishes).
        """
        from hallumeasure.runs.store import holds_run

        run_dir = Path(out)
        check_run_dir(run_dir, resume=resume, overwrite=overwrite)
        s = self.settings
        before = _recorded_budget(run_dir) if resume else None
        if resume and (before is None) != (s.max_cost is None) and holds_run(run_dir):
            said = "with" if before is not None else "without"
            raise ConfigError(
                f"{run_dir} was started {said} max_cost, and a resumed run keeps what it started with: resume it "
                f"{said} one (a new run takes a budget)"
            )
        picked, record = self.pick(loaded, threshold=before.threshold if before is not None else None)
        if before is not None:  # a resumed run keeps the responses it picked and what it spent; today's cap
            record = before.model_copy(update={"max_cost": s.max_cost or before.max_cost})
            if self.budget is not None:
                self.budget.spent_before = Decimal(str(before.spent))
        if not picked.samples and record is not None:
            raise InputError(
                f"max_cost {s.max_cost} is less than the estimated cost of the first response in hash order, so "
                f"it picks none of the {len(loaded.samples)} responses: raise it (measure --dry-run shows the pick)"
            )
        if not picked.samples:
            raise InputError(f"sample_rate {s.sample_rate} picks none of the {len(loaded.samples)} responses")
        stages = stages or self.stages(run_dir)
        recorded = self.recorded(loaded, sampled_out=len(loaded.samples) - len(picked.samples))
        if record is not None:
            recorded["budget"] = record.model_dump(mode="json")
        try:
            manifest = self._run(picked, loaded, run_dir, stages, recorded, resume, overwrite, progress, activity)
        except BudgetSpentError as exc:
            if record is None:
                raise
            spent = self.budget.spent if self.budget is not None else exc.spent  # settled once the run stopped
            record = record.model_copy(update={"spent": float(spent)})
            stopped = _record_budget(run_dir, record)
            stored = stopped.counts.get("results", 0)
            raise BudgetStoppedError(record, stored=stored, n_samples=stopped.n_samples) from None
        if record is not None and self.budget is not None:
            manifest = _record_budget(run_dir, record.model_copy(update={"spent": float(self.budget.spent)}))
        return manifest

    def _run(
        self,
        picked: LoadedInput,
        loaded: LoadedInput,
        run_dir: Path,
        stages: Stages,
        recorded: dict[str, Any],
        resume: bool,
        overwrite: bool,
        progress: Callable[[ResponseResult], None] | None,
        activity: Activity | None,
    ) -> RunManifest:
        from hallumeasure.pipeline.run import run_measurement

        s = self.settings
        manifest, _ = run_measurement(
            picked.samples,
            run_dir,
            stages.extractor,
            stages.judge,
            mode=s.mode,
            input_sha256=loaded.sha256,
            input_path=loaded.path,
            policy=stages.policy,
            resume=resume,
            # In batch mode every sample starts at once, so that each stage becomes one batch.
            concurrency=max(s.concurrency, len(picked.samples)) if s.batch else s.concurrency,
            settings=recorded,
            detector=s.detector,
            progress=progress,
            sources=self.sources,
            limits=self.limits,
            activity=activity,
            input_problems=loaded.problems,
            overwrite=overwrite,
            keep_results=False,
        )
        stats = save_detector_stats(run_dir, stages.judge)
        if stats is not None:
            manifest = manifest.model_copy(update={"settings": {**manifest.settings, "detector_stats": stats}})
        return manifest


def _recorded_budget(run_dir: Path) -> BudgetRecord | None:
    """The budget recorded by the run in ``run_dir`` (None: none there, or a run without a budget)."""
    from hallumeasure.runs.store import RunStore, holds_run

    if not holds_run(run_dir):
        return None
    with RunStore(run_dir) as store:
        manifest = store.read_manifest()
    recorded = manifest.settings.get("budget") if manifest is not None else None
    return BudgetRecord.model_validate(recorded) if isinstance(recorded, Mapping) else None


def _record_budget(run_dir: Path, record: BudgetRecord) -> RunManifest:
    """Write ``record`` into the manifest of ``run_dir`` (what the run spent is known once it ends or stops)."""
    from hallumeasure.runs.store import RunStore

    with RunStore(run_dir, write=True) as store:
        manifest = store.read_manifest()
        if manifest is None:
            raise ConfigError(f"{run_dir} has no manifest to record the budget in")
        settings = {**manifest.settings, "budget": record.model_dump(mode="json")}
        manifest = manifest.model_copy(update={"settings": settings})
        store.write_manifest(manifest)
    return manifest


def check_run_dir(
    run_dir: Path, *, resume: bool, overwrite: bool, spell: Callable[[str], str] = lambda name: name
) -> None:
    """Refuse ``resume`` with ``overwrite``, and a directory holding a run when neither is given.

    ``spell`` names a setting as the caller knows it (the command line passes ``--resume``).
    """
    from hallumeasure.runs.store import existing_run_error, holds_run

    if resume and overwrite:
        r, o = spell("resume"), spell("overwrite")
        raise InputError(f"{r} and {o} cannot be used together: {r} continues the run, {o} deletes it; pass one")
    if not resume and not overwrite and holds_run(run_dir):
        raise existing_run_error(run_dir, resumable=True)
