"""Regression audit: exit codes 0 / 1 / 3, usage errors, gates, JUnit and Markdown outputs."""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from report.helpers import sample, write_run

from hallumeasure.core.errors import ConfigError, RunStoreError
from hallumeasure.core.labels import Policy
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
    gates = AuditGates(subtype_shift=True)
    result = audit_runs(base, cur, gates, out_dir=tmp_path / "out", resamples=300)
    assert result.exit_code == 1 and result.status == "regression"
    assert result.decided_by == ["unsupported_rate", "subtype_shift"]
    assert result.headline.startswith("REGRESSION (exit code 1), decided by unsupported_rate, subtype_shift")
    assert result.comparison.paired and result.comparison.n_shared == N
    assert result.comparison.unsupported_rate.diff.value == pytest.approx(0.25)
    assert _gates(result)["unsupported_rate"] == "fail"
    assert _gates(result)["subtype_shift"] == "fail"  # number errors doubled in every sample

    suite = ET.parse(tmp_path / "out" / "audit.junit.xml").getroot().find("testsuite")
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"sample_count", "error_rows", "unsupported_rate", "hallucinated_share", "subtype_shift"}
    assert cases["unsupported_rate"].find("failure") is not None
    assert cases["sample_count"].find("failure") is None
    # every response is flagged in both runs: no discordant pair, and 30 cannot rule out a rise of 0.05
    assert cases["hallucinated_share"].find("failure").get("type") == "inconclusive"
    assert suite.get("failures") == "3" and suite.get("tests") == "5"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["decided_by"] == "unsupported_rate, subtype_shift"
    saved = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert saved["exit_code"] == 1 and saved["status"] == "regression"
    assert "REGRESSION (exit code 1)" in (tmp_path / "out" / "audit.md").read_text()


def test_the_margin_decides_whether_a_significant_rise_fails(tmp_path):
    base = _run(tmp_path / "base", unsupported=1, n=150)
    cur = _run(tmp_path / "cur", unsupported=2, n=150)
    lenient = AuditGates(max_rate_rise=0.3, max_hallucinated_share_rise=None)
    assert audit_runs(base, cur, lenient, resamples=300).exit_code == 0
    strict = AuditGates(max_rate_rise=0.2, max_hallucinated_share_rise=None)
    assert audit_runs(base, cur, strict, resamples=300).exit_code == 1


def test_a_rise_on_three_pairs_is_inconclusive(tmp_path):
    base = _run(tmp_path / "base", unsupported=1, n=3)
    cur = _run(tmp_path / "cur", unsupported=2, n=3)
    # Three identical differences: a t interval has zero width; a bound valid at every n cannot be that sure.
    result = audit_runs(base, cur, AuditGates(min_samples=3), resamples=300)
    assert result.exit_code == 4 and result.status == "inconclusive"
    assert _gates(result)["unsupported_rate"] == "inconclusive"
    assert result.headline.startswith(
        "INCONCLUSIVE (exit code 4), decided by unsupported_rate, hallucinated_share: mean unsupported rate +0.250"
    )


def test_equal_runs_pass_once_n_bounds_the_rise(tmp_path):
    base = _run(tmp_path / "base", unsupported=1, n=200)
    cur = _run(tmp_path / "cur", unsupported=1, n=200)
    result = audit_runs(base, cur, AuditGates(subtype_shift=True), out_dir=tmp_path / "out", resamples=300)
    assert result.exit_code == 0 and result.status == "pass"
    assert set(_gates(result).values()) == {"pass"}
    assert result.headline.startswith(
        "PASS (exit code 0), decided by sample_count, error_rows, unsupported_rate, hallucinated_share, subtype_shift"
    )
    suite = ET.parse(tmp_path / "out" / "audit.junit.xml").getroot().find("testsuite")
    assert suite.get("failures") == "0" and not list(suite.iter("failure"))


def test_too_many_error_rows_is_incomplete_even_when_worse(tmp_path):
    base = _run(tmp_path / "base", unsupported=1)
    cur = _run(tmp_path / "cur", unsupported=2, errors=1)  # a quarter of the claims have no verdict
    result = audit_runs(base, cur, AuditGates(max_error_share=0.1), out_dir=tmp_path / "out", resamples=300)
    assert result.exit_code == 3 and result.status == "incomplete"
    assert _gates(result)["error_rows"] == "fail"
    assert "re-run or resume" in next(g.message for g in result.gates if g.name == "error_rows")
    # the headline gives the reason
    assert result.headline == (
        "INCOMPLETE (exit code 3), decided by error_rows: too many error rows in the current run "
        "(current 0.250 > 0.100); re-run or resume the measurement first"
    )
    # With a higher tolerance the same runs are judged, and found worse.
    assert audit_runs(base, cur, AuditGates(max_error_share=0.3, max_rate_rise=0.1), resamples=300).exit_code == 1


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


