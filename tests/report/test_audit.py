"""Regression audit: exit codes 0 / 1 / 3, usage errors, gates, JUnit and Markdown outputs."""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from report.helpers import sample, write_run

from hallumeasure.core.errors import ConfigError, RunStoreError
from hallumeasure.report.audit import AuditGates, audit_runs, write_usage_error

N = 30


def _run(path, unsupported: int, *, errors: int = 0, n: int = N, model: str = "m", **kwargs):
    """Every sample gets four claims: ``unsupported`` contradicted, ``errors`` error rows, the rest supported."""
    specs = [("contradicted", "number")] * unsupported + ["error"] * errors
    specs += ["supported"] * (4 - len(specs))
    rows = [
        (sample(i, model), [(f"Claim {j} about bridge {i}.", spec) for j, spec in enumerate(specs)]) for i in range(n)
    ]
    return write_run(path, rows, **kwargs)


def _gates(result):
    return {g.name: g.status for g in result.gates}


def test_a_worse_current_run_is_a_regression(tmp_path):
    base = _run(tmp_path / "base", unsupported=1)  # rate 0.25
    cur = _run(tmp_path / "cur", unsupported=2)  # rate 0.50: worse by 0.25
    result = audit_runs(base, cur, AuditGates(), out_dir=tmp_path / "out", resamples=300)
    assert result.exit_code == 1 and result.status == "regression"
    assert result.comparison.paired and result.comparison.n_shared == N
    assert result.comparison.unsupported_rate.diff.value == pytest.approx(0.25)
    assert _gates(result)["unsupported_rate"] == "fail"
    assert _gates(result)["subtype_shift"] == "fail"  # number errors doubled in every sample

    suite = ET.parse(tmp_path / "out" / "audit.junit.xml").getroot().find("testsuite")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"sample_count", "error_rows", "unsupported_rate", "hallucinated_share", "subtype_shift"}
    assert cases["unsupported_rate"].find("failure") is not None
    assert cases["sample_count"].find("failure") is None
    assert cases["hallucinated_share"].find("skipped") is not None
    assert suite.get("failures") == "2" and suite.get("tests") == "5"
    saved = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert saved["exit_code"] == 1 and saved["status"] == "regression"
    assert "REGRESSION (exit code 1)" in (tmp_path / "out" / "audit.md").read_text()


def test_the_margin_decides_whether_a_significant_rise_fails(tmp_path):
    base = _run(tmp_path / "base", unsupported=1)
    cur = _run(tmp_path / "cur", unsupported=2)
    lenient = AuditGates(max_rate_rise=0.3, subtype_shift=False)
    assert audit_runs(base, cur, lenient, resamples=300).exit_code == 0
    strict = AuditGates(max_rate_rise=0.2, subtype_shift=False)
    assert audit_runs(base, cur, strict, resamples=300).exit_code == 1


def test_a_rise_on_three_pairs_is_inconclusive(tmp_path):
    base = _run(tmp_path / "base", unsupported=1, n=3)
    cur = _run(tmp_path / "cur", unsupported=2, n=3)
    # Three identical differences: a t interval has zero width, but the exact sign-flip test cannot reach
    # one-sided p < 0.05 with three pairs (smallest p 1/8), so nothing is shown either way.
    result = audit_runs(base, cur, AuditGates(min_samples=3, subtype_shift=False), resamples=300)
    assert result.exit_code == 4 and result.status == "inconclusive"
    assert _gates(result)["unsupported_rate"] == "inconclusive"
    assert result.headline.startswith("INCONCLUSIVE (exit code 4): mean unsupported rate +0.250")


