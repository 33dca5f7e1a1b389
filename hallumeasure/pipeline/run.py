"""Run the pipeline over samples: each through the one judging path (``pipeline/judging.py``), stored as it goes.

Nothing is lost: every sample ends as one stored result, and a sample that cannot be measured
(extraction failed, an unexpected error) is an error row that says why. A source of any length is
judged: when it does not fit the judge's window, against the chunks that matter to each response.
Claims the judge could not decide are error rows of their own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sqlite3
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from hallumeasure.core.activity import Activity
from hallumeasure.core.aggregate import RunTally, summarise_response
from hallumeasure.core.errors import RunStoppedError, RunStoreError
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import ErrorKind, Mode, ResponseResult, RunManifest, Sample
from hallumeasure.judges.protocols import (
    ClaimExtractor,
    ClaimJudge,
    ComposedStage,
    MultiPromptStage,
    PromptedStage,
    model_to_close,
)
from hallumeasure.models.budget import BudgetSpentError
from hallumeasure.pipeline.judge_checks import ContextProbe, JudgeTally, probe_context
from hallumeasure.pipeline.judging import measure_sample
from hallumeasure.pipeline.limits import WorkLimits
from hallumeasure.registry import is_keyless
from hallumeasure.runs.inputs import key_samples
from hallumeasure.runs.store import RunStore, existing_run_error
from hallumeasure.sources.evidence import count_unverified
from hallumeasure.sources.rag import SourceOptions
from hallumeasure.version import __version__

log = logging.getLogger(__name__)

Progress = Callable[[ResponseResult], None]
T = TypeVar("T")


async def measure_samples(
    samples: Sequence[Sample],
    extractor: ClaimExtractor,
    judge: ClaimJudge,
    policy: Policy | None = None,
    *,
    store: RunStore | None = None,
    concurrency: int = 4,
    progress: Progress | None = None,
    sources: SourceOptions | None = None,
    limits: WorkLimits | None = None,
    activity: Activity | None = None,
) -> list[ResponseResult]:
    """Measure samples with at most ``concurrency`` in flight; each result is stored as soon as it is ready.

    ``activity`` records the samples in flight, their stage and claims judged, for a progress line that
    speaks while none finishes (``core/activity.py``).
    """
    policy = policy or Policy()
    gate = asyncio.Semaphore(concurrency)
    in_flight = activity or Activity()
    stopping: list[RunStoppedError] = []

    async def one(sample: Sample) -> ResponseResult:
        async with gate:
            if stopping:
                raise asyncio.CancelledError  # the run stops: samples that have not started do not
            with in_flight.tracking(sample.id):
                result = await measure_sample(sample, extractor, judge, policy, sources=sources, limits=limits)
        if store is not None:
            result = store_result(store, sample, result, policy)
        if progress is not None:
            progress(result)
        return result

    tasks = [asyncio.ensure_future(one(s)) for s in samples]
    try:
        return list(await asyncio.gather(*tasks))  # cancelled (Ctrl-C), it cancels every sample at once
    except RunStoppedError as stop:
        # Nothing more may be asked (a spent budget, no endpoint): the samples in flight end at their next
        # request, and the requests already sent are answered, paid for once and kept in the request cache.
        stopping.append(stop)
        await asyncio.wait(tasks)
        raise
    finally:
        # Anything else (a store that cannot write) drops the samples in flight before the models close: none
        # of them may end as an error row that a resume would keep.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


#: What the store raises for a result it cannot take (a value SQLite refuses, text it cannot encode).
STORE_ERRORS = (sqlite3.Error, ValueError, TypeError, OverflowError)


def store_result(store: RunStore, sample: Sample, result: ResponseResult, policy: Policy) -> ResponseResult:
    """Write ``result``; if the store rejects it, write an error row that says why instead.

    Only a store that cannot take even the error row (disk full, database gone) stops the run:
    a stopped run resumes where it was.
    """
    try:
        store.write_result(result)
        return result
    except STORE_ERRORS as exc:
        log.exception("sample %s: the result could not be stored", sample.id)
        error = summarise_response(
            sample,
            [],
            [],
            policy,
            usage=result.usage,
            error=f"the result could not be stored ({type(exc).__name__}: {exc})",
            error_kind=ErrorKind.STORE_FAILURE,
        )
        store.write_result(error)
        return error


def prompt_hashes(extractor: ClaimExtractor, judge: ClaimJudge) -> dict[str, str]:
    """Prompt ids and hashes that the stages use (offline stages use none)."""
    keys = [stage.prompt for stage in (extractor, judge) if isinstance(stage, PromptedStage)]
    keys += list(judge.extra_prompts) if isinstance(judge, MultiPromptStage) else []
    out = {}
    for prompt in keys:
        if prompt is not None:
            out[prompt.key] = prompt.sha256
    return out


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code: in this thread when no event loop runs here (Ctrl-C then
    reaches it), else on the kept loop (``on_kept_loop``), so that it works inside a running loop (Jupyter)."""
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    if running is _kept_loop:  # called from a coroutine on the kept loop itself: waiting on it would deadlock
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, coro).result()
    return on_kept_loop(coro).result()


