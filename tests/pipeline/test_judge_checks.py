"""The sanity checks on a judge's own output (pipeline/judge_checks.py), on hand-made verdicts."""

from hallumeasure.core.judge_checks import JudgeCheckName
from hallumeasure.core.types import ClaimVerdict, Evidence, ResponseResult
from hallumeasure.pipeline.judge_checks import MIN_CLAIMS, PROBE_CLAIMS, ContextProbe, check_judge, probe_claims

LLM = "anthropic:claude-haiku-4-5"


def _results(verdicts):
    return [ResponseResult(sample_id="s", verdicts=list(verdicts))]


def _verdict(i, label="absent", reason=None, judge=LLM, **fields):
    reason = reason or f"claim {i} is not covered"
    return ClaimVerdict(claim_id=f"s:c{i}", label=label, label_reason=reason, judge=judge, **fields)


def _names(verdicts):
    return [c.name for c in check_judge(_results(verdicts))]


def test_one_label_other_than_supported_for_nearly_every_claim_fails():
    mixed = [_verdict(i) for i in range(MIN_CLAIMS - 1)] + [_verdict(99, "contradicted")]
    assert _names(mixed) == [JudgeCheckName.ONE_LABEL]
    [check] = check_judge(_results(mixed))
    assert (check.count, check.total) == (MIN_CLAIMS - 1, MIN_CLAIMS) and "19 of 20 (95%)" in check.seen
    assert _names([_verdict(i) for i in range(MIN_CLAIMS - 1)]) == []  # too few claims to tell
    assert _names([_verdict(i) for i in range(17)] + [_verdict(i, "contradicted") for i in range(3)]) == []


def test_a_faithful_run_supported_throughout_and_a_keyless_judge_raise_nothing():
    assert _names([_verdict(i, "supported") for i in range(40)]) == []
    same = [_verdict(i, reason="every content word of the claim is in passage 1", judge="offline") for i in range(40)]
    assert _names(same) == []


def test_reasons_copied_from_the_prompt_example_fail_but_generic_ones_do_not():
    copied = "Ana Ruiz said numbers would probably double; the claim drops the speaker and hedge"  # near-equal
    verdicts = [_verdict(i, "partially_supported", reason=copied if i < 3 else None) for i in range(10)]
    assert _names(verdicts) == [JudgeCheckName.COPIED_REASONS]
    generic = "The claim brings in a person who is not in the context."
    assert _names([_verdict(i, reason=generic, judge="offline") for i in range(10)]) == []


def test_one_reason_for_most_claims_fails():
    verdicts = [_verdict(i, "supported" if i % 2 else "absent", reason="It is fine.") for i in range(30)]
    assert _names(verdicts) == [JudgeCheckName.SAME_REASON]


def test_evidence_that_never_verifies_fails():
    quote = (Evidence(passage_id="1", quote="nowhere"),)
    bad = [_verdict(i, "supported", evidence=quote, evidence_verified=False) for i in range(10)]
    assert _names(bad) == [JudgeCheckName.UNVERIFIED_EVIDENCE]
    half = bad[:5] + [_verdict(i, "supported", evidence=quote, evidence_verified=True) for i in range(5)]
    assert _names(half) == []


def test_labels_kept_without_the_source_fail_the_context_probe():
    verdicts = [_verdict(i, "supported" if i % 2 else "contradicted") for i in range(6)]
    ids = [v.claim_id for v in verdicts]
    kept = ContextProbe(claims=ids, same=6)
    assert [c.name for c in check_judge(_results(verdicts), kept)] == [JudgeCheckName.CONTEXT_IGNORED]
    assert check_judge(_results(verdicts), ContextProbe(claims=ids, same=2)) == []  # labels changed: it reads
    assert check_judge(_results(verdicts), ContextProbe(claims=ids[:3], same=3)) == []  # too few to tell
    assert check_judge(_results(verdicts), ContextProbe(claims=ids, same=3, errors=3)) == []  # errors left out


def test_the_probe_asks_a_few_llm_claims_whose_label_needs_the_source():
    from hallumeasure.core.types import Claim

    claims = [Claim(id=f"s:c{i}", sample_id="s", index=i, text=f"claim {i}") for i in range(6)]
    labels = ["supported", "absent", "contradicted", "partially_supported", "unevaluatable", "supported"]
    verdicts = [_verdict(i, label) for i, label in enumerate(labels)]
    results = [ResponseResult(sample_id=f"s{k}", claims=claims, verdicts=verdicts) for k in range(10)]
    chosen = probe_claims(results)
    asked = [c for _, cs, _ in chosen for c in cs]
    assert len(asked) == PROBE_CLAIMS and all(len(cs) <= 2 for _, cs, _ in chosen)
    assert {v.label.value for _, _, vs in chosen for v in vs} <= {"supported", "contradicted", "partially_supported"}
    offline = [_verdict(i, label, judge="offline") for i, label in enumerate(labels)]
    assert probe_claims([ResponseResult(sample_id="s", claims=claims, verdicts=offline)]) == []
