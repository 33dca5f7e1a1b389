"""The comparison report: escaping, pairing, refusing mismatched runs, files written."""

import json
import re

import pytest
from report.helpers import XSS_PAYLOADS, assert_escaped, sample, write_run
from testdata import EXAMPLES

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Label, Policy
from hallumeasure.core.types import Mode
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.report.compare import compare_runs
from hallumeasure.report.runs import load_runs
from hallumeasure.report.viewer import build_viewer_data
from hallumeasure.runs.inputs import key_samples, load_samples

SCRIPT, IMG = XSS_PAYLOADS


def _plain_run(path, model, unsupported_every=3, n=6, **kwargs):
    rows = []
    for i in range(n):
        bad = ("contradicted", "number", "42 is not 24") if i % unsupported_every == 0 else "supported"
        rows.append((sample(i, model), [("The bridge is 42 km long.", bad), ("It opened in 2019.", "supported")]))
    return write_run(path, rows, **kwargs)


def test_untrusted_text_is_escaped_in_html_and_markdown(tmp_path):
    hostile = sample(
        1,
        "model-x",
        context=f"The bridge is 24 km long. {SCRIPT} It opened in 2019 {IMG}.",
        response=f"The bridge is 42 km long {SCRIPT}. It opened in 2019 {IMG}.",
        question=f"What about {IMG}?",
    )
    rows = [
        (
            hostile,
            [
                (f"The bridge is 42 km long {SCRIPT}.", ("contradicted", "number", f"wrong {IMG} {SCRIPT}")),
                (f"It opened in 2019 {IMG}.", ("absent", "other", f"no {SCRIPT}")),
            ],
        )
    ]
    run = write_run(tmp_path / "hostile", rows)
    report = compare_runs([run], tmp_path / "out", resamples=200)
    page = (tmp_path / "out" / "report.html").read_text()
    assert_escaped(page)
    # The payload text is shown (escaped) in the worst-example section, with the claim and reason.
    assert "worst examples" in page.lower() and "wrong " in page
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "<script" not in markdown.lower() and "<img" not in markdown.lower()
    assert "&lt;script&gt;" in markdown
    assert report.model_stats[0].name == "model-x"


def test_hostile_model_and_run_names_are_escaped(tmp_path):
    run = _plain_run(tmp_path / "run", model=SCRIPT)
    compare_runs([run], tmp_path / "out", resamples=200)
    assert_escaped((tmp_path / "out" / "report.html").read_text(), [SCRIPT])


def test_models_in_one_run_are_paired_on_context_and_question(tmp_path):
    samples = load_samples(EXAMPLES).samples
    model = Model(FakeAPI())
    run_measurement(
        samples,
        tmp_path / "examples",
        LLMExtractor(model),
        LLMJudge(model, Mode.COT_ONE),
        mode=Mode.COT_ONE,
        input_sha256="x" * 64,
    )
    report = compare_runs([tmp_path / "examples"], tmp_path / "out", resamples=300, seed=3)
    assert [s.name for s in report.model_stats] == ["model-a", "model-b"]
    (comparison,) = report.comparisons
    assert comparison.paired and comparison.n_shared == 8 and comparison.pairing == "same context and question"
    assert comparison.unsupported_rate.p_value is not None
    out = tmp_path / "out"
    for name in (
        "report.md",
        "report.html",
        "report.json",
        "unsupported_rate.png",
        "hallucinated_share.png",
        "label_mix.png",
        "subtype_mix.png",
        "differences.png",
    ):
        assert (out / name).stat().st_size > 0, name
    markdown = (out / "report.md").read_text()
    assert "| model-a | model-b | same context and question | 8 |" in markdown
    assert "scripted fake model" in markdown
    # The policy is printed once, after the plain-words summary that opens the report.
    assert markdown.count(Policy().describe().replace("_", "\\_")) == 1
    assert markdown.index("## Summary") < markdown.index("Policy:") < markdown.index("## Statistics")
    assert (out / "view.html").is_file() and "[view.html](view.html)" in markdown
    page = (out / "report.html").read_text()
    assert re.findall(r'<img src="([^"]+)"', page) and all(
        src.startswith("data:image/png;base64,") for src in re.findall(r'<img src="([^"]+)"', page)
    )
    assert "<mark>" in page  # worst examples show the aligned source sentence
    assert json.loads((out / "report.json").read_text())["comparisons"][0]["n_shared"] == 8


def test_two_runs_pair_on_sample_id_and_name_models_by_run_when_needed(tmp_path):
    base = _plain_run(tmp_path / "base", model="m", unsupported_every=3)
    cur = _plain_run(tmp_path / "cur", model="m", unsupported_every=1)
    report = compare_runs([base, cur], tmp_path / "out", resamples=300)
    assert [s.name for s in report.model_stats] == ["m (base)", "m (cur)"]
    (c,) = report.comparisons
    assert c.paired and c.pairing == "same sample id" and c.n_shared == 6
    assert c.unsupported_rate.diff.value == pytest.approx(0.5 - 1 / 6, abs=1e-6)