_kept_loop: asyncio.AbstractEventLoop | None = None
_kept_lock = threading.Lock()


def kept_loop() -> asyncio.AbstractEventLoop:
    """The package's own event loop, on a daemon thread: where stages kept across calls run (an LLM client
    belongs to the loop it was opened on), and how sync code waits on a coroutine inside a running loop."""
    global _kept_loop
    with _kept_lock:
        if _kept_loop is None or _kept_loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="hallumeasure-loop", daemon=True).start()
            _kept_loop = loop
        return _kept_loop


def on_kept_loop(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Start ``coro`` on the kept loop; wait with ``.result()`` (sync) or ``asyncio.wrap_future`` (async)."""
    return asyncio.run_coroutine_threadsafe(coro, kept_loop())


def _manifest_identity(m: RunManifest) -> dict[str, Any]:
    return {
        "input_sha256": m.input_sha256,
        "extractor": m.extractor,
        "judge": m.judge,
        "mode": m.mode,
        "detector": m.detector,
        "policy": m.policy.model_dump(mode="json"),
        "prompts": m.prompts,
        "votes": (m.settings.get("judge") or {}).get("votes"),
        "sources": m.settings.get("sources"),
    }


def run_measurement(
    samples: Sequence[Sample],
    out: str | Path,
    extractor: ClaimExtractor,
    judge: ClaimJudge,
    *,
    mode: Mode,
    input_sha256: str,
    input_path: str | None = None,
    policy: Policy | None = None,
    resume: bool = False,
    concurrency: int = 4,
    settings: dict[str, Any] | None = None,
    detector: str = "claims",
    progress: Progress | None = None,
    sources: SourceOptions | None = None,
    limits: WorkLimits | None = None,
    activity: Activity | None = None,
    input_problems: Iterable[Any] = (),
    overwrite: bool = False,
    keep_results: bool = True,
) -> tuple[RunManifest, list[ResponseResult]]:
    """Measure ``samples`` into the run directory ``out`` and write its manifest; return it with every stored
    result, or with none when not ``keep_results`` (finishing reads the store in chunks, so a caller that only needs
    the manifest keeps memory flat in the size of the run).

    With ``resume``, samples already stored are kept and only the rest are measured, along with those a work
    limit left out (measured again under today's limits); the manifest must describe the same input, stages,
    prompts and policy. With ``overwrite``, a run
    already in ``out`` is deleted first (under the run's lock, so never under a running writer).
    ``input_problems`` (the loader's ``RowProblem``s) are stored with the run and counted in the
    manifest as ``skipped_input_rows``, so that the run accounts for every input row. ``limits`` are the
    work limits per response (``pipeline/limits.py``; none by default); ``activity`` records the samples in
    flight (``core/activity.py``). Samples are
    keyed by (id, model): an id shared by several models' samples is made unique by
    :func:`~hallumeasure.runs.inputs.key_samples`, and the same (id, model) twice is refused.
    """
    policy = policy or Policy()
    samples = key_samples(samples)
    input_problems = list(input_problems)
    sources = sources or SourceOptions()
    with RunStore(out, write=True, overwrite=overwrite) as store:
        previous = store.read_manifest()
        manifest, resumed = resumed_manifest(
            store,
            previous,
            new_manifest(
                out,
                extractor,
                judge,
                mode=mode,
                input_sha256=input_sha256,
                input_path=input_path,
                n_samples=len(samples),
                policy=policy,
                detector=detector,
                settings={"concurrency": concurrency, "sources": sources.settings(judge.name), **(settings or {})},
            ),
            resume=resume,
        )
        store.add_samples(list(samples))
        if input_problems or not resumed:
            store.write_input_problems(input_problems)
        store.write_manifest(manifest)
        done = stored_ids(store) if resumed else set()
        todo = [s for s in samples if s.id not in done]
        log.info(
            "measuring %d samples into %s (%d already stored) with %s / %s",
            len(todo),
            out,
            len(samples) - len(todo),
            extractor.name,
            judge.name,
        )
        try:
            probe = run_sync(
                _measure_and_close(
                    todo, extractor, judge, policy, store, concurrency, progress, sources, limits, activity, samples
                )
            )
            if not todo and resumed and previous is not None and "context_probe" in previous.settings:
                # Nothing measured now (a resume of a finished run): the verdicts, so the probe, are those of before.
                probe = ContextProbe.model_validate(previous.settings["context_probe"])
        except (KeyboardInterrupt, asyncio.CancelledError):
            mark_interrupted(store, manifest, len(samples))
            raise KeyboardInterrupt from None
        except BudgetSpentError:
            mark_interrupted(store, manifest, len(samples), status=BUDGET_SPENT)
            raise
        skipped = len(input_problems) or int((settings or {}).get("skipped_input_rows", 0))
        manifest = finish_manifest(
            store,
            manifest,
            n_samples=len(samples),
            measured_now=len(todo),
            skipped=skipped,
            probe=probe,
            stages=(extractor, judge),
        )
        return manifest, store.results() if keep_results else []


def new_manifest(
    out: str | Path,
    extractor: ClaimExtractor,
    judge: ClaimJudge,
    *,
    mode: Mode,
    input_sha256: str,
    input_path: str | None,
    n_samples: int,
    policy: Policy,
    detector: str,
    settings: dict[str, Any],
) -> RunManifest:
    """The manifest of a run about to start: what measures it (stages, prompts, policy) and its ``settings``."""
    return RunManifest(
        run_id=Path(out).name,
        package_version=__version__,
        input_path=input_path,
        input_sha256=input_sha256,
        n_samples=n_samples,
        extractor=extractor.name,
        judge=judge.name,
        mode=mode,
        detector=detector,
        policy=policy,
        prompts=prompt_hashes(extractor, judge),
        settings={"extractor": extractor.settings(), "judge": judge.settings(), **settings},
        started_at=datetime.now(UTC),
    )


def resumed_manifest(
    store: RunStore, previous: RunManifest | None, manifest: RunManifest, *, resume: bool
) -> tuple[RunManifest, bool]:
    """``manifest`` and whether it resumes the run already in ``store``, whose manifest the caller has read
    (``previous``, None when the store holds no run yet). Resuming needs ``resume`` and the same input, stages,
    prompts and policy; a resumed run keeps its start time."""
    if previous is None:
        return manifest, False
    if not resume:
        raise existing_run_error(store.path, resumable=True)
    ours, theirs = _manifest_identity(manifest), _manifest_identity(previous)
    diff = sorted(k for k, v in theirs.items() if ours[k] != v)
    if diff:
        raise RunStoreError(f"cannot resume {store.path}: it was measured with a different {', '.join(diff)}")
    return manifest.model_copy(update={"started_at": previous.started_at}), True


def stored_ids(store: RunStore) -> set[str]:
    """The samples a resume keeps: those stored, except the ones a work limit left out (the limits may have
    been raised since)."""
    return store.done_ids() - store.error_ids(ErrorKind.OVER_LIMIT)


#: The status of a run stopped by its budget (``--max-cost``): unfinished, and resumable.
BUDGET_SPENT = "budget_spent"


def mark_interrupted(store: RunStore, manifest: RunManifest, n_samples: int, *, status: str = "interrupted") -> None:
    """Ctrl-C, a stopped driver or a spent budget: work in flight is dropped (each stored result is whole); say so."""
    stored = len(store.done_ids())
    update = {"status": status, "finished_at": datetime.now(UTC)}
    store.write_manifest(manifest.model_copy(update={**update, "counts": {"samples": n_samples, "results": stored}}))
    log.info("%s with %d of %d samples stored", status.replace("_", " "), stored, n_samples)


def finish_manifest(
    store: RunStore,
    manifest: RunManifest,
    *,
    n_samples: int,
    measured_now: int,
    skipped: int,
    probe: ContextProbe | None = None,
    stages: tuple[ClaimExtractor, ClaimJudge] | None = None,
) -> RunManifest:
    """The finished manifest, written: counts, usage and the judge's sanity checks over every stored result, read
    from the store a chunk at a time (``FinishTally``), so the memory it needs does not grow with the run.

    With the ``stages`` that measured in this process, their settings and prompts are recorded again (what the
    judge learnt while judging, such as its model's window), and with a context ``probe`` what it asked and found.
    """
    settings = dict(manifest.settings)
    prompts = manifest.prompts
    if stages is not None:
        settings["judge"] = stages[1].settings()
        prompts = prompt_hashes(*stages)
    if probe is not None:
        settings["context_probe"] = probe.model_dump(mode="json")
    tally = FinishTally(manifest.policy)
    for result in store.iter_results():
        tally.add(result)
    if tally.judge.needs_recount():
        for result in store.iter_results():
            tally.judge.recount(result)
    summary = tally.run.summary()
    manifest = manifest.model_copy(
        update={
            "n_samples": n_samples,
            "finished_at": datetime.now(UTC),
            "status": "complete" if summary.n_responses == n_samples else "incomplete",
            "counts": {
                "samples": n_samples,
                "results": summary.n_responses,
                "measured_now": measured_now,
                "error_responses": summary.n_error_responses,
                "claim_errors": summary.n_claim_errors,
                "responses_with_errors": summary.n_responses_with_errors,
                "claims": summary.n_claims,
                "skipped_input_rows": skipped,
                "claims_with_evidence": tally.evidence_checked,
                "evidence_unverified": tally.evidence_unverified,
            },
            "usage": summary.usage,
            "judge_checks": tally.judge.checks(probe),
            "settings": settings,
            "prompts": prompts,
        }
    )
    store.write_manifest(manifest)
    return manifest


class FinishTally:
    """What a finished manifest counts, gathered one stored result at a time (``finish_manifest`` streams the store
    through it in chunks, so finishing a run of any size needs memory for one chunk): the run's summary, the
    evidence counts of every verdict and the judge's sanity checks."""

    def __init__(self, policy: Policy) -> None:
        self.run = RunTally(policy)
        self.judge = JudgeTally()
        self.evidence_checked = self.evidence_unverified = 0

    def add(self, result: ResponseResult) -> None:
        self.run.add(result)
        self.judge.add(result)
        unverified, checked = count_unverified(result.verdicts)
        self.evidence_unverified += unverified
        self.evidence_checked += checked


async def _measure_and_close(
    todo: list[Sample],
    extractor: ClaimExtractor,
    judge: ClaimJudge,
    policy: Policy,
    store: RunStore,
    concurrency: int,
    progress: Progress | None,
    sources: SourceOptions | None,
    limits: WorkLimits | None,
    activity: Activity | None,
    samples: Sequence[Sample],
) -> ContextProbe | None:
    """Measure ``todo``, then probe the judge with a few claims' sources removed (``probe_context``) while its models
    are open; the probe never fails the run."""
    try:
        await measure_samples(
            todo,
            extractor,
            judge,
            policy,
            store=store,
            concurrency=concurrency,
            progress=progress,
            sources=sources,
            limits=limits,
            activity=activity,
        )
        if not todo:
            return None  # nothing new to probe: the caller keeps the probe of the run that measured them
        if all(is_keyless(name) for name in store.judges()):
            return None  # the probe asks again about LLM verdicts only: none to pick, so no read of the store
        try:
            return await probe_context(judge, samples, store.iter_results())
        except RunStoppedError as exc:  # a budget spent by the run itself: the run is whole, the probe not asked
            log.warning("the context probe of the judge was not run: %s", exc)
            return None
        except Exception:
            log.warning("the context probe of the judge could not run", exc_info=True)
            return None
    finally:
        await close_stage_models(extractor, judge)


async def close_stage_models(*stages: object) -> None:
    """Close each provider model of ``stages`` (and of a cascade's first pass, a panel's judges) once."""
    stages = (*stages, *(member for stage in stages if isinstance(stage, ComposedStage) for member in stage.members()))
    models = {id(m): m for stage in stages if (m := model_to_close(stage)) is not None}
    for model in models.values():
        await model.aclose()