def test_equal_runs_pass(tmp_path):
    base = _run(tmp_path / "base", unsupported=1)
    cur = _run(tmp_path / "cur", unsupported=1)
    result = audit_runs(
        base, cur, AuditGates(max_hallucinated_share_rise=0.15), out_dir=tmp_path / "out", resamples=300
    )
    assert result.exit_code == 0 and result.status == "pass"
    assert set(_gates(result).values()) == {"pass"}
    suite = ET.parse(tmp_path / "out" / "audit.junit.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0" and not list(suite.iter("failure"))


def test_too_many_error_rows_is_incomplete_even_when_worse(tmp_path):
    base = _run(tmp_path / "base", unsupported=1)
    cur = _run(tmp_path / "cur", unsupported=2, errors=1)  # a quarter of the claims have no verdict
    result = audit_runs(base, cur, AuditGates(max_error_share=0.1), out_dir=tmp_path / "out", resamples=300)
    assert result.exit_code == 3 and result.status == "incomplete"
    assert _gates(result)["error_rows"] == "fail"
    assert "re-run or resume" in next(g.message for g in result.gates if g.name == "error_rows")
    # With a higher tolerance the same runs are judged, and found worse.
    assert audit_runs(base, cur, AuditGates(max_error_share=0.3), resamples=300).exit_code == 1


def test_failed_samples_count_as_error_rows(tmp_path):
    base = _run(tmp_path / "base", unsupported=1)
    rows = [(sample(i, "m"), [("A claim.", "supported")]) for i in range(N)]
    cur = write_run(tmp_path / "cur", rows, failed={f"s{i}": "extraction failed" for i in range(10)})
    assert audit_runs(base, cur, resamples=300).exit_code == 3


def test_too_few_samples_is_inconclusive(tmp_path):
    base = _run(tmp_path / "base", unsupported=1, n=4)
    cur = _run(tmp_path / "cur", unsupported=1, n=4)
    result = audit_runs(base, cur, AuditGates(min_samples=5), resamples=300)
    assert result.exit_code == 4 and _gates(result)["sample_count"] == "inconclusive"


def test_other_responses_measured_differently_are_a_usage_error(tmp_path):
    base = _run(tmp_path / "base", unsupported=1)
    cur = _run(tmp_path / "cur", unsupported=1, judge="another-judge", model="other-model")
    with pytest.raises(ConfigError, match="judge") as refused:
        audit_runs(base, cur)
    # The message names the CLI flag, not the Python parameter.
    assert "--allow-mismatch" in str(refused.value) and "allow_mismatch" not in str(refused.value)
    allowed = audit_runs(base, cur, allow_mismatch=True, out_dir=tmp_path / "out", resamples=300)
    assert allowed.mismatches and "WARNING" in (tmp_path / "out" / "audit.md").read_text()
    with pytest.raises(RunStoreError):
        audit_runs(base, tmp_path / "missing")


def test_usage_error_is_recorded_for_ci(tmp_path):
    write_usage_error(tmp_path / "out", "runs differ in judge <b>")
    assert json.loads((tmp_path / "out" / "audit.json").read_text())["exit_code"] == 2
    suite = ET.parse(tmp_path / "out" / "audit.junit.xml").getroot().find("testsuite")
    assert suite.get("errors") == "1" and suite.find("testcase/error").get("message") == "runs differ in judge <b>"
    assert "&lt;b&gt;" in (tmp_path / "out" / "audit.md").read_text()


def test_models_can_be_picked_from_runs_holding_several(tmp_path):
    rows = [(sample(i, "old"), [("A claim.", "supported")]) for i in range(6)]
    rows += [(sample(i, "new", id=f"n{i}"), [("A claim.", ("absent", "other"))]) for i in range(6)]
    both = write_run(tmp_path / "both", rows)
    result = audit_runs(
        both, both, AuditGates(subtype_shift=False), baseline_model="old", current_model="new", resamples=300
    )
    assert result.exit_code == 1 and result.comparison.pairing == "same context and question"
    with pytest.raises(ConfigError, match="no responses of model 'nope'"):
        audit_runs(both, both, baseline_model="nope")


def test_same_responses_under_another_judge_are_audited(tmp_path):
    # A judge change audited on unchanged responses: the judge is what is compared, not a mismatch.
    base = _run(tmp_path / "base", unsupported=1)
    cur = _run(tmp_path / "cur", unsupported=3, judge="another-judge")
    result = audit_runs(base, cur, resamples=300)
    assert result.mismatches == [] and result.exit_code == 1


# --- three outcomes -----------------------------------------------------------------------------------


def _mixed_run(path, unsupported: list[int], n: int = N):
    """Sample i gets ``unsupported[i % len]`` contradicted claims out of four."""
    rows = []
    for i in range(n):
        bad = unsupported[i % len(unsupported)]
        specs = [("contradicted", "number")] * bad + ["supported"] * (4 - bad)
        rows.append((sample(i, "m"), [(f"Claim {j} about bridge {i}.", spec) for j, spec in enumerate(specs)]))
    return write_run(path, rows)


def test_a_small_shown_rise_passes_the_margin_but_fails_on_any_significant_rise(tmp_path):
    base = _mixed_run(tmp_path / "base", [0, 1, 0, 1])
    cur = _mixed_run(tmp_path / "cur", [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1])  # 2 of 30 samples worse by 0.25
    gates = AuditGates(max_rate_rise=0.1, subtype_shift=False)
    lenient = audit_runs(base, cur, gates, resamples=300)
    d = lenient.gates[2].decision
    pattern_b, pattern_c = [0, 1, 0, 1], [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1]
    rise = np.mean([(pattern_c[i % 15] - pattern_b[i % 4]) / 4 for i in range(N)])
    assert d.difference == pytest.approx(rise, abs=1e-6) and d.upper_bound <= 0.1
    assert lenient.status == "pass"
    strict = audit_runs(base, cur, gates.model_copy(update={"fail_on_any_significant_rise": True}), resamples=300)
    # Two worse samples out of 30 do not show a rise above 0 either: still a pass.
    assert strict.status == "pass" and strict.gates[2].decision.regression_above == 0.0
    # Every sample worse by 0.25: within a 0.3 margin, but shown above 0.
    base, cur = _run(tmp_path / "b2", unsupported=1), _run(tmp_path / "c2", unsupported=2)
    wide = AuditGates(max_rate_rise=0.3, subtype_shift=False)
    assert audit_runs(base, cur, wide, resamples=300).status == "pass"
    flagged = audit_runs(base, cur, wide.model_copy(update={"fail_on_any_significant_rise": True}), resamples=300)
    assert flagged.status == "regression" and flagged.exit_code == 1


def test_inconclusive_decision_reports_what_would_decide(tmp_path):
    base = _mixed_run(tmp_path / "base", [0, 1, 2, 0], n=12)
    cur = _mixed_run(tmp_path / "cur", [1, 1, 2, 1, 0, 2], n=12)
    result = audit_runs(base, cur, AuditGates(subtype_shift=False), out_dir=tmp_path / "out", resamples=300)
    d = result.gates[2].decision
    assert result.status == "inconclusive" and result.exit_code == 4
    assert d.lower_bound <= d.margin < d.upper_bound
    # The numbers come from the power module: one-sided t power at the observed spread.
    from hallumeasure.report.power import detectable_effect, samples_needed

    assert d.min_detectable_rise == pytest.approx(d.margin + detectable_effect(12) * d.sd_difference, abs=1e-5)
    expected = samples_needed(abs(d.difference - d.margin) / d.sd_difference)  # from the rounded stored values
    assert abs(d.samples_needed - expected) <= 0.01 * expected
    first = (tmp_path / "out" / "audit.md").read_text().splitlines()[0]
    assert first.startswith("# Regression audit: INCONCLUSIVE (exit code 4)") and "minimum detectable rise" in first
    suite = ET.parse(tmp_path / "out" / "audit.junit.xml").getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["outcome"] == "inconclusive" and props["exit_code"] == "4"
    rate_case = next(c for c in suite.iter("testcase") if c.get("name") == "unsupported_rate")
    assert rate_case.find("failure").get("type") == "inconclusive"
    lenient = audit_runs(
        base, cur, AuditGates(subtype_shift=False, inconclusive="pass"), out_dir=tmp_path / "o2", resamples=300
    )
    assert lenient.exit_code == 0 and lenient.status == "inconclusive"
    suite = ET.parse(tmp_path / "o2" / "audit.junit.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0" and suite.find("testcase[@name='unsupported_rate']/skipped") is not None
    assert audit_runs(base, cur, AuditGates(subtype_shift=False, inconclusive="fail"), resamples=300).exit_code == 1


def test_audit_json_validates_against_its_schema(tmp_path):
    import jsonschema

    from hallumeasure.report.schemas import SCHEMA_DIR

    base, cur = _run(tmp_path / "base", unsupported=1), _run(tmp_path / "cur", unsupported=2)
    audit_runs(base, cur, AuditGates(max_hallucinated_share_rise=0.1), out_dir=tmp_path / "out", resamples=300)
    schema = json.loads((SCHEMA_DIR / "audit_result.schema.json").read_text())
    jsonschema.validate(json.loads((tmp_path / "out" / "audit.json").read_text()), schema)


def test_hallucinated_share_uses_newcombe_and_can_regress(tmp_path):
    base = _mixed_run(tmp_path / "base", [0, 0, 0, 1])
    cur = _mixed_run(tmp_path / "cur", [1, 1, 0, 1])
    result = audit_runs(
        base, cur, AuditGates(max_rate_rise=1.0, max_hallucinated_share_rise=0.1, subtype_shift=False), resamples=300
    )
    share = next(g for g in result.gates if g.name == "hallucinated_share")
    assert share.status == "fail" and "Newcombe" in share.decision.method
    from hallumeasure.report.intervals import paired_binary_interval

    flags_a = np.array([0, 0, 0, 1] * 8, dtype=float)[:N]
    flags_b = np.array([1, 1, 0, 1] * 8, dtype=float)[:N]
    _, low, high = paired_binary_interval(flags_a, flags_b, 0.90)
    assert (share.decision.lower_bound, share.decision.upper_bound) == pytest.approx((low, high), abs=1e-6)


def test_false_pass_rate_stays_below_alpha_in_a_small_simulation():
    """Known truth: the current run is worse by 0.04 > margin 0.02; passes must be rare (<= alpha)."""
    from hallumeasure.report.audit import decide_rise

    rng = np.random.default_rng(21)
    gates = AuditGates(max_rate_rise=0.02)
    passes, runs = 0, 400
    for _ in range(runs):
        k = 1 + rng.poisson(3, 60)
        u = rng.beta(0.4, 3.6, 60)
        base = rng.binomial(k, u) / k
        cur = rng.binomial(k, u + 0.04 * (1 - u) / 0.9) / k
        passes += (
            decide_rise("rate", base, cur, paired=True, binary=False, margin=0.02, gates=gates, plan=False).outcome
            == "pass"
        )
    assert passes / runs <= 0.05


def test_cli_audit_writes_to_a_default_directory(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from hallumeasure.cli import app

    base, cur = _run(tmp_path / "base", unsupported=1), _run(tmp_path / "cur", unsupported=1)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["audit", "--baseline", str(base), "--current", str(cur), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("audit: PASS (exit code 0)")
    assert (tmp_path / "runs" / "audit" / "base__cur" / "audit.json").is_file()