def test_runs_measured_differently_are_refused_naming_each_flag(tmp_path):
    base = _run(tmp_path / "base", unsupported=1)
    cur = _run(tmp_path / "cur", unsupported=3, judge="another-judge", prompts={"classify_cot_one.v2": "b" * 64})
    with pytest.raises(ConfigError) as refused:
        audit_runs(base, cur)
    message = str(refused.value)
    assert "judge differs (baseline base: test-judge; current cur: another-judge) (--allow-judge-change)" in message
    assert "prompts differs" in message and "(--allow-prompt-change)" in message
    assert "allow_changes" not in message  # the CLI's flags, not the Python parameter
    with pytest.raises(ConfigError, match="prompts"):
        audit_runs(base, cur, allow_changes={"judge"})
    allowed = audit_runs(base, cur, allow_changes={"judge", "prompts"}, out_dir=tmp_path / "out", resamples=300)
    assert allowed.exit_code == 1 and any("judge differs" in m for m in allowed.mismatches)
    assert "WARNING" in (tmp_path / "out" / "audit.md").read_text()
    policy = _run(tmp_path / "p", unsupported=1, policy=Policy(unsupported_labels=["contradicted"]))
    with pytest.raises(ConfigError, match="--allow-policy-change"):
        audit_runs(base, policy)
    with pytest.raises(ConfigError, match="unknown changes to allow: jduge"):
        audit_runs(base, cur, allow_changes={"jduge"})
    with pytest.raises(RunStoreError):
        audit_runs(base, tmp_path / "missing")


def test_runs_over_other_samples_are_refused_unless_allowed_and_then_said_independent(tmp_path):
    base = _run(tmp_path / "base", unsupported=1, n=6)
    rows = [
        (sample(i, "m", id=f"o{i}", context=f"Another text {i} with the number {i}."), [("A claim.", "supported")])
        for i in range(6)
    ]
    other = write_run(tmp_path / "other", rows)
    with pytest.raises(ConfigError, match=r"share no samples \(6 in the baseline, 6 in the current run\) \(--allow"):
        audit_runs(base, other)
    result = audit_runs(base, other, allow_mismatch=True, resamples=300)
    assert not result.comparison.paired
    assert "independent groups, not paired: the runs share no samples" in result.headline
    partial = _run(tmp_path / "partial", unsupported=1, n=10)
    with pytest.raises(ConfigError, match="share 6 samples; 0 are only in the baseline and 4 only in the current"):
        audit_runs(base, partial)
    assert "paired over the 6 shared samples only" in audit_runs(base, partial, allow_mismatch=True).headline


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
    n = 240
    base = _mixed_run(tmp_path / "base", [0, 1, 0, 1], n=n)
    cur = _mixed_run(tmp_path / "cur", [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1], n=n)  # 2 in 15 worse by 0.25
    gates = AuditGates(max_rate_rise=0.1, max_hallucinated_share_rise=None)
    lenient = audit_runs(base, cur, gates, resamples=300)
    d = lenient.gates[2].decision
    pattern_b, pattern_c = [0, 1, 0, 1], [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1]
    rise = np.mean([(pattern_c[i % 15] - pattern_b[i % 4]) / 4 for i in range(n)])
    assert d.difference == pytest.approx(rise, abs=1e-6) and d.upper_bound <= 0.1
    assert lenient.status == "pass"
    # 64 samples worse and 56 better: no rise above 0 is shown either, so still a pass.
    strict = audit_runs(base, cur, gates.model_copy(update={"fail_on_any_significant_rise": True}), resamples=300)
    assert strict.status == "pass" and strict.gates[2].decision.regression_above == 0.0
    # Every sample worse by 0.25: within a 0.3 margin, but shown above 0.
    base, cur = _run(tmp_path / "b2", unsupported=1, n=150), _run(tmp_path / "c2", unsupported=2, n=150)
    wide = AuditGates(max_rate_rise=0.3, max_hallucinated_share_rise=None)
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
    # What would decide comes from the betting bound itself: at that many samples shaped like these, it decides.
    from hallumeasure.stats.intervals import betting_rejects

    assert d.samples_needed > 12 and d.margin < d.min_detectable_rise < 1
    diffs = np.array([[1, 1, 2, 1, 0, 2][i % 6] - [0, 1, 2, 0][i % 4] for i in range(12)]) / 4
    shape = np.resize(diffs - diffs.mean(), d.samples_needed)
    assert betting_rejects(-(shape + d.difference), -d.margin, 0.05)  # at the observed rise, that n shows it
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


def test_hallucinated_share_uses_exact_discordant_bounds_and_can_regress(tmp_path):
    base = _mixed_run(tmp_path / "base", [0, 0, 0, 1])
    cur = _mixed_run(tmp_path / "cur", [1, 1, 0, 1])
    result = audit_runs(base, cur, AuditGates(max_rate_rise=1.0, max_hallucinated_share_rise=0.1), resamples=300)
    share = next(g for g in result.gates if g.name == "hallucinated_share")
    assert share.status == "fail" and "Clopper-Pearson" in share.decision.method
    assert result.decided_by == ["hallucinated_share"]
    assert result.headline.startswith(
        "REGRESSION (exit code 1), decided by hallucinated_share: hallucinated share rose"
    )
    from hallumeasure.stats.intervals import discordant_bounds

    flags_a = np.array([0, 0, 0, 1] * 8, dtype=float)[:N]
    flags_b = np.array([1, 1, 0, 1] * 8, dtype=float)[:N]
    b, c = int(np.sum((flags_a == 1) & (flags_b == 0))), int(np.sum((flags_a == 0) & (flags_b == 1)))
    _, low, high = discordant_bounds(b, c, N, 0.05)
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

    base, cur = _run(tmp_path / "base", unsupported=1, n=200), _run(tmp_path / "cur", unsupported=1, n=200)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["audit", "--baseline", str(base), "--current", str(cur), "--resamples", "200"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("audit: PASS (exit code 0)")
    assert (tmp_path / "runs" / "audit" / "base__cur" / "audit.json").is_file()