def test_runs_without_shared_samples_are_compared_as_independent_groups(tmp_path):
    a = _plain_run(tmp_path / "a", model="m1")
    rows = [(sample(100 + i, "m2"), [("The bridge is 24 km long.", "supported")]) for i in range(5)]
    b = write_run(tmp_path / "b", rows)
    (c,) = compare_runs([a, b], tmp_path / "out", resamples=300).comparisons
    assert not c.paired and c.n_shared == 0 and c.unsupported_rate.n_pairs == 0
    assert "independent" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"judge": "other-judge"}, "judge"),
        ({"mode": Mode.NOCOT_ALL}, "mode"),
        ({"prompts": {"classify_cot_one.v1": "b" * 64}}, "prompts"),
        ({"policy": Policy(unsupported_labels=frozenset({Label.CONTRADICTED}))}, "policy"),
    ],
)
def test_runs_measured_differently_are_refused_unless_allowed(tmp_path, change, field):
    a = _plain_run(tmp_path / "a", model="m1")
    b = _plain_run(tmp_path / "b", model="m2", **change)
    with pytest.raises(ConfigError, match=rf"differ in {field}.*--allow-mismatch"):
        compare_runs([a, b], tmp_path / "out")
    report = compare_runs([a, b], tmp_path / "out", allow_mismatch=True, resamples=200)
    assert any(field in m for m in report.mismatches)
    assert "WARNING" in (tmp_path / "out" / "report.md").read_text()
    page = (tmp_path / "out" / "report.html").read_text()
    assert 'class="banner"' in page and "not directly comparable" in page


def test_error_rows_count_in_the_report(tmp_path):
    rows = [(sample(i, "m"), [("The bridge is 24 km long.", "supported"), ("It opened.", "error")]) for i in range(4)]
    run = write_run(tmp_path / "r", rows, failed={"s3": "extraction failed"})
    (stats,) = compare_runs([run], tmp_path / "out", resamples=200).model_stats
    assert stats.n_error_rows == 3 + 1  # three claim error rows and one failed sample
    assert stats.error_share.value == pytest.approx(4 / (6 + 1))


def _two_model_run(path, first=0, **kwargs):
    rows = []
    for i in range(first, first + 6):
        for model in ("m1", "m2"):
            bad = ("contradicted", "number", "42 is not 24") if (i + (model == "m2")) % 2 else "supported"
            rows.append((sample(i, model, id=f"s{i}-{model}"), [("The bridge is 42 km long.", bad)]))
    return write_run(path, rows, **kwargs)


def test_same_samples_under_other_detectors_compare_without_the_flag(tmp_path):
    # The README's use: the claim judge, CoNLI and the cascade side by side on the same samples.
    claims = _two_model_run(tmp_path / "claims")
    conli = _two_model_run(tmp_path / "conli", detector="conli", extractor="sentences")
    cascade = _two_model_run(
        tmp_path / "cascade", detector="cascade", judge="test-judge+llm", prompts={"cascade_explain.v1": "c" * 64}
    )
    report = compare_runs([claims, conli, cascade], tmp_path / "out", resamples=200)
    assert report.mismatches == []
    names = [s.name for s in report.model_stats]
    assert "m1 (conli: detector conli, judge test-judge)" in names
    assert "m2 (cascade: detector cascade, judge test-judge+llm)" in names
    # Each comparison is against the baseline (the first group) and varies one thing: the model
    # within a run, or the detector for one model; the groups that differ in both are named in a note.
    pairs = {(c.a, c.b) for c in report.comparisons}
    assert len(pairs) == 3 and {a for a, _ in pairs} == {report.baseline}
    assert sum("not compared with the baseline" in n for n in report.notes) == 2
    assert all(a.split(" (")[0] == b.split(" (")[0] or a.split(": ")[1] == b.split(": ")[1] for a, b in pairs)
    assert "WARNING" not in (tmp_path / "out" / "report.md").read_text()


def test_other_samples_under_another_detector_are_refused(tmp_path):
    claims = _two_model_run(tmp_path / "claims")
    conli = _two_model_run(tmp_path / "conli", first=100, detector="conli")
    with pytest.raises(ConfigError, match=r"differ in detector.*inputs differ") as refused:
        compare_runs([claims, conli], tmp_path / "out")
    message = str(refused.value)
    assert "--allow-mismatch" in message and "allow_mismatch" not in message
    assert compare_runs([claims, conli], tmp_path / "out", allow_mismatch=True, resamples=200).mismatches


def test_same_samples_under_another_policy_are_refused(tmp_path):
    strict = Policy(unsupported_labels=frozenset({Label.CONTRADICTED}))
    with pytest.raises(ConfigError, match="differ in policy"):
        compare_runs([_two_model_run(tmp_path / "a"), _two_model_run(tmp_path / "b", policy=strict)], tmp_path / "out")


def test_the_page_shows_the_report_numbers_as_the_viewer_computes_them(tmp_path):
    """compare hands the models' numbers it computed to its page instead of bootstrapping again: at the page's
    resamples, seed and confidence they are the numbers the viewer gives the same runs by itself."""
    base = _plain_run(tmp_path / "base", model=None, unsupported_every=2)
    samples = key_samples([sample(i, model) for i in range(6) for model in ("m1", "m2")])
    bad = ("contradicted", "number", "42 is not 24")
    rows = [(s, [("The bridge is 42 km long.", bad if n % 3 else "supported")]) for n, s in enumerate(samples)]
    cur = write_run(tmp_path / "cur", rows)
    report = compare_runs([base, cur], tmp_path / "out")
    page = (tmp_path / "out" / "view.html").read_text(encoding="utf-8")
    block = re.search(r'<script type="application/json" id="viewer-data">(.*?)</script>', page, re.S)
    assert block is not None
    shown = [run["models"] for run in json.loads(block.group(1))["runs"]]
    own = [[m.model_dump(mode="json") for m in run.models] for run in build_viewer_data(load_runs([base, cur])).runs]
    assert shown == own
    assert [[m["name"] for m in models] for models in shown] == [["base"], ["m1", "m2"]]
    rates = {s.name: s.mean_unsupported_rate.value for s in report.model_stats}
    assert [m["rate"]["value"] for m in shown[1]] == [rates["m1"], rates["m2"]]
