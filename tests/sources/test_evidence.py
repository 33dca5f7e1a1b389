"""Evidence quotes: located in their passage after light normalisation, and flagged when they are not there.

The planted cases go through the real pipeline to the local Anthropic and Bedrock simulators, which
answer each claim with the quote the case plants; the verdicts that come back must flag every quote
that is not in its passage and accept those that differ only in whitespace, quote marks or case.
"""

from __future__ import annotations

import re

import pytest
from pipeline.reliability.faultcases import provider_api

from hallumeasure.core.types import Mode, Passage, Sample
from hallumeasure.detectors.conli import SentenceExtractor
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.models.fake import prompt_blocks
from hallumeasure.models.model import Model
from hallumeasure.pipeline.run import run_measurement
from hallumeasure.sources.evidence import find_quote, verify
from hallumeasure.testing import Answer, AnthropicServer, BedrockServer

PASSAGES = (
    Passage(id="1", text="The Orwell Bridge is 24 km long.\nIt opened to traffic in   2019 after five years of work."),
    Passage(id="2", text='Engineers said the deck would "probably last" a century. Tolls start at \u00a34\u20136.'),
)
QUESTION = "Tell me about the Orwell Bridge."

# (claim, passage id the judge names, its quote, whether the quote must be accepted)
CASES = [
    # planted: not in the passage (paraphrase, invented, wrong passage, the claim itself, two places glued ...)
    ("The bridge measures 24 kilometres.", "1", "the bridge measures 24 kilometres", False),
    ("The bridge was designed by Ana Ruiz.", "1", "The bridge was designed by Ana Ruiz.", False),
    ("The deck would probably last a century.", "1", 'the deck would "probably last" a century', False),
    ("The bridge is 25 km long.", "1", "The Orwell Bridge is 25 km long.", False),
    ("It opened after five years.", "1", "The Orwell Bridge is 24 km long after five years of work", False),
    ("Tolls start at 4 pounds.", "9", "Tolls start at 4 pounds", False),
    ("The bridge is long.", "1", "a", False),
    ("The bridge is famous.", "1", "Tell me about the Orwell Bridge.", False),
    ("It opened in 2019 to acclaim.", "1", "It opened to traffic in 2019 to great acclaim", False),
    ("The deck is steel.", "2", "The deck is made of steel.", False),
    # accepted: the same words with other whitespace, quote marks, dashes or case; an elided middle; an id alias
    ("It opened in 2019.", "1", "It opened to traffic in 2019", True),
    ("The deck should last a century.", "2", "the deck would \u201cprobably last\u201d a century", True),
    ("The bridge is 24 km long.", "1", "THE ORWELL BRIDGE IS 24 KM LONG.", True),
    ("Tolls start at 4 to 6 pounds.", "2", "Tolls start at \u00a34-6.", True),
    ("It took five years to build.", "doc1", "opened to traffic in 2019 ... five years of work", True),
    ("The Orwell Bridge is 24 km in length.", "[1]", "Orwell Bridge is\n24 km long", True),
]


def _samples() -> list[Sample]:
    return [
        Sample(id=f"case-{i}", passages=PASSAGES, question=QUESTION, response=claim)
        for i, (claim, *_rest) in enumerate(CASES)
    ]


def _planted(call) -> Answer:
    """The simulator's answer: the planted quote of the case whose claim is being judged."""
    request = call.to_request()
    (claim,) = [body for _, body in prompt_blocks(request, "claim")]
    _, passage_id, quote, _ = next(c for c in CASES if c[0] == claim)
    assert re.search(r'<passage id="1">\n', request.messages[0].text)  # the request shows passages with ids
    tool_input = {
        "label_reason": "planted",
        "evidence": [{"passage_id": passage_id, "quote": quote}],
        "label": "supported",
        "subtype_reason": "",
        "subtype": None,
    }
    return Answer(tool_name=call.tool["name"], tool_input=tool_input, stop_reason="tool_use")


@pytest.mark.parametrize("server", [AnthropicServer, BedrockServer])
def test_every_planted_quote_outside_its_passage_is_flagged_and_format_differences_pass(server, tmp_path):
    provider = "anthropic" if server is AnthropicServer else "bedrock"
    samples = _samples()
    with server(answer=_planted) as srv:
        model = Model(provider_api(provider, srv.url), backoff_base=0.0)
        manifest, results = run_measurement(
            samples,
            tmp_path / "run",
            SentenceExtractor(),
            LLMJudge(model, Mode.COT_ONE),
            mode=Mode.COT_ONE,
            input_sha256="x",
        )
    verdicts = {r.sample_id: r.verdicts[0] for r in results}
    for i, (claim, _, quote, accepted) in enumerate(CASES):
        verdict = verdicts[f"case-{i}"]
        assert verdict.evidence_verified is accepted, (claim, quote)
        assert verdict.label == "supported"  # the finding sits beside the label; it never changes it
    planted = sum(1 for c in CASES if not c[3])
    assert manifest.counts["evidence_unverified"] == planted == 10
    assert manifest.counts["claims_with_evidence"] == len(CASES)


def test_a_verified_quote_gets_offsets_into_its_passage():
    sample = Sample(id="s", passages=PASSAGES, response="R.")
    evidence = verify(sample, "2", "the deck would \u201cprobably   last\u201d")
    assert evidence.verified and evidence.passage_id == "2"
    assert PASSAGES[1].text[evidence.start : evidence.end] == 'the deck would "probably last"'
    elided = verify(sample, "1", "It opened ... five years")
    assert PASSAGES[0].text[elided.start : elided.end] == "It opened to traffic in   2019 after five years"


def test_without_a_usable_id_a_quote_is_accepted_only_from_exactly_one_passage():
    twins = Sample(
        id="s",
        response="R.",
        passages=(Passage(id="a", text="Same words here."), Passage(id="b", text="Same words here.")),
    )
    assert not verify(twins, None, "Same words here").verified  # which passage? it cannot say
    assert verify(twins, "b", "Same words here").passage_id == "b"
    one = Sample(id="s", response="R.", passages=PASSAGES)
    found = verify(one, None, "Tolls start")
    assert found.verified and found.passage_id == "2"


@pytest.mark.parametrize(
    ("quote", "found"),
    [
        ("  \u201cprobably last\u201d ", True),
        ("PROBABLY LAST", True),
        ("probably\tlast", True),
        ("probably lasts", False),
        ("", False),
        ("...", False),
        ("last ... probably", False),
    ],
)
def test_find_quote_normalises_only_spacing_quote_marks_and_case(quote, found):
    assert (find_quote(quote, PASSAGES[1].text) is not None) is found
