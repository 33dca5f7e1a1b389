"""Sources longer than the judge's window: sentence-aligned chunks, BM25 views per response, cache design kept."""

from __future__ import annotations

import asyncio
import itertools
import re

from pipeline.reliability.faultcases import provider_api

from hallumeasure.core.text import count_tokens
from hallumeasure.core.types import Claim, Mode, Passage, Sample
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.offline import OfflineExtractor, OfflineJudge
from hallumeasure.models.fake import FakeAPI
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import measure_samples
from hallumeasure.sources.rag import SourceOptions
from hallumeasure.sources.retrieval import GAP_MARK, chunk_passage, context_budget, sentence_spans, view_for
from hallumeasure.testing import AnthropicServer, PromptCache

FILLER = [f"Report {i} describes the harbour of town number {i} and its {i * 3} fishing boats." for i in range(400)]
NEEDLE = "The Calder lighthouse is 42 metres tall and was built by the engineer Maud Fenwick."


def _long_sample(response: str = "The Calder lighthouse is 42 metres tall.") -> Sample:
    text = " ".join([*FILLER[:250], NEEDLE, *FILLER[250:]])
    return Sample(
        id="long",
        response=response,
        passages=(
            Passage(id="intro", text="A guide to the coast.", title="Guide"),
            Passage(id="log", text=text, title="Harbour log"),
        ),
    )


def test_chunks_follow_sentences_overlap_by_one_and_cover_the_passage():
    passage = Passage(id="p", text=" ".join(FILLER[:40]))
    chunks = chunk_passage(passage, size=60)
    sentences = sentence_spans(passage.text)
    starts, ends = {s for s, _ in sentences}, {e for _, e in sentences}
    assert all(c.start in starts and c.end in ends for c in chunks)
    assert all(c.tokens <= 60 for c in chunks) and chunks[0].start == 0 and chunks[-1].end == len(passage.text)
    for before, after in itertools.pairwise(chunks):
        shared = passage.text[after.start : before.end]
        assert len(sentence_spans(shared)) == 1  # exactly one sentence repeated


def test_a_source_that_fits_is_shown_whole_and_a_long_one_as_a_view_within_the_budget():
    sample = _long_sample()
    claim = Claim(id="long:c0", sample_id="long", index=0, text=sample.response)
    assert view_for(sample, [claim], budget=None).sample is sample
    assert view_for(sample, [claim], budget=10**6).sample is sample
    shown = view_for(sample, [claim], budget=300)
    assert shown.cut and NEEDLE in shown.sample.context
    assert sum(count_tokens(p.text) for p in shown.sample.passages) <= 300 + count_tokens(GAP_MARK) * 4
    (log,) = shown.sample.passages  # the intro shares no word with the claim: it is left out
    assert log.id == "log" and log.title == "Harbour log"
    for label in shown.shown:  # each shown range is text of the original passage
        _, start, end = re.fullmatch(r"(\w+):(\d+)-(\d+)", label).groups()
        assert sample.sources[1].text[int(start) : int(end)] in log.text


def test_claims_of_one_response_share_the_budget_in_turns():
    sample = _long_sample()
    claims = [
        Claim(id=f"long:c{i}", sample_id="long", index=i, text=t)
        for i, t in enumerate(
            [NEEDLE, "Town number 17 has 51 fishing boats.", "Town number 301 has 903 fishing boats."]
        )
    ]
    text = view_for(sample, claims, budget=500).sample.context
    assert "Maud Fenwick" in text and "town number 17 and its 51" in text and "town number 301 and its 903" in text


def test_offline_judge_on_a_long_source_supports_the_needle_and_catches_a_changed_figure():
    samples = [
        _long_sample(),
        _long_sample("The Calder lighthouse is 57 metres tall.").model_copy(update={"id": "x"}),
        _long_sample("Emperor penguins nest on volcanic islands near Antarctica.").model_copy(update={"id": "y"}),
    ]
    results = asyncio.run(
        measure_samples(samples, OfflineExtractor(), OfflineJudge(), sources=SourceOptions(max_context_tokens=400))
    )
    (right,), (wrong,), (invented,) = (r.verdicts for r in results)
    assert right.label == "supported" and right.evidence[0].quote == NEEDLE and right.evidence_verified
    assert wrong.label == "contradicted" and wrong.evidence[0].passage_id == "log"
    assert invented.label == "absent" and not invented.evidence  # no chunk backs it
    text = samples[0].sources[1].text
    assert text[right.evidence[0].start : right.evidence[0].end] == NEEDLE  # offsets into the full passage
    assert all(v.shown for v in (right, wrong, invented))


