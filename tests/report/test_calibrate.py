"""calibrate: labels files, confusion matrices, kappa, sensitivity/specificity, corrected rates, the template.

References: kappa -> sklearn.metrics.cohen_kappa_score on the same label lists; sensitivity and
specificity intervals -> statsmodels proportion_confint(method="wilson"). Outputs validate against
schemas/calibration_report.schema.json.
"""

import csv
import json

import jsonschema
import numpy as np
import pytest
from report.helpers import sample, write_run
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint
from typer.testing import CliRunner

from hallumeasure.cli import app
from hallumeasure.core.errors import ConfigError
from hallumeasure.report.calibrate import calibrate, export_sample
from hallumeasure.report.schemas import SCHEMA_DIR
from hallumeasure.stats.correction import ppi_mean, stratified_ppi

# Judge verdicts per sample (3 claims each) and what people said about the same claims.
JUDGE = [
    ["supported", "supported", ("contradicted", "number")],
    ["supported", ("absent", "entity"), "supported"],
    ["supported", "supported", "supported"],
    [("contradicted", "number"), "supported", "unevaluatable"],
]
HUMAN = [
    [("supported", None), ("supported", None), ("contradicted", "number")],
    [("supported", None), ("supported", None), ("supported", None)],
    [("supported", None), ("absent", "entity"), ("supported", None)],
    [("contradicted", "temporal"), ("supported", None), ("unevaluatable", None)],
]


def _run(tmp_path, n_extra=0):
    rows = [
        (sample(i, "m" if i % 2 else "n"), [(f"Claim {j} of {i}.", spec) for j, spec in enumerate(specs)])
        for i, specs in enumerate(JUDGE)
    ]
    rows += [(sample(10 + i, "n"), [("Other claim.", "supported")]) for i in range(n_extra)]
    return write_run(tmp_path / "run", rows)


def _labels(tmp_path, rows, name="labels.csv"):
    path = tmp_path / name
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(
            handle, fieldnames=["sample_id", "claim_id", "claim", "label", "subtype", "hallucinated"]
        )
        writer.writeheader()
        writer.writerows(rows)
    return path


def _human_rows(by_text: bool = False):
    rows = []
    for i, claims in enumerate(HUMAN):
        for j, (label, subtype) in enumerate(claims):
            key = {"sample_id": f"s{i}", "claim": f"claim {j}  OF {i}."} if by_text else {"claim_id": f"s{i}:c{j}"}
            rows.append({**key, "label": label, "subtype": subtype or ""})
    return rows


def test_confusion_kappa_and_error_rates(tmp_path):
    run = _run(tmp_path)
    report = calibrate(run, _labels(tmp_path, _human_rows()))
    human = [label for claims in HUMAN for label, _ in claims]
    judge = [spec if isinstance(spec, str) else spec[0] for claims in JUDGE for spec in claims]
    assert report.n_claims_labelled == 12 and report.judge_errors == 0
    i = report.labels.index
    assert report.confusion[i("absent")][i("supported")] == 1 and report.confusion[i("supported")][i("absent")] == 1
    assert sum(map(sum, report.confusion)) == 12
    assert report.kappa_labels == pytest.approx(cohen_kappa_score(human, judge, labels=report.labels), abs=1e-6)
    # Unevaluatable is excluded by the default policy: 11 claims in the binary table.
    assert report.binary_confusion == {"tp": 2, "fp": 1, "fn": 1, "tn": 7}
    unsup = {"contradicted", "absent", "partially_supported"}
    keep = [k for k, h in enumerate(human) if h != "unevaluatable"]
    assert report.kappa_binary == pytest.approx(
        cohen_kappa_score([human[k] in unsup for k in keep], [judge[k] in unsup for k in keep]), abs=1e-6
    )
    assert (report.sensitivity.low, report.sensitivity.high) == pytest.approx(
        proportion_confint(2, 3, method="wilson"), abs=1e-6
    )
    assert (report.specificity.low, report.specificity.high) == pytest.approx(
        proportion_confint(7, 8, method="wilson"), abs=1e-6
    )
    agreement = {s.subtype: (s.agreement.k, s.agreement.n) for s in report.subtypes}
    assert agreement == {"number": (1, 1), "entity": (0, 1), "temporal": (0, 1)}


