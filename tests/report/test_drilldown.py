"""Claim-to-source alignment and the notebook helpers."""

from report.helpers import XSS_PAYLOADS, assert_escaped, sample, write_run

from hallumeasure.report.drilldown import claims_html, claims_with_sources, filter_claims, stats_table, subtype_counts
from hallumeasure.runs.run import load_run
from hallumeasure.sources.align import align_claim, highlight

CONTEXT = "The bridge is 24 km long. It opened in 2019. The mayor praised the builders."


def test_a_claim_aligns_to_the_sentence_sharing_most_content_words():
    a = align_claim("The bridge opened in 2020.", CONTEXT)
    assert a.sentence == "It opened in 2019." and CONTEXT[a.start : a.end] == a.sentence
    assert align_claim("The mayor thanked the builders warmly.", CONTEXT).sentence.startswith("The mayor")
    assert align_claim("Completely unrelated words here.", CONTEXT) is None
    assert align_claim("The.", CONTEXT) is None  # no content word at all


def test_highlight_escapes_everything_and_marks_the_sentences():
    context = f"Safe start. {XSS_PAYLOADS[0]} is here. End {XSS_PAYLOADS[1]}."
    marked = str(highlight(context, [align_claim("alert is here", context), align_claim("End", context)]))
    assert marked.count("<mark>") == 2
    assert_escaped(marked)
    assert str(highlight("a < b", None)) == "a &lt; b"


def _run(tmp_path):
    rows = [
        (
            sample(1, "m1"),
            [
                ("The bridge is 42 km long.", ("contradicted", "number", "24, not 42")),
                ("It opened in 2019.", "supported"),
            ],
        ),
        (sample(2, "m2"), [("The bridge is 24 km long.", "supported"), (XSS_PAYLOADS[0], "error")]),
    ]
    return load_run(write_run(tmp_path / "run", rows))


def test_filters_and_sources(tmp_path):
    claims = claims_with_sources(_run(tmp_path))
    assert list(filter_claims(claims, model="m1", label="contradicted")["claim"]) == ["The bridge is 42 km long."]
    assert len(filter_claims(claims, label=["supported", "contradicted"])) == 3
    assert len(filter_claims(claims, subtype="number", model="m2")) == 0
    assert list(filter_claims(claims, errors=True)["sample_id"]) == ["s2"]
    first = claims.iloc[0]
    assert first["source_sentence"] == "The bridge number 1 is 24 km long." and first["overlap"] > 0.5
    assert subtype_counts(claims).loc["m1", "number"] == 1


def test_claims_html_is_escaped(tmp_path):
    page = str(claims_html(claims_with_sources(_run(tmp_path))))
    assert_escaped(page, [XSS_PAYLOADS[0]])
    assert "<mark>The bridge number 1 is 24 km long.</mark>" in page and "<b>error</b>" in page


def test_stats_table_has_the_run_and_each_model(tmp_path):
    table = stats_table(_run(tmp_path), resamples=200)
    assert list(table["group"]) == ["(all)", "m1", "m2"]
    assert table.loc[1, "mean unsupported rate [95% CI]"].startswith("0.500")