def test_budgets_per_judge():
    assert context_budget("offline") is None and context_budget("fake:demo") is None
    assert context_budget("anthropic:claude-x", 1234) == 1234
    assert 100_000 < context_budget("anthropic:claude-x") < 200_000
    assert context_budget("bedrock:mistral.large") < context_budget("bedrock:anthropic.claude-v2")


def test_one_view_per_response_keeps_the_cached_prefix_shared_by_its_claims():
    """The view is the cached prefix: the first claim writes it, the others read it (one-claim mode)."""
    sample = _long_sample(
        "The Calder lighthouse is 42 metres tall. Town number 17 has 51 fishing boats. "
        "Town number 301 has 903 fishing boats."
    )
    with AnthropicServer(prompt_cache=PromptCache(min_tokens=8)) as srv:
        model = Model(provider_api("anthropic", srv.url), backoff_base=0.0)
        (result,) = asyncio.run(
            measure_samples(
                [sample],
                OfflineExtractor(),
                LLMJudge(model, Mode.COT_ONE),
                sources=SourceOptions(max_context_tokens=300),
            )
        )
        calls = srv.calls
    assert result.error is None and result.n_claims == 3 and all(v.shown for v in result.verdicts)
    prefixes = {c.segments[1].text for c in calls if c.tool["name"] == "record_verdict"}
    assert len(prefixes) == 1  # the same view (and cache breakpoint) for every claim of the response
    assert (
        result.usage.cache_write_tokens > 0
        and result.usage.cache_read_tokens >= 2 * result.usage.cache_write_tokens * 0.9
    )


def test_judge_input_per_claim_stays_flat_as_the_source_grows():
    """Simulated token counts per judged claim: the same within 1.2x from 1x to 32x of the source."""
    per_claim = []
    for times in (1, 8, 32):
        text = " ".join([*FILLER[: 12 * times], NEEDLE])
        sample = Sample(id="s", context=text, response="The Calder lighthouse is 42 metres tall.")
        api = FakeAPI()
        asyncio.run(
            measure_samples(
                [sample], OfflineExtractor(), LLMJudge(Model(api)), sources=SourceOptions(max_context_tokens=250)
            )
        )
        (call,) = [r for r in api.requests if r.tool.name == "record_verdict"]
        per_claim.append(count_tokens(call.system + "".join(m.text for m in call.messages)))
    assert max(per_claim) <= 1.2 * min(per_claim), per_claim


def test_a_run_resumes_only_with_the_same_source_settings(tmp_path):
    import pytest

    from hallumeasure.core.errors import RunStoreError
    from hallumeasure.pipeline.run import run_measurement

    def run(budget: int, *, resume: bool = False):
        """The same long sample into the same run directory, with a context budget of ``budget`` tokens."""
        return run_measurement(
            [_long_sample()],
            tmp_path / "run",
            OfflineExtractor(),
            OfflineJudge(),
            mode="cot-one",
            input_sha256="x",
            sources=SourceOptions(max_context_tokens=budget),
            resume=resume,
        )

    first, _ = run(400)
    assert first.settings["sources"]["context_budget_tokens"] == 400 and first.settings["sources"]["ranker"] == "bm25s"
    again, _ = run(400, resume=True)
    assert again.counts["measured_now"] == 0
    with pytest.raises(RunStoreError, match="different sources"):
        run(900, resume=True)


def test_a_budget_smaller_than_one_chunk_shows_the_start_of_the_best_chunk():
    """A small window's budget (a local model's) still shows the words that matter, whole, within the budget."""
    sample = _long_sample()
    claim = Claim(id="long:c0", sample_id="long", index=0, text=sample.response)
    shown = view_for(sample, [claim], budget=12)
    (log,) = shown.sample.passages
    assert shown.cut and 0 < count_tokens(log.text) <= 12
    assert log.text in sample.sources[1].text  # the start of the chunk that ranks best, not the unrelated intro
