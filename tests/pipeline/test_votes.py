"""Repeats and panels: how votes combine, how failures count, and that repeats are asked and cached apart."""

import asyncio

import pytest

from hallumeasure.core.errors import ConfigError, ProviderError
from hallumeasure.core.labels import Label, Policy, UnevaluatablePolicy
from hallumeasure.core.types import Mode, Sample, Vote
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.judges.votes import PanelRule, VotingJudge, combine_votes, plurality
from hallumeasure.models.cache import RequestCache
from hallumeasure.models.fake import FakeAPI, demo_responder, prompt_blocks
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import measure_samples, run_measurement
from hallumeasure.runs.run import load_run
from hallumeasure.runs.store import RunStore

POLICY = Policy()
SAMPLE = Sample(
    id="s1",
    context="The bridge is 24 km long. It opened in 2019.",
    response="The bridge is 24 km long. It opened in 2019.",
)


def votes(*labels, claim="c1"):
    """Votes on one claim in repeat order; None is a failed vote."""
    return [
        Vote(
            claim_id=claim,
            judge="j",
            repeat=k,
            label=label,
            subtype="other" if label in ("absent", "contradicted", "partially_supported") else None,
            error=None if label else "the judge timed out",
        )
        for k, label in enumerate(labels)
    ]


def decide(rule, *labels, policy=POLICY):
    verdict = combine_votes(votes(*labels), rule, policy, judge="panel")
    return verdict.label.value if verdict.ok else None


def test_majority_takes_the_most_votes_and_breaks_ties_towards_the_more_severe_label():
    assert decide("majority", "supported", "supported", "absent") == "supported"
    assert decide("majority", "supported", "absent") == "absent"
    assert decide("majority", "absent", "contradicted", "supported", "supported") == "supported"
    assert decide("majority", "absent", "contradicted") == "contradicted"
    assert decide("majority", "supported", "unevaluatable") == "unevaluatable"
    assert plurality({Label.SUPPORTED: 1, Label.PARTIALLY_SUPPORTED: 1}) is Label.PARTIALLY_SUPPORTED


def test_a_failed_vote_counts_as_one_that_could_go_any_way():
    # 2 of 3 agree: the failed third cannot overturn them.
    assert decide("majority", "supported", "supported", None) == "supported"
    # 1 against 1: the failed vote decides, so the claim is an error row, not a 2-vote majority.
    verdict = combine_votes(votes("supported", "absent", None), "majority", POLICY, judge="panel")
    assert not verdict.ok and "1 of 3 votes failed" in verdict.error and "timed out" in verdict.error
    # 2 supported against 1 absent and 1 failed: the failed vote could only tie, and a tie goes to absent.
    assert decide("majority", "supported", "supported", "absent", None) is None
    assert decide("majority", "supported", "supported", "supported", "absent", None) == "supported"
    verdict = combine_votes(votes(None, None), "majority", POLICY, judge="panel")
    assert not verdict.ok and verdict.error.startswith("all 2 votes failed")


def test_any_unsupported_and_unanimous_rules():
    assert decide("any-unsupported", "supported", "supported", "absent") == "absent"
    assert decide("any-unsupported", "supported", "contradicted", "absent", "absent") == "absent"
    assert decide("any-unsupported", "supported", "supported") == "supported"
    assert decide("any-unsupported", "supported", None) is None  # the failed vote might have said unsupported
    assert decide("any-unsupported", "absent", None) == "absent"
    assert decide("unanimous", "absent", "absent", "supported") == "supported"
    assert decide("unanimous", "absent", "contradicted", "contradicted") == "contradicted"
    assert decide("unanimous", "absent", None) is None
    assert decide("unanimous", "supported", None) == "supported"
    # The policy says what unsupported means: unevaluatable counts as unsupported here.
    strict = Policy(unevaluatable=UnevaluatablePolicy.UNSUPPORTED)
    assert decide("any-unsupported", "supported", "unevaluatable", policy=strict) == "unevaluatable"
    assert decide("any-unsupported", "supported", "unevaluatable") == "unevaluatable"  # tie, more severe


def test_the_combined_verdict_says_how_the_votes_went():
    verdict = combine_votes(votes("absent", "supported", "absent"), "majority", POLICY, judge="panel")
    assert verdict.label is Label.ABSENT and verdict.subtype.value == "other"
    assert verdict.label_reason.startswith("[3 votes: 2 absent, 1 supported]")
    assert verdict.probability == pytest.approx(2 / 3)


