"""Stage and provider capabilities are typed protocols (hallumeasure.judges.protocols, models.batch), never
``getattr`` probes: each built-in stage has the ones it should, a third-party judge with none of them works
end to end, and no new probe slips into the package (issue #32)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from testdata import aws_session

import hallumeasure
from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Label
from hallumeasure.core.types import Claim, ClaimVerdict, Mode, Sample
from hallumeasure.detectors import build_stages
from hallumeasure.detectors.conli import ConliJudge, OfflineNliJudge, ScoringNliJudge
from hallumeasure.judges.build import build_extractor, build_judge
from hallumeasure.judges.protocols import (
    CacheWarmingJudge,
    ClaimExtractor,
    ClaimJudge,
    ComposedStage,
    CountingJudge,
    InstantJudge,
    Judgement,
    ModeJudge,
    ModelStage,
    MultiPromptStage,
    PromptedStage,
    RepeatableJudge,
    VotingStage,
    WarmableJudge,
    model_to_close,
)
from hallumeasure.judges.votes import build_voting_judge, repeatable
from hallumeasure.models.batch import BatchAPI, CheckedBatchAPI
from hallumeasure.models.factory import build_model_api
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import close_stage_models, prompt_hashes
from hallumeasure.registry import JudgePart, PartKind, registry
from hallumeasure.runs.store import RunStore

#: Every optional stage capability, so that each check below also says which ones a stage must lack.
CAPABILITIES: tuple[type, ...] = (
    PromptedStage,
    MultiPromptStage,
    ModelStage,
    ComposedStage,
    RepeatableJudge,
    ModeJudge,
    WarmableJudge,
    CacheWarmingJudge,
    InstantJudge,
    CountingJudge,
    VotingStage,
)


def _models() -> Any:
    """One ``Model`` per spec, as a run's ``ModelFactory`` gives them (the fake provider calls nothing)."""
    built: dict[str, Model] = {}

    def model_for(spec: str) -> Model:
        if spec not in built:
            built[spec] = Model(build_model_api(spec))
        return built[spec]

    return model_for


def _stored(run: Any) -> tuple[Any, list[Any]]:
    """The manifest and results a ``measure`` call stored."""
    with RunStore(run.path) as store:
        return store.read_manifest(), store.results()


def _has(stage: object) -> set[str]:
    return {c.__name__ for c in CAPABILITIES if isinstance(stage, c)}


# --- the built-in stages have the capabilities they should, and only those ------------------------------


def test_keyless_stages_have_no_llm_capabilities() -> None:
    extractor, judge = build_stages("claims", extractor="offline", judge="offline")
    assert isinstance(extractor, ClaimExtractor) and _has(extractor) == set()
    assert isinstance(judge, ClaimJudge) and _has(judge) == {"InstantJudge"}
    assert not repeatable(judge) and model_to_close(judge) is None and prompt_hashes(extractor, judge) == {}


def test_llm_claim_stages() -> None:
    extractor, judge = build_stages("claims", extractor="fake:x", judge="fake:y", model_for=_models())
    assert _has(extractor) == {"PromptedStage", "ModelStage"}
    assert _has(judge) == {
        "PromptedStage",
        "ModelStage",
        "ModeJudge",
        "RepeatableJudge",
        "WarmableJudge",
        "CacheWarmingJudge",
    }
    assert isinstance(judge, WarmableJudge) and judge.warms_cache  # no batch service
    assert isinstance(judge, ModeJudge) and judge.mode is Mode.COT_ONE
    assert model_to_close(extractor) is not model_to_close(judge)
    assert set(prompt_hashes(extractor, judge)) == {extractor.prompt.key, judge.prompt.key}  # type: ignore[attr-defined]


def test_conli_with_an_llm_and_keyless() -> None:
    _, llm = build_stages("conli", judge="fake:nli", model_for=_models())
    assert isinstance(llm, ConliJudge) and _has(llm) == {"PromptedStage", "ModelStage", "CountingJudge"}
    assert llm.prompt is not None and model_to_close(llm) is llm.model is not None
    assert not isinstance(llm.nli, ScoringNliJudge)

    _, keyless = build_stages("conli", judge="offline")
    assert isinstance(keyless, ConliJudge) and keyless.prompt is None and keyless.model is None
    assert model_to_close(keyless) is None
    assert isinstance(keyless.nli, OfflineNliJudge) and isinstance(keyless.nli, ScoringNliJudge)
    assert isinstance(keyless.nli.sentence_judge, InstantJudge)


