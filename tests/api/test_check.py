"""hallumeasure.check / acheck and assert_grounded: one response, stages kept between calls, readable failures."""

from __future__ import annotations

import asyncio

import pytest

import hallumeasure
from hallumeasure.api import check as check_module
from hallumeasure.core.errors import InputError
from hallumeasure.testing import AnthropicServer

CONTEXT = "The Storebaelt bridge is 6.8 km long. It opened to traffic in 1998 and carries a motorway."
GROUNDED = "The Storebaelt bridge is 6.8 km long. It opened in 1998."
WRONG = "The Storebaelt bridge is 42 km long. It opened in 1998."


@pytest.fixture(autouse=True)
def fresh_stages():
    check_module.forget_stages()
    yield
    check_module.forget_stages()


def test_check_returns_claims_verdicts_and_rates():
    result = hallumeasure.check(WRONG, context=CONTEXT)
    assert isinstance(result, hallumeasure.Result) and result.judge == "offline" and result.n_claims == 2
    first, second = result.claims
    assert first.label == hallumeasure.Label.CONTRADICTED and first.subtype == hallumeasure.Subtype.NUMBER
    assert first.unsupported and first.label_reason and not second.unsupported
    assert result.unsupported == [first] and result.n_unsupported == 1 and result.unsupported_rate == 0.5
    assert result.hallucinated and not result.grounded and isinstance(first.confident, bool)
    assert WRONG[first.spans[0][0] : first.spans[0][1]] == "The Storebaelt bridge is 42 km long."
    assert first.located and second.located
    (span,) = result.unsupported_spans  # the wrong value's characters inside the claim, LettuceDetect-style
    assert first.spans[0][0] <= span.start < span.end <= first.spans[0][1] and WRONG[span.start : span.end] == span.text
    assert span.text == "42 km"
    assert span.label == hallumeasure.Label.CONTRADICTED and span.subtype == hallumeasure.Subtype.NUMBER
    assert 0 < span.confidence <= 1 and span.claims == (first.index,)
    assert "<Result: 2 claims, 1 unsupported" in repr(result) and "contradicted" in result._repr_html_()
    assert hallumeasure.check(GROUNDED, context=CONTEXT).grounded


def test_passages_and_samples_are_checked_too():
    by_passages = hallumeasure.check(WRONG, passages=["The Storebaelt bridge is 6.8 km long.", "It opened in 1998."])
    assert [c.label for c in by_passages.claims] == [hallumeasure.Label.CONTRADICTED, hallumeasure.Label.SUPPORTED]
    assert by_passages.claims[0].evidence or by_passages.claims[1].evidence
    sample = hallumeasure.Sample(id="s", context=CONTEXT, response=WRONG)
    assert hallumeasure.check(sample).n_unsupported == 1
    with pytest.raises(InputError, match="context=, passages= or messages="):
        hallumeasure.check(WRONG)
    with pytest.raises(InputError, match="carries its own source"):
        hallumeasure.check(sample, context=CONTEXT)


def test_stages_are_built_once_per_judge_and_settings():
    hallumeasure.check(WRONG, context=CONTEXT)
    [kept] = check_module._checkers.values()
    hallumeasure.check(GROUNDED, context=CONTEXT)
    assert list(check_module._checkers.values()) == [kept]  # the same built stages served the second call
    strict = hallumeasure.check(WRONG, context=CONTEXT, unsupported_labels="absent")
    assert len(check_module._checkers) == 2 and strict.n_unsupported == 0  # other settings, other stages


def test_check_and_acheck_work_inside_a_running_loop():
    async def app():
        blocking = hallumeasure.check(WRONG, context=CONTEXT)
        awaited = await hallumeasure.acheck(WRONG, context=CONTEXT)
        many = await asyncio.gather(*(hallumeasure.acheck(GROUNDED, context=CONTEXT) for _ in range(3)))
        return blocking, awaited, many

    blocking, awaited, many = asyncio.run(app())
    assert blocking == awaited and all(r.grounded for r in many)


