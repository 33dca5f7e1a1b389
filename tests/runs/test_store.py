"""Run store: resume, zero calls on re-run, lock, load_run DataFrames."""

import pytest
from testdata import EXAMPLES

from hallumeasure.core.errors import RunStoreError
from hallumeasure.core.types import Mode
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.cache import RequestCache
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.runs.inputs import load_samples
from hallumeasure.runs.run import load_run
from hallumeasure.runs.store import RunStore


def _stages(api, cache):
    model = Model(api, cache=cache)
    return LLMExtractor(model), LLMJudge(model, Mode.COT_ALL)


def _measure(samples, out, api, cache, **kwargs):
    ext, jud = _stages(api, cache)
    return run_measurement(samples, out, ext, jud, mode=Mode.COT_ALL, input_sha256="x" * 64, **kwargs)


def test_run_writes_manifest_and_loads_as_dataframes(tmp_path):
    loaded = load_samples(EXAMPLES)
    manifest, results = _measure(loaded.samples, tmp_path / "run", FakeAPI(), None)
    assert manifest.status == "complete" and manifest.counts["results"] == len(loaded.samples)
    assert set(manifest.prompts) == {"extract.v2", "classify_cot_all.v3"}
    assert all(len(h) == 64 for h in manifest.prompts.values())
    data = load_run(tmp_path / "run")
    assert len(data.responses) == len(loaded.samples)
    assert len(data.claims) == sum(r.n_claims for r in results)
    assert {"claim", "label", "subtype", "label_reason", "context"} <= set(data.claims.columns) | set(
        data.responses.columns
    )
    assert set(data.summary["model"]) == {"(all)", "model-a", "model-b"}
    assert data.manifest.judge == "fake:demo"


def test_rerun_of_a_finished_run_makes_zero_calls(tmp_path):
    samples = load_samples(EXAMPLES).samples
    cache = RequestCache(tmp_path / "cache.sqlite")
    first = FakeAPI()
    _measure(samples, tmp_path / "a", first, cache)
    assert first.calls > 0
    second = FakeAPI(script=[])  # any call would fail the run
    manifest, _ = _measure(samples, tmp_path / "b", second, cache)
    assert second.calls == 0 and manifest.counts["claim_errors"] == 0
    third = FakeAPI(script=[])
    manifest, _ = _measure(samples, tmp_path / "a", third, None, resume=True)
    assert third.calls == 0 and manifest.counts["measured_now"] == 0


def test_resume_measures_only_what_is_missing(tmp_path):
    samples = load_samples(EXAMPLES).samples
    _measure(samples[:5], tmp_path / "r", FakeAPI(), None)
    # Simulate an interrupted run of the full input: rewrite the manifest's sample count.
    api = FakeAPI()
    with pytest.raises(RunStoreError, match="--resume"):
        _measure(samples, tmp_path / "r", api, None)
    manifest, results = _measure(samples[:5] + samples[5:], tmp_path / "r", api, None, resume=True)
    assert manifest.counts["measured_now"] == len(samples) - 5
    assert len(results) == len(samples) and len({r.sample_id for r in results}) == len(samples)


def test_resume_refuses_a_different_configuration(tmp_path):
    samples = load_samples(EXAMPLES).samples[:2]
    _measure(samples, tmp_path / "r", FakeAPI(), None)
    model = Model(FakeAPI())
    with pytest.raises(RunStoreError, match="mode"):
        run_measurement(
            samples,
            tmp_path / "r",
            LLMExtractor(model),
            LLMJudge(model, Mode.NOCOT_ONE),
            mode=Mode.NOCOT_ONE,
            input_sha256="x" * 64,
            resume=True,
        )


def test_second_writer_is_refused(tmp_path):
    with RunStore(tmp_path / "r", write=True), pytest.raises(RunStoreError, match="another hallumeasure process"):
        RunStore(tmp_path / "r", write=True)
    RunStore(tmp_path / "r", write=True).close()  # free again once the first closed


def test_loading_a_non_run_is_a_clear_error(tmp_path):
    with pytest.raises(RunStoreError, match="not a hallumeasure run"):
        load_run(tmp_path)


def test_reading_a_missing_directory_says_it_does_not_exist(tmp_path):
    with pytest.raises(RunStoreError, match="does not exist"):
        load_run(tmp_path / "nope")
    with pytest.raises(RunStoreError, match=r"no run\.sqlite"):
        load_run(tmp_path)  # exists, holds no run


def test_a_run_directory_that_cannot_be_created_is_a_run_store_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunStoreError, match=r"cannot create run directory .*file/run: "):
        RunStore(tmp_path / "file" / "run", write=True)


def test_a_corrupt_database_or_manifest_is_a_run_store_error(tmp_path):
    loaded = load_samples(EXAMPLES)
    out = tmp_path / "run"
    _measure(loaded.samples[:2], out, FakeAPI(), None)
    manifest = (out / "manifest.json").read_text()
    (out / "manifest.json").write_text("{not json")
    with pytest.raises(RunStoreError, match=r"manifest\.json cannot be read"):
        load_run(out)
    (out / "manifest.json").write_text(manifest)
    for name in ("run.sqlite-wal", "run.sqlite-shm"):
        (out / name).unlink(missing_ok=True)
    (out / "run.sqlite").write_bytes(b"garbage" * 100)
    with pytest.raises(RunStoreError, match=r"run.sqlite cannot be read \(file is not a database\)"):
        load_run(out)


def test_error_reasons_are_counted_shortened_and_redacted(tmp_path, monkeypatch):
    from hallumeasure.core.errors import ProviderError

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value-123456")
    loaded = load_samples(EXAMPLES)
    out = tmp_path / "run"

    def fail(request):
        return ProviderError("quota exceeded")

    _measure(loaded.samples[:3], out, FakeAPI(responder=fail), None)
    data = load_run(out)
    assert not data.unfinished
    [reason] = data.error_reasons
    assert reason.count == 3 and reason.rows == "response" and "quota exceeded" in reason.reason
    # A row of no recorded kind (an older run's) is grouped by its own message.
    leaked = "leaked sk-secret-value-123456 " + "y" * 400
    data.results[0] = data.results[0].model_copy(update={"error": leaked, "error_kind": None})
    reasons = data.error_reasons_within(50)
    assert all(len(r.reason) <= 50 for r in reasons) and "sk-secret" not in str(reasons)
    assert sorted(r.count for r in reasons) == [1, 2]