def test_claims_match_by_text_and_responses_by_flag(tmp_path):
    run = _run(tmp_path)
    rows = [*_human_rows(by_text=True), {"sample_id": "s9", "claim": "nope", "label": "supported"}]
    report = calibrate(run, _labels(tmp_path, rows))
    assert report.n_claims_labelled == 12 and report.n_unmatched == 1 and "'nope'" in report.unmatched[0]
    flags = calibrate(
        run,
        _labels(
            tmp_path,
            [{"sample_id": "s0", "hallucinated": "yes"}, {"sample_id": "s2", "hallucinated": "no"}],
            "flags.csv",
        ),
    )
    assert flags.n_claims_labelled == 0 and flags.n_responses_labelled == 2
    assert flags.response_sensitivity.k == 1 and flags.response_specificity.k == 1


def test_corrected_rates_are_stratified_ppi_over_the_fully_labelled_responses(tmp_path):
    run = _run(tmp_path, n_extra=6)
    report = calibrate(run, _labels(tmp_path, _human_rows()))
    rate = next(c for c in report.corrected if c.metric == "mean unsupported rate")
    human = np.array([1 / 3, 0.0, 1 / 3, 0.5])  # unevaluatable left out of the last one
    judge = np.array([1 / 3, 1 / 3, 0.0, 0.5])
    estimate, low, high = stratified_ppi(human, judge, np.zeros(6))
    assert rate.n_labelled == 4 and rate.n_unlabelled == 6
    assert (rate.ppi.value, rate.ppi.low, rate.ppi.high) == pytest.approx((estimate, low, high), abs=1e-6)
    assert rate.judge.value == pytest.approx((1 / 3 + 1 / 3 + 0.5) / 10, abs=1e-6)
    # Issue #25: the additive PPI interval here runs below zero; every reported number stays in [0, 1].
    assert ppi_mean(human, judge, np.zeros(6))[1] < 0
    for c in report.corrected:
        for e in (c.ppi, c.ppi_tuned, c.labels_only, c.rogan_gladen):
            assert all(0.0 <= v <= 1.0 for v in (e.value, e.low, e.high) if v is not None), (c.metric, e)
    # Four labels is far below the grid the coverage was simulated on: the report says so.
    assert not rate.coverage.checked and "not checked" in rate.coverage.message
    assert any("fewer than the 50" in note for note in report.notes)


def test_no_positive_label_still_gives_bounded_corrected_rates(tmp_path):
    rows = [
        (sample(i, "m"), [(f"Claim {i}.", ("absent", "entity") if i % 10 == 0 else "supported")]) for i in range(300)
    ]
    run = write_run(tmp_path / "run", rows)
    labels = [{"claim_id": f"s{i}:c0", "label": "supported"} for i in range(0, 300, 3)]  # 100, every one supported
    report = calibrate(run, _labels(tmp_path, labels))
    share = next(c for c in report.corrected if c.metric == "hallucinated share")
    assert share.n_labelled == 100 and report.response_sensitivity.n == 0
    for e in (share.ppi, share.labels_only, share.rogan_gladen):
        assert e.value is not None and 0.0 <= e.low <= e.value <= e.high <= 1.0, e
    # The judge flags 10% of the run; people found nothing in 100 labels: the corrected share is near 0.
    assert share.judge.value == pytest.approx(0.1) and share.ppi.high < 0.1
    assert share.coverage.checked  # sensitivity unknown: every sensitivity of the grid is consulted
    assert "sensitivity 0.7/0.85/0.95" in share.coverage.cells


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"claim_id": "s0:c0", "label": "wrong"}, "label 'wrong' is not one of supported"),
        ({"claim_id": "s0:c0", "label": "absent", "subtype": "bogus"}, "subtype 'bogus' is not one of number"),
        ({"sample_id": "s0", "hallucinated": "maybe"}, "yes/no"),
        ({"label": "absent"}, "needs claim_id, or sample_id and claim"),
    ],
)
def test_bad_label_rows_name_the_row_and_the_valid_values(tmp_path, row, message):
    with pytest.raises(ConfigError, match="row 2") as error:
        calibrate(_run(tmp_path), _labels(tmp_path, [row]))
    assert message in str(error.value)


def test_labels_that_match_nothing_are_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"no row of labels\.csv matches"):
        calibrate(_run(tmp_path), _labels(tmp_path, [{"claim_id": "x:c0", "label": "supported"}]))