def test_an_llm_judge_keeps_its_stages_and_follows_a_new_endpoint(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-dummy-key")
    spec = "anthropic:claude-sim"
    with AnthropicServer() as first:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", first.base_url)
        result = hallumeasure.check(WRONG, context=CONTEXT, judge=spec, extractor=spec)
        asked = len(first.requests)
        again = hallumeasure.check(WRONG, context=CONTEXT, judge=spec, extractor=spec)
        assert result.judge == spec and asked > 0 and len(first.requests) == asked  # answered from the cache
        assert again.claims == result.claims and again.usage.cached_calls > 0
    with AnthropicServer() as second:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", second.base_url)
        hallumeasure.check(WRONG, context=CONTEXT, judge=spec, extractor=spec, no_cache=True)
        assert second.requests  # rebuilt for the new endpoint, not sent to the closed one
    assert len(check_module._checkers) == 2


def test_assert_grounded_passes_and_fails_with_a_readable_list():
    assert hallumeasure.assert_grounded(GROUNDED, context=CONTEXT).grounded
    with pytest.raises(AssertionError) as failure:
        hallumeasure.assert_grounded(WRONG, context=CONTEXT)
    error = failure.value
    assert isinstance(error, hallumeasure.GroundednessError) and error.result.n_unsupported == 1
    message = str(error)
    assert message.splitlines()[:2] == [
        "response not grounded:",
        "  1 unsupported (at most 0 allowed); 2 claims, unsupported rate 0.500,",
    ], message
    assert "claim 1: 'The Storebaelt bridge is 42 km long.'" in message
    assert "label: contradicted / number" in message and "reason: " in message
    assert "It opened in 1998" not in message  # supported claims are not listed
    assert hallumeasure.assert_grounded(WRONG, context=CONTEXT, max_unsupported=1).n_unsupported == 1


def test_assert_grounded_lists_evidence_and_hides_secrets(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret-value-123456")
    passages = [{"id": "doc1", "text": "The Storebaelt bridge is 6.8 km long."}, "It opened in 1998."]
    with pytest.raises(AssertionError) as failure:
        hallumeasure.assert_grounded(WRONG + " Key sk-secret-value-123456 is unrelated.", passages=passages)
    message = str(failure.value)
    assert "evidence (passage doc1): " in message and "sk-secret-value-123456" not in message


def test_result_html_escapes_the_response():
    result = hallumeasure.check("The bridge is <script>alert(1)</script> km long.", context=CONTEXT)
    html = result._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_a_check_that_fails_on_a_bad_option_leaves_a_quiet_interpreter_exit() -> None:
    """The kept stages are closed at exit without importing anything (an import then fails and prints)."""
    import subprocess
    import sys

    code = (
        "import hallumeasure as h\n"
        "from hallumeasure.core.errors import ConfigError\n"
        "try:\n"
        "    h.check('It is 5 km long.', context='It is 5 km long.', judge='offline?no_such_option=1')\n"
        "except ConfigError as exc:\n"
        "    print('refused:', exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and "refused:" in done.stdout, done.stderr
    assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_settings_model_is_taken_as_its_keywords_are():
    settings = hallumeasure.MeasureSettings(judge=["offline"], unsupported_labels="contradicted")
    given = hallumeasure.check(WRONG, context=CONTEXT, settings=settings)
    assert given == hallumeasure.check(WRONG, context=CONTEXT, judge=["offline"], unsupported_labels="contradicted")
    assert given.n_unsupported == 1
    # keywords win over the model's fields; the model's own fields stay
    wider = hallumeasure.check(WRONG, context=CONTEXT, settings=settings, unsupported_labels="contradicted,absent")
    assert wider == hallumeasure.check(WRONG, context=CONTEXT, unsupported_labels="contradicted,absent")
    assert asyncio.run(hallumeasure.acheck(WRONG, context=CONTEXT, settings=settings)) == given


def test_an_unknown_keyword_or_a_settings_of_another_type_is_refused_by_name():
    from hallumeasure.core.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown setting\\(s\\) colour; valid settings: extractor, judge"):
        hallumeasure.check(WRONG, context=CONTEXT, settings=hallumeasure.MeasureSettings(), colour="red")
    with pytest.raises(ConfigError, match="settings= takes a MeasureSettings, not a dict"):
        hallumeasure.check(WRONG, context=CONTEXT, settings={"judge": "offline"})  # type: ignore[arg-type]