def _flipping(request):
    """The demo answer, except that repeat 1 calls every claim absent."""
    answer = demo_responder(request)
    if request.tool.name == "record_verdict" and request.repeat == 1:
        return {"label_reason": "repeat 1 disagrees", "label": "absent", "subtype_reason": "r", "subtype": "other"}
    return answer


def test_repeats_are_distinct_requests_and_a_rerun_is_answered_from_the_cache(tmp_path):
    cache = RequestCache(tmp_path / "cache.sqlite")
    api = FakeAPI(responder=_flipping)
    model = Model(api, cache=cache)
    judge = VotingJudge([LLMJudge(model, Mode.COT_ONE)], repeats=3)
    (result,) = asyncio.run(measure_samples([SAMPLE], OfflineExtractor(), judge, POLICY))
    assert result.n_claims == 2
    assert api.calls == 2 * 3  # every claim, every repeat
    assert sorted({r.repeat for r in api.requests}) == [0, 1, 2]
    assert len(result.votes) == 6 and {v.repeat for v in result.votes} == {0, 1, 2}
    # Repeat 1 said absent, repeats 0 and 2 supported: the majority is supported.
    assert all(v.label is Label.SUPPORTED for v in result.verdicts)
    assert sum(v.label is Label.ABSENT for v in result.votes) == 2
    # A fresh model on the same cache: no request is sent again.
    again = FakeAPI(responder=_flipping)
    judge = VotingJudge([LLMJudge(Model(again, cache=cache), Mode.COT_ONE)], repeats=3)
    (second,) = asyncio.run(measure_samples([SAMPLE], OfflineExtractor(), judge, POLICY))
    assert again.calls == 0 and second.votes == result.votes
    # A fourth repeat asks only the new repeat.
    judge = VotingJudge([LLMJudge(Model(again, cache=cache), Mode.COT_ONE)], repeats=4)
    asyncio.run(measure_samples([SAMPLE], OfflineExtractor(), judge, POLICY))
    assert again.calls == 2 and {r.repeat for r in again.requests} == {3}


def test_a_judge_that_fails_on_one_repeat_gives_error_votes_not_a_smaller_vote():
    def failing(request):
        if request.repeat == 2:
            return ProviderError("overloaded", retryable=False)
        return demo_responder(request)

    judge = VotingJudge([LLMJudge(Model(FakeAPI(responder=failing), max_retries=0), Mode.COT_ONE)], repeats=3)
    (result,) = asyncio.run(measure_samples([SAMPLE], OfflineExtractor(), judge, POLICY))
    failed = [v for v in result.votes if not v.ok]
    assert len(result.votes) == 6 and len(failed) == 2 and {v.repeat for v in failed} == {2}
    assert all("overloaded" in v.error for v in failed)
    # The other two repeats agree, so the failed one could not change the verdict.
    assert all(v.ok for v in result.verdicts) and result.n_errors == 0


def test_a_panel_votes_by_its_rule_and_keeps_every_judges_votes(tmp_path):
    says_absent = FakeAPI(
        "pessimist",
        responder=lambda r: {"label_reason": "no", "label": "absent", "subtype_reason": "s", "subtype": "other"},
    )
    judges = [
        LLMJudge(Model(FakeAPI("optimist")), Mode.COT_ONE),
        LLMJudge(Model(says_absent), Mode.COT_ONE),
        OfflineJudge(),
    ]
    panel = VotingJudge(judges, rule=PanelRule.ANY_UNSUPPORTED)
    assert panel.name == "panel(any-unsupported): fake:optimist, fake:pessimist, offline"
    manifest, (result,) = run_measurement(
        [SAMPLE], tmp_path / "run", OfflineExtractor(), panel, mode=Mode.COT_ONE, input_sha256="x"
    )
    assert all(v.label is Label.ABSENT for v in result.verdicts)
    assert {v.judge for v in result.votes} == {"fake:optimist", "fake:pessimist", "offline"}
    assert manifest.settings["judge"]["votes"]["rule"] == "any-unsupported"
    assert set(manifest.settings["judge"]["members"]) == {"fake:optimist", "fake:pessimist", "offline"}
    majority = VotingJudge(judges, rule="majority")
    (result,) = asyncio.run(measure_samples([SAMPLE], OfflineExtractor(), majority, POLICY))
    # Both claims copy the context: optimist and offline say supported, the pessimist absent, so the
    # majority keeps supported while any-unsupported (above) made both absent.
    # (Ties: test_majority_takes_the_most_votes_and_breaks_ties_...)
    by_judge = {v.judge: v.label for v in result.votes if v.claim_id == result.claims[1].id}
    assert by_judge == {"fake:optimist": Label.SUPPORTED, "fake:pessimist": Label.ABSENT, "offline": Label.SUPPORTED}
    assert [v.label for v in result.verdicts] == [Label.SUPPORTED, Label.SUPPORTED]


