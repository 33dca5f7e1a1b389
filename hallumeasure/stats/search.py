"""The one search for a sample count: the smallest n at which a rising condition holds."""

from __future__ import annotations

from collections.abc import Callable


def smallest_count(holds: Callable[[int], bool], *, start: int, limit: int) -> int | None:
    """The smallest n at which ``holds(n)``: doubling from ``start``, then bisection; None past ``limit``.

    ``holds`` must be (nearly) monotone in n: false below some count, true from it on.
    """
    high = start
    while not holds(high):
        high *= 2
        if high > limit:
            return None
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        if holds(mid):
            high = mid
        else:
            low = mid
    return high
