"""Sampling by a hash of the id (``--sample-rate``): the same ids at every call, nested rates, the share asked for."""

import hashlib

from scipy import stats

from hallumeasure.core.sampling import hash_share, in_sample


def test_the_share_is_the_ids_sha256_read_as_a_fraction():
    digest = hashlib.sha256(b"answer-17").digest()
    assert hash_share("answer-17") == int.from_bytes(digest[:8], "big") / 2**64
    assert hash_share("answer-17") == hash_share("answer-17")


def test_a_rate_keeps_its_share_of_ids_within_a_binomial_bound():
    ids = [f"q-{i}" for i in range(20_000)]
    for rate in (0.01, 0.1, 0.5):
        kept = sum(in_sample(x, rate) for x in ids)
        low, high = stats.binom.interval(0.9999, len(ids), rate)
        assert low <= kept <= high, (rate, kept)


def test_a_higher_rate_keeps_every_id_a_lower_one_kept_and_none_or_one_keeps_all():
    ids = [f"q-{i}" for i in range(2_000)]
    low = {x for x in ids if in_sample(x, 0.2)}
    high = {x for x in ids if in_sample(x, 0.6)}
    assert low < high
    assert all(in_sample(x, None) and in_sample(x, 1.0) for x in ids)