def test_cascade_is_composed_of_its_first_pass() -> None:
    _, judge = build_stages("cascade", judge="fake:reasoner", first_pass="fake:first", model_for=_models())
    assert _has(judge) == {"PromptedStage", "MultiPromptStage", "ModelStage", "ComposedStage", "CountingJudge"}
    assert isinstance(judge, ComposedStage) and [m.name for m in judge.members()] == ["fake:first"]
    assert isinstance(judge, MultiPromptStage) and len(judge.extra_prompts) == 1  # the first pass's prompt
    _, keyless_first = build_stages("cascade", judge="fake:reasoner", model_for=_models())
    assert isinstance(keyless_first, MultiPromptStage) and keyless_first.extra_prompts == ()


def test_a_panel_is_composed_of_its_judges() -> None:
    panel = build_voting_judge(["fake:a", "offline"], Mode.COT_ONE, model_for=_models())
    assert _has(panel) == {"PromptedStage", "MultiPromptStage", "ComposedStage", "VotingStage"}
    assert isinstance(panel, ComposedStage) and [j.name for j in panel.members()] == ["fake:a", "offline"]
    assert isinstance(panel, PromptedStage) and panel.prompt is not None
    repeats = build_voting_judge(["fake:a"], Mode.COT_ONE, repeats=3, model_for=_models())
    assert isinstance(repeats, VotingStage) and [v.repeat for v in repeats.voters] == [0, 1, 2]


def test_rewriters() -> None:
    llm = registry().part(PartKind.REWRITER, "llm").load()(Model(build_model_api("fake")))
    offline = registry().part(PartKind.REWRITER, "offline").load()()
    assert _has(llm) == {"PromptedStage", "ModelStage"} and model_to_close(llm) is llm.model
    assert _has(offline) == set() and model_to_close(offline) is None


def test_providers_with_a_batch_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    anthropic, openai = build_model_api("anthropic:claude-x"), build_model_api("openai:gpt-x")
    bedrock = build_model_api("bedrock:anthropic.claude-x", region_name="us-east-1", session=aws_session())
    assert all(isinstance(api, BatchAPI) for api in (anthropic, openai, bedrock))
    assert isinstance(bedrock, CheckedBatchAPI) and not isinstance(anthropic, CheckedBatchAPI)
    fake = build_model_api("fake")
    assert not isinstance(fake, BatchAPI) and fake.min_cache_tokens is None


# --- a third-party judge with nothing but ClaimJudge ---------------------------------------------------------


class MiniJudge:
    """A plugin's judge: ``name``, ``judge`` and ``settings``, no optional capability at all."""

    name = "mini"

    async def judge(self, sample: Sample, claims: Sequence[Claim]) -> Judgement:
        verdicts = [
            ClaimVerdict(claim_id=c.id, judge=self.name, label=Label.SUPPORTED, label_reason="mini says so")
            for c in claims
        ]
        return Judgement(verdicts=verdicts)

    def settings(self) -> dict[str, Any]:
        return {"kind": "mini"}


@pytest.fixture
def mini() -> Any:
    registry().add(JudgePart("mini", MiniJudge))
    try:
        yield "mini"
    finally:
        registry().remove(PartKind.JUDGE, "mini")


SAMPLES = [
    {"id": "s1", "context": "The bridge opened in 1998 and is 6.8 km long.", "response": "The bridge is 6.8 km long."},
    {"id": "s2", "context": "The museum opens at 9 am.", "response": "The museum opens at 9 am. It is free."},
]


def test_a_judge_with_only_the_claim_judge_protocol_runs_end_to_end(mini: str, tmp_path: Path) -> None:
    judge = build_judge(mini)
    assert isinstance(judge, ClaimJudge) and _has(judge) == set()
    assert prompt_hashes(build_extractor("offline"), judge) == {} and model_to_close(judge) is None
    asyncio.run(close_stage_models(judge))  # nothing to close

    manifest, results = _stored(hallumeasure.measure(SAMPLES, judge=mini, out=tmp_path / "run"))
    assert manifest.judge == "mini" and manifest.prompts == {}
    assert len(results) == 2 and all(r.n_errors == 0 and r.verdicts for r in results)
    assert all(v.label is Label.SUPPORTED for r in results for v in r.verdicts)


