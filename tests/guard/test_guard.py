"""The guard in process: decisions per policy, the undecided rule, rewrites, and use inside an event loop."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from hallumeasure.core.labels import Label
from hallumeasure.guard import Decision, Guard, GuardSettings, PolicyOverride
from hallumeasure.guard.settings import PolicyError, read_keys

CONTEXT = (
    "The Kessler Public Library opens at 9 a.m. and closes at 9 p.m. on weekdays. It holds 120,000 books. "
    "The city council voted 7 to 2 to fund a new wing."
)
FAITHFUL = "The library closes at 9 p.m. on weekdays. It holds 120,000 books."
#: Two changed values: a response the offline judge's calibrated rule decides (judges/decision.py); one changed
#: number alone scores below its flag_at_least and is only flagged, never blocked.
WRONG_NUMBER = "The library holds 300,000 books. It opens at 11 a.m."


@pytest.fixture(scope="module")
def guard() -> Guard:
    return Guard()


def test_a_faithful_response_passes(guard: Guard) -> None:
    result = guard.check(FAITHFUL, context=CONTEXT)
    assert result.decision is Decision.PASS
    assert result.hallucinated is False
    assert result.n_claims == 2 and result.n_unsupported == 0
    assert set(result.latency_ms) >= {"extract", "judge", "total"}
    assert result.judge == "offline"


def test_a_changed_number_is_flagged_by_default_and_blocked_when_asked(guard: Guard) -> None:
    flagged = guard.check(WRONG_NUMBER, context=CONTEXT)
    assert flagged.decision is Decision.FLAG
    wrong = [c for c in flagged.claims if "300,000" in c.text]
    assert wrong and wrong[0].label is Label.CONTRADICTED
    # the judge's quote is located and verified in the source, as in a batch run
    (quote,) = wrong[0].evidence
    assert quote.verified and quote.quote == "It holds 120,000 books." and quote.passage_id == "1"
    blocked = guard.check(WRONG_NUMBER, context=CONTEXT, policy={"action": "block"})
    assert blocked.decision is Decision.BLOCK
    assert blocked.policy.action.value == "block"


def test_below_the_threshold_the_guard_only_flags(guard: Guard) -> None:
    result = guard.check(WRONG_NUMBER, context=CONTEXT, policy=PolicyOverride(action="block", threshold=1.0))
    assert result.hallucinated is True
    assert result.decision is Decision.FLAG


def test_the_rewrite_policy_fixes_the_value_from_the_source() -> None:
    guard = Guard(GuardSettings(policy="rewrite"))
    result = guard.check(WRONG_NUMBER, context=CONTEXT)
    assert result.decision is Decision.REWRITE
    assert result.rewritten is not None
    assert "120,000" in result.rewritten and "300,000" not in result.rewritten
    assert "rewrite" in result.latency_ms


def test_passages_work_like_a_context(guard: Guard) -> None:
    passages = [{"id": "a", "text": "The Kessler Public Library holds 120,000 books.", "title": "Library"}]
    result = guard.check("The library holds 300,000 books.", passages=passages)
    assert result.hallucinated is True


def test_exactly_one_source_is_required(guard: Guard) -> None:
    with pytest.raises(ValidationError, match="exactly one of 'context'"):
        guard.check(FAITHFUL)
    with pytest.raises(ValidationError, match="exactly one of 'context'"):
        guard.check(FAITHFUL, context=CONTEXT, passages=[{"id": "1", "text": CONTEXT}])


def test_a_deployment_can_refuse_per_request_overrides() -> None:
    guard = Guard(GuardSettings(overridable=frozenset({"threshold"})))
    with pytest.raises(PolicyError, match="policy"):
        guard.check(WRONG_NUMBER, context=CONTEXT, policy={"policy": "rewrite"})
    assert guard.check(WRONG_NUMBER, context=CONTEXT, policy={"threshold": 0.9}).policy.threshold == 0.9


def test_check_works_inside_a_running_event_loop(guard: Guard) -> None:
    async def inside() -> Decision:
        loop = asyncio.get_running_loop()
        decision = guard.check(FAITHFUL, context=CONTEXT).decision  # sync call from async code
        assert asyncio.get_running_loop() is loop  # the caller's loop is untouched
        return decision

    assert asyncio.run(inside()) is Decision.PASS


def test_keys_come_from_a_file_and_the_environment(tmp_path, monkeypatch) -> None:
    keys = tmp_path / "keys"
    keys.write_text("# ops team\nk" + "1" * 20 + "\n\nk" + "2" * 20 + "  # ci\n")
    monkeypatch.setenv("HALLUMEASURE_API_KEYS", "k" + "3" * 20 + ", k" + "1" * 20)
    found = [k.get_secret_value() for k in read_keys(keys)]
    assert found == ["k" + "1" * 20, "k" + "2" * 20, "k" + "3" * 20]
    assert "k111" not in repr(read_keys(keys))  # SecretStr hides them
    monkeypatch.setenv("HALLUMEASURE_API_KEYS", "short")
    with pytest.raises(ValueError, match="shorter than 16"):
        read_keys(None)


@pytest.mark.parametrize("response", ["Would you like to know more? Thanks for asking!", "Hello!"])
def test_a_response_with_no_checkable_claim_is_never_passed(guard: Guard, response: str) -> None:
    result = guard.check(response, context=CONTEXT)
    assert result.hallucinated is None and result.decided is False
    assert result.decision is Decision.FLAG


def test_a_request_reads_its_source_once_and_every_copy_gets_its_own_response() -> None:
    from hallumeasure.guard.core import CheckRequest

    conversation = [
        {"role": "system", "content": f"Answer from this text. {CONTEXT}"},
        {"role": "user", "content": "How many books?"},
        {"role": "assistant", "content": FAITHFUL},
    ]
    request = CheckRequest.model_validate({"messages": conversation})
    sample = request.sample()
    assert request.sample() is sample  # the conversation read when the request was validated, not again
    assert sample.response == FAITHFUL and sample.question == "How many books?"
    # A stream's window, or a copy with another text: the same source, the new response.
    copy = request.model_copy(update={"response": WRONG_NUMBER})
    assert copy.sample().response == WRONG_NUMBER
    assert copy.sample().passages == sample.passages
    assert request.sample(response="It holds books.").response == "It holds books."
    assert request.sample().response == FAITHFUL
    # A copy with another source is read again, never given the first one's.
    other = request.model_copy(update={"messages": None, "context": "The hall has 300 seats."})
    assert other.sample().context == "The hall has 300 seats." and other.sample().passages == ()
    # Another id or model (the traffic monitor's) gives a sample of its own with the same source.
    named = request.sample(id="r1", model="guard")
    assert (named.id, named.model, named.passages) == ("r1", "guard", sample.passages)


def test_a_check_is_measured_once_and_small_ones_are_judged_in_process(guard: Guard) -> None:
    from hallumeasure.guard.core import CheckRequest, CheckSize
    from hallumeasure.pipeline.limits import response_units, source_units

    request = CheckRequest.model_validate({"response": FAITHFUL, "context": CONTEXT})
    size = guard.check_size(request.sample())
    assert size.response_units == response_units(FAITHFUL)
    assert size.source_units == source_units(request.sample())
    assert guard.is_small(size)
    assert not guard.is_small(CheckSize.of(request.sample(response="The library is open. " * 600)))
    result = asyncio.run(guard.run(request, size=size))
    assert result.decision is Decision.PASS
