"""Deterministic sampling by id: a response is in a sample when a hash of its id falls below the rate.

The same ids are picked on every run, by every judge and on every machine (no random state, no order), so two
runs sampled at one rate hold the same responses and an audit between them stays paired; a higher rate keeps
every id a lower one kept.
"""

from __future__ import annotations

import hashlib

#: The hash's range: the first 8 bytes of SHA-256, as an unsigned integer.
_RANGE = 2**64


def hash_share(sample_id: str) -> float:
    """Where ``sample_id`` falls in [0, 1): the first 8 bytes of its UTF-8 SHA-256 over 2^64."""
    digest = hashlib.sha256(sample_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") / _RANGE


def in_sample(sample_id: str, rate: float | None) -> bool:
    """Whether the response with ``sample_id`` is measured at ``rate`` (None or 1: every response)."""
    return rate is None or rate >= 1 or hash_share(sample_id) < rate