def test_a_minimal_judge_in_a_panel_and_as_a_first_pass(mini: str, tmp_path: Path) -> None:
    manifest, results = _stored(hallumeasure.measure(SAMPLES, judge=[mini, "offline"], out=tmp_path / "panel"))
    assert {v.judge for r in results for v in r.votes} == {"mini", "offline"}
    assert manifest.settings["judge"]["votes"]["sampling"]["mini"].startswith("deterministic")

    cascade = hallumeasure.measure(
        SAMPLES, judge="fake:reasoner", detector="cascade", first_pass=mini, out=tmp_path / "cascade"
    )
    manifest, results = _stored(cascade)
    assert manifest.detector == "cascade" and len(results) == 2 and all(r.error is None for r in results)


def test_a_minimal_judge_cannot_be_repeated_and_says_so(mini: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the mini judge is deterministic"):
        hallumeasure.measure(SAMPLES, judge=mini, repeats=3, out=tmp_path / "run")


# --- no getattr / hasattr probing in the package -------------------------------------------------------------

#: The calls that remain, by file, and why they are not capability probes. A new ``getattr(`` or ``hasattr(``
#: beyond these counts fails: ask for a capability with a protocol from judges/protocols.py (stages) or
#: models/batch.py (providers) and ``isinstance``, or add it here with its reason if it reads something else.
ALLOWED: dict[str, tuple[int, str]] = {
    "hallumeasure/core/lazy.py": (1, "module attribute look-up of the lazy public API"),
    "hallumeasure/registry/parts.py": (1, "module attribute look-up of a part's 'module:attribute' target"),
    "hallumeasure/models/langchain.py": (27, "fields of LangChain chat models, messages and SDK exceptions"),
    "hallumeasure/judges/llm/classify.py": (4, "fields of the mode's pydantic output contract (they vary by mode)"),
    "hallumeasure/core/types.py": (2, "pydantic field access by name (Usage addition)"),
    "hallumeasure/bench/run.py": (3, "pydantic field access by name (Usage fields)"),
    "hallumeasure/pipeline/settings.py": (2, "pydantic field access by name; OSError.strerror in a message"),
    "hallumeasure/report/compare.py": (1, "dataclass field access by name"),
    "hallumeasure/report/plots.py": (1, "a model field by name: the two per-group figures share one loop"),
    "hallumeasure/runs/datasets.py": (1, "a dotted path into a dataset record (dicts or objects)"),
    "hallumeasure/runs/store.py": (2, "a manifest field read defensively; row fields by column name"),
    "hallumeasure/pipeline/estimate.py": (2, "labelled samples carry gold claims and a dataset, plain ones do not"),
    "hallumeasure/runs/inputs.py": (2, "pandas / numpy values duck-typed by tolist()"),
    "hallumeasure/bench/metrics.py": (1, "numpy scalars duck-typed by item()"),
    "hallumeasure/api/measure.py": (1, "a pandas DataFrame recognised without importing pandas"),
    "hallumeasure/cli/common.py": (3, "logging handler marks and click / typer internals"),
    "hallumeasure/cli/options.py": (2, "settings fields by name (a spec and its options)"),
    "hallumeasure/cli/show.py": (2, "an optional citation on evidence rows shown in a table"),
    "hallumeasure/export/mlflow.py": (1, "an MLflow assessment's source, whose fields vary by source type"),
    "hallumeasure/guard/connections.py": (
        2,
        "uvicorn's server state, where the per-client counts are kept; the lingering transport passes every other"
        " attribute to the transport it wraps",
    ),
}

PACKAGE = Path(hallumeasure.__file__).parent
PROBE = re.compile(r"\b(?:getattr|hasattr)\(")


def test_no_new_getattr_or_hasattr_probes() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        if relative.startswith("hallumeasure/testing/"):  # the simulators read wire JSON, not stages
            continue
        count = len(PROBE.findall(path.read_text(encoding="utf-8")))
        if count:
            found[relative] = count
    over = {
        name: f"{count} calls, {ALLOWED.get(name, (0, ''))[0]} allowed"
        for name, count in found.items()
        if count > ALLOWED.get(name, (0, ""))[0]
    }
    assert not over, (
        "new getattr()/hasattr() calls; ask for a stage or provider capability with a protocol and isinstance "
        f"(hallumeasure/judges/protocols.py, hallumeasure/models/batch.py), or allow-list a non-probe: {over}"
    )
