import pytest
from pydantic import ValidationError

from hallumeasure.core.labels import LABEL_DEFINITIONS, SUBTYPE_DEFINITIONS, Label, Policy, Subtype, UnevaluatablePolicy


def test_taxonomy_is_complete():
    assert len(Label) == 5 and len(Subtype) == 10
    assert set(LABEL_DEFINITIONS) == set(Label)
    assert set(SUBTYPE_DEFINITIONS) == set(Subtype)


def test_default_policy():
    policy = Policy()
    assert policy.is_unsupported(Label.PARTIALLY_SUPPORTED)
    assert not policy.is_unsupported(Label.SUPPORTED)
    assert not policy.is_evaluated(Label.UNEVALUATABLE)
    assert policy.is_hallucinated(1, 10)
    assert not policy.is_hallucinated(0, 10)
    assert not policy.is_hallucinated(0, 0)


def test_policy_variants():
    lenient = Policy(unsupported_labels=frozenset({Label.CONTRADICTED, Label.ABSENT}))
    assert not lenient.is_unsupported(Label.PARTIALLY_SUPPORTED)
    counted = Policy(unevaluatable=UnevaluatablePolicy.UNSUPPORTED)
    assert counted.is_evaluated(Label.UNEVALUATABLE) and counted.is_unsupported(Label.UNEVALUATABLE)
    threshold = Policy(min_unsupported_claims=2, min_unsupported_rate=0.5)
    assert not threshold.is_hallucinated(1, 2)
    assert not threshold.is_hallucinated(2, 5)
    assert threshold.is_hallucinated(2, 4)
    assert "at least 2" in threshold.describe()


def test_policy_rejects_supported_as_unsupported():
    with pytest.raises(ValidationError):
        Policy(unsupported_labels=frozenset({Label.SUPPORTED}))