def test_votes_are_stored_with_the_run_and_resume_needs_the_same_votes(tmp_path):
    judge = VotingJudge([LLMJudge(Model(FakeAPI()), Mode.COT_ONE)], repeats=3)
    run_measurement([SAMPLE], tmp_path / "run", OfflineExtractor(), judge, mode=Mode.COT_ONE, input_sha256="x")
    with RunStore(tmp_path / "run") as store:
        (result,) = store.results()
        assert len(result.votes) == 6
    data = load_run(tmp_path / "run")
    assert len(data.votes) == 6 and sorted(set(data.votes["repeat"])) == [0, 1, 2]
    other = VotingJudge([LLMJudge(Model(FakeAPI()), Mode.COT_ONE)], repeats=2)
    with pytest.raises(Exception, match="different votes"):
        run_measurement(
            [SAMPLE], tmp_path / "run", OfflineExtractor(), other, mode=Mode.COT_ONE, input_sha256="x", resume=True
        )


def test_a_run_without_votes_reads_as_one_vote_per_claim(tmp_path):
    run_measurement([SAMPLE], tmp_path / "run", OfflineExtractor(), OfflineJudge(), mode=Mode.COT_ONE, input_sha256="x")
    import sqlite3

    with sqlite3.connect(tmp_path / "run" / "run.sqlite") as db:  # as a run written before votes existed
        db.execute("DROP TABLE votes")
    data = load_run(tmp_path / "run")
    assert len(data.votes) == 2 and set(data.votes["repeat"]) == {0} and set(data.votes["judge"]) == {"offline"}
    assert list(data.votes["label"]) == list(data.claims["label"])


def test_bad_panels_are_refused_with_a_clear_message():
    with pytest.raises(ConfigError, match="offline judge is deterministic"):
        VotingJudge([OfflineJudge()], repeats=3)
    with pytest.raises(ConfigError, match="given twice"):
        VotingJudge([OfflineJudge(), OfflineJudge()])
    with pytest.raises(ConfigError, match="--panel-rule must be one of"):
        VotingJudge([OfflineJudge()], rule="most")
    with pytest.raises(ConfigError, match="between 1 and"):
        VotingJudge([LLMJudge(Model(FakeAPI()))], repeats=0)


def test_the_demo_model_flips_some_verdicts_on_later_repeats_reproducibly():
    judge = VotingJudge([LLMJudge(Model(FakeAPI()), Mode.COT_ONE)], repeats=5)
    samples = [
        Sample(
            id=f"s{i}",
            context="The bridge is 24 km long. It opened in 2019.",
            response=f"The bridge is {i} km long. It opened in 2019. It is blue.",
        )
        for i in range(10)
    ]
    first = asyncio.run(measure_samples(samples, OfflineExtractor(), judge, POLICY))
    again = asyncio.run(measure_samples(samples, OfflineExtractor(), judge, POLICY))
    assert [r.votes for r in first] == [r.votes for r in again]
    flipped = {v.claim_id for r in first for v in r.votes if v.repeat > 0 and "changed its mind" in v.label_reason}
    assert 0 < len(flipped) < sum(r.n_claims for r in first)
    repeat0 = [v for r in first for v in r.votes if v.repeat == 0]
    assert not any("changed its mind" in v.label_reason for v in repeat0)
    assert prompt_blocks  # the demo reads our fences; imported for the responder above


def test_the_stages_of_a_voted_run_are_rebuilt_with_the_same_votes(tmp_path):
    from hallumeasure.pipeline.measurement import Measurement

    judges = [LLMJudge(Model(FakeAPI()), Mode.COT_ONE), OfflineJudge()]
    manifest, _ = run_measurement(
        [SAMPLE],
        tmp_path / "run",
        OfflineExtractor(),
        VotingJudge(judges, rule="unanimous"),
        mode=Mode.COT_ONE,
        input_sha256="x",
    )
    judge = Measurement.of_run(manifest).stages().judge
    assert judge.name == manifest.judge and judge.rule is PanelRule.UNANIMOUS and judge.repeats == 1
    assert judge.settings()["votes"] == manifest.settings["judge"]["votes"]