def test_export_sample_is_stratified_and_hides_the_judge(tmp_path):
    rows = [
        (sample(i, "big" if i < 30 else "small"), [(f"Claim {j} of {i}.", "supported") for j in range(2)])
        for i in range(40)
    ]
    run = write_run(tmp_path / "run", rows)
    n, claims = export_sample(run, 8, tmp_path / "s.csv", seed=1)
    table = list(csv.DictReader((tmp_path / "s.csv").open()))
    assert (n, claims, len(table)) == (8, 16, 16)
    models = [r["model"] for r in table[::2]]
    assert models.count("big") == 6 and models.count("small") == 2  # proportional: 30/40 and 10/40 of 8
    assert "judge_label" not in table[0] and table[0]["label"] == ""
    export_sample(run, 8, tmp_path / "t.csv", seed=1, show_judge=True)
    shown = list(csv.DictReader((tmp_path / "t.csv").open()))
    assert shown[0]["judge_label"] == "supported" and [r["claim_id"] for r in shown] == [r["claim_id"] for r in table]
    export_sample(run, 8, tmp_path / "u.csv", seed=2)
    other = [r["sample_id"] for r in csv.DictReader((tmp_path / "u.csv").open())]
    assert other != [r["sample_id"] for r in table]  # the seed matters


def test_calibrate_command_json_validates_against_its_schema(tmp_path):
    run = _run(tmp_path)
    labels = _labels(tmp_path, _human_rows())
    result = CliRunner().invoke(app, ["calibrate", str(run), "--labels", str(labels), "--json"])
    assert result.exit_code == 0, result.output
    schema = json.loads((SCHEMA_DIR / "calibration_report.schema.json").read_text())
    jsonschema.validate(json.loads(result.output), schema)
    text = CliRunner().invoke(app, ["calibrate", str(run), "--labels", str(labels)])
    assert text.exit_code == 0 and "Cohen's kappa" in text.output and "Rogan-Gladen" in text.output
    assert "coverage not checked" in text.output  # four labelled responses: below the simulated grid
    both = CliRunner().invoke(app, ["calibrate", str(run)])
    assert both.exit_code == 2 and "--labels FILE" in both.output
    sample_out = tmp_path / "template.csv"
    made = CliRunner().invoke(app, ["calibrate", str(run), "--export-sample", "2", "--out", str(sample_out)])
    assert made.exit_code == 0 and sample_out.is_file() and "--labels" in made.output


def test_compare_with_labels_shows_corrected_rates(tmp_path):
    run = _run(tmp_path, n_extra=4)
    labels = _labels(tmp_path, _human_rows())
    result = CliRunner().invoke(
        app, ["compare", str(run), "--out", str(tmp_path / "out"), "--labels", str(labels), "--resamples", "200"]
    )
    assert result.exit_code == 0, result.output
    assert "corrected by labels.csv" in result.output
    md = (tmp_path / "out" / "report.md").read_text()
    assert "## Judge calibration against human labels" in md and "corrected (PPI)" in md
    assert "Judge calibration against human labels" in (tmp_path / "out" / "report.html").read_text()
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["calibrations"][0]["labels_file"] == "labels.csv"


def test_the_bundled_example_labels_parse(tmp_path):
    from testdata import REPO

    rows = list(csv.DictReader((REPO / "examples" / "labels.csv").open()))
    claims = [r for r in rows if r["label"]]
    assert len(claims) >= 20 and all(r["claim_id"].split(":")[0] == r["sample_id"] for r in claims)
    assert {r["hallucinated"] for r in rows if not r["label"]} == {"no"}


def test_labels_can_be_jsonl(tmp_path):
    run = _run(tmp_path)
    path = tmp_path / "labels.jsonl"
    rows = [
        {"claim_id": "s0:c2", "label": "contradicted", "subtype": "number"},
        {"response_id": "s2", "hallucinated": True},
        {"sample_id": "s1", "hallucinated": 0},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    report = calibrate(run, path)
    assert report.n_claims_labelled == 1 and report.n_responses_labelled == 2  # s0 is not labelled whole
    # People call s2 hallucinated (the judge does not) and s1 faithful (the judge flags it).
    assert (report.response_sensitivity.k, report.response_sensitivity.n) == (0, 1)
    assert (report.response_specificity.k, report.response_specificity.n) == (0, 1)
    # No response has all its claims labelled: no PPI for the rate, and no coverage note about it;
    # Rogan-Gladen still works from the one labelled claim's error rates.
    rate = next(c for c in report.corrected if c.metric == "mean unsupported rate")
    assert rate.n_labelled == 0 and rate.ppi.value is None and rate.rogan_gladen.value is not None
    assert not any(note.startswith("mean unsupported rate") for note in report.notes)
    path.write_text("{not json\n")
    with pytest.raises(ConfigError, match="line 1 is not JSON"):
        calibrate(run, path)
