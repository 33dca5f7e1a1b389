"""--judge nli end to end: verdicts with offline reasons, the CLI, CoNLI's sentence NLI and the cascade's first pass."""

import json

import pytest
from judges.nli.conftest import require_nli
from testdata import EXAMPLES
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.labels import Label, Subtype
from hallumeasure.core.types import Claim, Sample

runner = CliRunner()

require_nli()

from hallumeasure.detectors import build_stages  # noqa: E402
from hallumeasure.judges.nli.judge import NliClaimJudge  # noqa: E402
from hallumeasure.pipeline.measurement import Measurement  # noqa: E402

SAMPLE = Sample(
    id="s1",
    context="The town council approved a budget of 4.2 million euros for the harbor wall on Tuesday. "
    "Work starts in March and should take about eighteen months.",
    response="",
)


def _claims(*texts):
    return [Claim(id=f"s1:{i}", sample_id="s1", index=i, text=t) for i, t in enumerate(texts)]


@pytest.fixture(scope="module")
def judge():
    return NliClaimJudge()


def test_supported_and_changed_number_claims(judge):
    claims = _claims(
        "The council approved a budget of 4.2 million euros for the harbor wall.",
        "The council approved a budget of 9.5 million euros for the harbor wall.",
        "Hello there?",
    )
    result = judge.judge_now(SAMPLE, claims)
    good, bad, question = result.verdicts
    assert good.probability < bad.probability
    assert question.label == Label.UNEVALUATABLE and question.probability is None
    if bad.label != Label.SUPPORTED:  # the reason comes from the offline signal that explains it
        assert bad.subtype == Subtype.NUMBER and "9.5" in bad.label_reason
    assert result.score == pytest.approx(max(good.probability, bad.probability), abs=1e-4)
    assert all(v.judge == "nli" for v in result.verdicts)


def test_measure_with_the_nli_judge_on_the_examples(tmp_path):
    result = runner.invoke(app, ["measure", str(EXAMPLES), "--judge", "nli", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge"] == "nli" and manifest["status"] == "complete"
    assert manifest["settings"]["judge"]["sha256"]


def test_conli_with_the_nli_model_and_its_manifest_round_trip(tmp_path):
    result = runner.invoke(
        app, ["measure", str(EXAMPLES), "--detector", "conli", "--judge", "nli", "--out", str(tmp_path / "conli")]
    )
    assert result.exit_code == 0, result.output
    from hallumeasure.runs.run import load_run

    manifest = load_run(tmp_path / "conli").manifest
    rebuilt = Measurement.of_run(manifest).stages().judge
    assert rebuilt.nli.sentence_judge.name == "nli" and rebuilt.name == "nli"


def test_cascade_takes_nli_as_its_first_pass_but_not_as_its_reasoner():
    from hallumeasure.core.errors import ConfigError
    from hallumeasure.models.fake import FakeAPI
    from hallumeasure.models.model import Model

    model = Model(FakeAPI("reasoner"))
    _, cascade = build_stages("cascade", judge="fake:reasoner", first_pass="nli", model_for=lambda spec: model)
    assert isinstance(cascade.first_pass, NliClaimJudge)
    with pytest.raises(ConfigError, match="needs an LLM"):
        build_stages("cascade", judge="nli")
