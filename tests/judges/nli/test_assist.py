"""--judge offline+nli: the offline judge asks the entailment model only where its trees are unsure."""

import numpy as np
import pytest

from hallumeasure.core.labels import Label
from hallumeasure.core.types import Claim, Sample
from hallumeasure.judges.nli.assist import UNSURE, blend, needs_nli
from hallumeasure.judges.offline import OfflineJudge


def test_blend_averages_inside_the_band_only():
    offline = np.array([0.1, 0.3, 0.31, 0.5, 0.69, 0.7, 0.95])
    nli = np.array([0.9, 0.9, 0.9, 0.0, 0.1, 0.1, 0.0])
    got = np.array([blend(o, n) for o, n in zip(offline, nli, strict=True)])
    assert got.tolist() == pytest.approx([0.1, 0.3, 0.605, 0.25, 0.395, 0.7, 0.95])
    assert blend(0.5, 1.0) == pytest.approx(0.75)
    assert UNSURE == (0.3, 0.7)


def test_needs_nli_asks_for_the_unsure_claims_or_all_when_the_score_is_unsure():
    assert needs_nli([0.1, 0.5, 0.9], score=0.9) == [1]
    assert needs_nli([0.1, 0.2, 0.9], score=0.95) == []
    assert needs_nli([0.1, 0.2, 0.9], score=0.5) == [0, 1, 2]
    assert needs_nli([], score=None) == []


class RecordingAssistant:
    """A stand-in entailment model with a fixed answer that records what it was asked."""

    def __init__(self, answer: float) -> None:
        self.answer = answer
        self.asked: list[str] = []

    def unsupported(self, sample, texts):
        self.asked += list(texts)
        return [self.answer] * len(texts)

    def settings(self):
        return {"sha256": "test"}


SAMPLE = Sample(
    id="s",
    context="The hotel has 9 rooms and a small garden. Breakfast is served from 7 to 10 in the morning.",
    response="",
)


def _claims(*texts):
    return [Claim(id=f"s:{i}", sample_id="s", index=i, text=t) for i, t in enumerate(texts)]


def test_the_judge_blends_unsure_claims_and_leaves_confident_ones_alone():
    claims = _claims("The hotel has 10 rooms.", "The hotel has a small garden.", "The staff speak five languages.")
    plain = OfflineJudge().judge_now(SAMPLE, claims)
    assistant = RecordingAssistant(answer=1.0)
    judge = OfflineJudge(assist=assistant)
    assisted = judge.judge_now(SAMPLE, claims)

    assert judge.name == "offline+nli" and judge.settings()["nli"] == {"sha256": "test"}
    before = [v.probability for v in plain.verdicts]
    after = [v.probability for v in assisted.verdicts]
    unsure = [lo < p < hi for p in before for lo, hi in [UNSURE]]
    score_unsure = UNSURE[0] < plain.score < UNSURE[1]
    assert any(unsure) and not all(unsure), f"the claims should cover both cases: {before}"
    for claim, p, q, u in zip(claims, before, after, unsure, strict=True):
        if u:
            assert q == pytest.approx((p + 1.0) / 2, abs=1e-4)
        else:
            assert q == p
        if not score_unsure:
            assert (claim.text in assistant.asked) == u
    if score_unsure:
        assert assisted.score == pytest.approx((plain.score + 1.0) / 2, abs=1e-4)
    else:
        assert assisted.score == plain.score
    assert all(v.judge == "offline+nli" for v in assisted.verdicts)


def test_an_assistant_that_finds_support_clears_an_unsure_claim():
    claims = _claims("The garden is small.")
    plain = OfflineJudge().judge_now(SAMPLE, claims)
    p = plain.verdicts[0].probability
    if not UNSURE[0] < p < UNSURE[1]:
        pytest.fail(f"the test claim should sit in the unsure band; its probability is {p}")
    assisted = OfflineJudge(assist=RecordingAssistant(answer=0.0)).judge_now(SAMPLE, claims)
    assert assisted.verdicts[0].probability == pytest.approx(p / 2, abs=1e-4)
    assert assisted.verdicts[0].label == Label.SUPPORTED
