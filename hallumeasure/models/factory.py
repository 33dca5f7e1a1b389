"""The one place a ``Model`` is built: a spec read by the registry, its provider, and the wrapper around it.

``build_model_api(spec)`` makes the provider object; ``build_model(spec)`` wraps it in a ``Model``;
``ModelFactory`` gives every stage of a run the same ``Model`` per spec (one request cache, one rate
limiter per model, one batch ledger), built from ``ModelOptions``. The command line, the Python API,
``bench``, ``mitigate``, ``monitor`` and the guard all get their models here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hallumeasure.core.config import cache_path
from hallumeasure.core.errors import ConfigError
from hallumeasure.models.base import ModelAPI
from hallumeasure.models.model import Model
from hallumeasure.registry import PartKind, registry

if TYPE_CHECKING:
    from hallumeasure.models.batch import BatchProgress
    from hallumeasure.models.budget import Budget
    from hallumeasure.models.cache import RequestCache

#: Provider options that send a run's requests as a batch (only passed to providers that take them).
BATCH_OPTIONS = ("batch_s3_uri", "batch_role_arn")


def build_model_api(spec: str, **options: Any) -> ModelAPI:
    """The provider object of ``spec``; the spec's options and ``options`` go to the provider's constructor.

    ``options`` given in code win over the spec's, and may hold secrets (they are never recorded).
    """
    resolved = registry().resolve(spec, PartKind.PROVIDER)
    merged = resolved.part.read_options({**resolved.options, **options})
    factory = resolved.part.load()
    api = factory(resolved.model, **merged) if resolved.model else factory(**merged)
    if not isinstance(api, ModelAPI):
        raise ConfigError(f"provider {resolved.part.name!r} ({resolved.part.origin}) did not build a ModelAPI")
    return api


def build_model(
    spec: str, *, cache: RequestCache | None = None, model_options: dict[str, Any] | None = None, **wrapper: Any
) -> Model:
    """A ``Model`` wrapper (retries, deadline, cache, limits) around the provider named by ``spec``."""
    return Model(build_model_api(spec, **(model_options or {})), cache=cache, **wrapper)


@dataclass(frozen=True)
class BatchOptions:
    """Send every request of a run through the provider's batch service (``--batch``)."""

    run_dir: Path
    s3_uri: str | None = None
    role_arn: str | None = None
    poll_interval: float = 30.0
    progress: Callable[[BatchProgress], None] | None = None


@dataclass(frozen=True)
class ModelOptions:
    """How every ``Model`` of a run is wrapped: cache, rate limits, retries, deadline, concurrency, batches,
    budget."""

    cache: Path | None = None
    no_cache: bool = False
    rpm: str | None = None
    tpm: str | None = None
    otpm: str | None = None
    max_concurrency: int | None = None
    max_retries: int | None = None
    timeout: float | None = None
    batch: BatchOptions | None = None
    #: The run's budget (``--max-cost``): every model asks it before a request leaves.
    budget: Budget | None = None


class ModelFactory:
    """``factory(spec)``: one ``Model`` per spec, so that the stages of a run share cache, limits and usage."""

    def __init__(self, options: ModelOptions | None = None) -> None:
        from hallumeasure.models.limits import parse_limit

        self.options = options = options or ModelOptions()
        self._cache: RequestCache | None = None
        self._limits = (parse_limit(options.rpm), parse_limit(options.tpm), parse_limit(options.otpm))
        self.models: dict[str, Model] = {}

    @property
    def cache(self) -> RequestCache | None:
        """The request cache every model shares, opened when the first model is built (keyless runs open none)."""
        if self._cache is None and not self.options.no_cache:
            from hallumeasure.models.cache import RequestCache

            self._cache = RequestCache(self.options.cache or cache_path())
        return self._cache

    def __call__(self, spec: str) -> Model:
        if spec not in self.models:
            self.models[spec] = self._build(spec)
        return self.models[spec]

    def _build(self, spec: str) -> Model:
        from hallumeasure.models.limits import shared_limiter

        o = self.options
        rpm, tpm, otpm = self._limits
        limiter = shared_limiter(spec, rpm, tpm, output_tpm=otpm) if (rpm or tpm or otpm) else None
        model_options: dict[str, Any] = {}
        if o.batch is not None:
            part = registry().resolve(spec, PartKind.PROVIDER).part
            wanted = dict(zip(BATCH_OPTIONS, (o.batch.s3_uri, o.batch.role_arn), strict=True))
            model_options = {k: v for k, v in wanted.items() if part.open_options or k in part.options}
        wrapper = {
            k: v
            for k, v in (("max_concurrency", o.max_concurrency), ("max_retries", o.max_retries), ("timeout", o.timeout))
            if v is not None
        }
        spend = o.budget.for_model(spec) if o.budget is not None else None
        model = build_model(
            spec, cache=self.cache, model_options=model_options, limiter=limiter, spend=spend, **wrapper
        )
        if o.batch is not None:
            from hallumeasure.models.batch import Batcher, BatchLedger

            model.batch = Batcher(
                model.api,
                ledger=BatchLedger.for_run(o.batch.run_dir),
                poll_interval=o.batch.poll_interval,
                progress=o.batch.progress,
            )
        return model
